// The glob matcher batch specs used before this package: patterns translated into JavaScript
// regular expressions. Kept only as the reference the property tests compare the linear matcher
// with on small inputs, where backtracking cannot blow up. Not exported from the package.

function escapeForRegExp(character: string): string {
  return /[\\^$.*+?()[\]{}|/]/.test(character) ? `\\${character}` : character;
}

function escapeInClass(character: string): string {
  return /[\\\][^-]/.test(character) ? `\\${character}` : character;
}

function translateClass(characters: readonly string[], start: number): [string, number] {
  let cursor = start;
  let negate = false;
  if (characters[cursor] === "!" || characters[cursor] === "^") {
    negate = true;
    cursor += 1;
  }
  let set = "";
  for (; cursor < characters.length; cursor += 1) {
    const member = characters[cursor]!;
    if (member === "]") {
      if (set === "") throw new Error("empty class");
      return [negate ? `[^${set}]` : `[${set}]`, cursor];
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
  throw new Error("unclosed class");
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
        if (next === undefined) throw new Error("unfinished escape");
        output += escapeForRegExp(next);
        index += 1;
        break;
      }
      case "[": {
        const [set, end] = translateClass(characters, index + 1);
        output += set;
        index = end;
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
  if (braceDepth > 0) throw new Error("unclosed brace");
  return output;
}

/** The old translation; throws for a pattern it could not compile (a SyntaxError included). */
export function referenceRegExp(pattern: string): RegExp {
  return new RegExp(`^${translate(pattern)}$`, "u");
}
