// Glob patterns parsed into a small program for `glob-match.ts`. Two syntaxes:
//
// - "glob": gobwas/glob without separators, which is what Sourcegraph compiles batch spec
//   patterns with, so `*` also matches `/`: `*` and `**` any run of characters, `?` one
//   character, `[abc]`, `[a-z]`, `[!abc]` (or `[^abc]`) one character of (not of) a set,
//   `{a,b}` alternatives (nested too), `\` escapes the next character. A lone `}` and a `,`
//   outside braces are literal.
// - "wildcard": `*` is any run of characters and every other character is itself (environment
//   variable deny lists, where `[` or `?` mean nothing).
//
// Characters are Unicode code points, as a JavaScript `u` regular expression reads them.
import { GlobError } from "./glob-error.ts";

export type GlobSyntax = "glob" | "wildcard";

/** One code point test. */
export type CharacterTest =
  | { kind: "literal"; codePoint: number }
  | { kind: "any" }
  | { kind: "class"; negate: boolean; ranges: readonly (readonly [number, number])[] };

/**
 * One state of the program. `character` consumes one code point that passes its test; `star`
 * consumes any code point and stays, or moves on without consuming; `split` moves on to every
 * branch without consuming; `match` accepts when the text is used up.
 */
export type Instruction =
  | { kind: "character"; test: CharacterTest; next: number }
  | { kind: "star"; next: number }
  | { kind: "split"; branches: number[] }
  | { kind: "match" };

/** A compiled pattern: `start` is the first state; every state but `match` stands for a pattern code point. */
export interface GlobProgram {
  instructions: Instruction[];
  start: number;
}

type Node =
  | { kind: "character"; test: CharacterTest }
  | { kind: "star" }
  | { kind: "alternatives"; branches: Node[][] };

function invalid(pattern: string, reason: string): GlobError {
  return new GlobError("invalid_glob", `invalid glob pattern "${pattern}": ${reason}`);
}

/** A member of a `[...]` set as written: `-` unescaped is a range operator candidate. */
type ClassToken = { dash: true } | { dash: false; codePoint: number };

function describeCodePoint(codePoint: number): string {
  return JSON.stringify(String.fromCodePoint(codePoint));
}

/**
 * The ranges of a set, read as ECMAScript reads `[a-z0-9-]` in a `u` expression: an atom, a
 * dash and an atom form a range; a dash that cannot is itself a member. A `-` first or last in
 * the set, or escaped, is always a member.
 */
function classRanges(pattern: string, tokens: readonly ClassToken[]): [number, number][] {
  const ranges: [number, number][] = [];
  const codePointOf = (token: ClassToken) => (token.dash ? 0x2d : token.codePoint);
  let index = 0;
  while (index < tokens.length) {
    const from = codePointOf(tokens[index]!);
    if (tokens[index + 1]?.dash === true && index + 2 < tokens.length) {
      const to = codePointOf(tokens[index + 2]!);
      if (from > to) {
        throw invalid(
          pattern,
          `the range ${describeCodePoint(from)}-${describeCodePoint(to)} is out of order; write the smaller character first`,
        );
      }
      ranges.push([from, to]);
      index += 3;
    } else {
      ranges.push([from, from]);
      index += 1;
    }
  }
  return ranges;
}

/** Reads the set starting after `[` at `index`; answers the test and the index of its `]`. */
function readClass(
  pattern: string,
  characters: readonly string[],
  index: number,
): { test: CharacterTest; end: number } {
  let cursor = index;
  let negate = false;
  if (characters[cursor] === "!" || characters[cursor] === "^") {
    negate = true;
    cursor += 1;
  }
  const tokens: ClassToken[] = [];
  for (; cursor < characters.length; cursor += 1) {
    const member = characters[cursor]!;
    if (member === "]") {
      if (tokens.length === 0) throw invalid(pattern, "a character class [] is empty");
      return { test: { kind: "class", negate, ranges: classRanges(pattern, tokens) }, end: cursor };
    }
    if (member === "\\" && cursor + 1 < characters.length) {
      cursor += 1;
      tokens.push({ dash: false, codePoint: characters[cursor]!.codePointAt(0)! });
      continue;
    }
    // A `-` first in the set, or right before its `]`, is a member, never a range operator.
    const isOperator = member === "-" && tokens.length > 0 && characters[cursor + 1] !== "]";
    tokens.push(isOperator ? { dash: true } : { dash: false, codePoint: member.codePointAt(0)! });
  }
  throw invalid(pattern, 'a "[" is never closed with "]"');
}

function literal(character: string): Node {
  return { kind: "character", test: { kind: "literal", codePoint: character.codePointAt(0)! } };
}

/**
 * How deep `{` may nest. Compiling recurses once per level; no real pattern comes near this, and
 * a pattern of thousands of nested braces is refused rather than allowed to exhaust the stack.
 */
export const MAX_BRACE_DEPTH = 100;

/** The pattern as a tree. */
function parse(pattern: string, syntax: GlobSyntax): Node[] {
  const characters = Array.from(pattern);
  // The innermost open `{` is last; each holds its finished branches and the current one.
  const groups: { branches: Node[][]; current: Node[] }[] = [];
  const top: Node[] = [];
  const current = () => groups.at(-1)?.current ?? top;
  for (let index = 0; index < characters.length; index += 1) {
    const character = characters[index]!;
    const sequence = current();
    if (syntax === "wildcard") {
      if (character !== "*") sequence.push(literal(character));
      else if (sequence.at(-1)?.kind !== "star") sequence.push({ kind: "star" });
      continue;
    }
    switch (character) {
      case "*":
        // A run of stars is one star: `**` means what `*` means without separators.
        if (sequence.at(-1)?.kind !== "star") sequence.push({ kind: "star" });
        while (characters[index + 1] === "*") index += 1;
        break;
      case "?":
        sequence.push({ kind: "character", test: { kind: "any" } });
        break;
      case "\\": {
        const next = characters[index + 1];
        if (next === undefined) throw invalid(pattern, "it ends with an unfinished escape \\");
        sequence.push(literal(next));
        index += 1;
        break;
      }
      case "[": {
        const { test, end } = readClass(pattern, characters, index + 1);
        sequence.push({ kind: "character", test });
        index = end;
        break;
      }
      case "{":
        if (groups.length >= MAX_BRACE_DEPTH) {
          throw invalid(pattern, `braces nest more than ${MAX_BRACE_DEPTH} deep; flatten them`);
        }
        groups.push({ branches: [], current: [] });
        break;
      case ",": {
        const group = groups.at(-1);
        if (group === undefined) {
          sequence.push(literal(character));
        } else {
          group.branches.push(group.current);
          group.current = [];
        }
        break;
      }
      case "}": {
        const group = groups.pop();
        if (group === undefined) {
          sequence.push(literal(character));
        } else {
          current().push({ kind: "alternatives", branches: [...group.branches, group.current] });
        }
        break;
      }
      default:
        sequence.push(literal(character));
    }
  }
  if (groups.length > 0) throw invalid(pattern, 'a "{" is never closed with "}"');
  return top;
}

/**
 * Emits the states of `sequence`, last node first, each pointing at what follows it; answers
 * the first. Recurses once per level of braces (at most MAX_BRACE_DEPTH).
 */
function emitSequence(
  instructions: Instruction[],
  sequence: readonly Node[],
  next: number,
): number {
  let start = next;
  for (let index = sequence.length - 1; index >= 0; index -= 1) {
    const node = sequence[index]!;
    switch (node.kind) {
      case "character":
        instructions.push({ kind: "character", test: node.test, next: start });
        break;
      case "star":
        instructions.push({ kind: "star", next: start });
        break;
      case "alternatives": {
        const following = start;
        const branches = node.branches.map((branch) =>
          emitSequence(instructions, branch, following),
        );
        instructions.push({ kind: "split", branches });
        break;
      }
    }
    start = instructions.length - 1;
  }
  return start;
}

/**
 * Compiles a pattern; throws `GlobError` `invalid_glob` for a malformed one. The program has at
 * most one state per pattern code point, plus the final `match`.
 */
export function compileGlobProgram(pattern: string, syntax: GlobSyntax = "glob"): GlobProgram {
  const tree = parse(pattern, syntax);
  const instructions: Instruction[] = [{ kind: "match" }];
  const start = emitSequence(instructions, tree, 0);
  return { instructions, start };
}
