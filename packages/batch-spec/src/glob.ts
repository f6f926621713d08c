// Glob patterns as batch specs use them (`matches`, `published` rules, `workspaces[].in`). The
// syntax follows gobwas/glob without separators, which is what Sourcegraph compiles these
// patterns with, so `*` also matches `/`: `*` and `**` any run of characters, `?` one character,
// `[abc]`, `[a-z]`, `[!abc]` one character of (not of) a set, `{a,b}` alternatives, `\` escapes.
import { BatchSpecError } from "./batch-spec-error.ts";

const compiled = new Map<string, RegExp>();
const cacheLimit = 1_000;

function escapeForRegExp(character: string): string {
  return /[\\^$.*+?()[\]{}|/]/.test(character) ? `\\${character}` : character;
}

function escapeInClass(character: string): string {
  return /[\\\][^-]/.test(character) ? `\\${character}` : character;
}

function invalid(pattern: string, reason: string): BatchSpecError {
  return new BatchSpecError("invalid_glob", `invalid glob pattern "${pattern}": ${reason}`);
}

function translate(pattern: string): string {
  let output = "";
  let braceDepth = 0;
  const characters = Array.from(pattern);
  for (let index = 0; index < characters.length; index += 1) {
    const character = characters[index]!;
    switch (character) {
      case "*":
        while (characters[index + 1] === "*") index += 1;
        output += "[^]*";
        break;
      case "?":
        output += "[^]";
        break;
      case "\\": {
        const next = characters[index + 1];
        if (next === undefined) throw invalid(pattern, "it ends with an unfinished escape \\");
        output += escapeForRegExp(next);
        index += 1;
        break;
      }
      case "[": {
        let cursor = index + 1;
        let negate = false;
        if (characters[cursor] === "!" || characters[cursor] === "^") {
          negate = true;
          cursor += 1;
        }
        let set = "";
        let closed = false;
        for (; cursor < characters.length; cursor += 1) {
          const member = characters[cursor]!;
          if (member === "]") {
            closed = true;
            break;
          }
          if (member === "\\" && cursor + 1 < characters.length) {
            cursor += 1;
            set += escapeInClass(characters[cursor]!);
            continue;
          }
          if (member === "-" && set !== "" && characters[cursor + 1] !== "]") {
            set += "-";
            continue;
          }
          set += escapeInClass(member);
        }
        if (!closed) throw invalid(pattern, 'a "[" is never closed with "]"');
        if (set === "") throw invalid(pattern, "a character class [] is empty");
        output += negate ? `[^${set}]` : `[${set}]`;
        index = cursor;
        break;
      }
      case "{":
        braceDepth += 1;
        output += "(?:";
        break;
      case "}":
        if (braceDepth === 0) {
          output += "\\}";
          break;
        }
        braceDepth -= 1;
        output += ")";
        break;
      case ",":
        output += braceDepth > 0 ? "|" : ",";
        break;
      default:
        output += escapeForRegExp(character);
    }
  }
  if (braceDepth > 0) throw invalid(pattern, 'a "{" is never closed with "}"');
  return output;
}

/** Compiles a glob once; throws `BatchSpecError` `invalid_glob` for a malformed pattern. */
export function compileGlob(pattern: string): RegExp {
  let expression = compiled.get(pattern);
  if (expression === undefined) {
    expression = new RegExp(`^${translate(pattern)}$`, "u");
    if (compiled.size >= cacheLimit) compiled.clear();
    compiled.set(pattern, expression);
  }
  return expression;
}

/** True when `text` matches the whole glob `pattern`. */
export function matchesGlob(pattern: string, text: string): boolean {
  return compileGlob(pattern).test(text);
}
