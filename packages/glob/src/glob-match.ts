// Runs a compiled glob over a text by keeping the set of states the pattern can be in after each
// code point (Thompson's construction), never by backtracking. Each state is visited at most once
// per text position, so a match costs at most (text code points + 1) × (states) visits, with
// states at most pattern code points + 1: `*a*a*a*a*a*a*a*a*b` against 44 `a`s is ~800 visits,
// where a backtracking regular expression takes tens of seconds.
import type { CharacterTest, GlobProgram } from "./glob-syntax.ts";

function passes(test: CharacterTest, codePoint: number): boolean {
  switch (test.kind) {
    case "literal":
      return test.codePoint === codePoint;
    case "any":
      return true;
    case "class": {
      const inSet = test.ranges.some(([from, to]) => codePoint >= from && codePoint <= to);
      return inSet !== test.negate;
    }
  }
}

export interface GlobRun {
  matched: boolean;
  /** States visited: what the bound above is about. */
  steps: number;
}

/** Matches the whole `text` against `program`, counting the states it visits. */
export function runGlobProgram(program: GlobProgram, text: string): GlobRun {
  const { instructions } = program;
  // The position each state was last added at: a state is added once per position.
  const seenAt = new Int32Array(instructions.length).fill(-1);
  let steps = 0;
  let position = 0;
  let consuming: number[] = [];
  let accepting = false;
  const pending: number[] = [];

  /** Adds `state` and every state reachable from it without consuming, at `position`. */
  const add = (state: number, into: number[]) => {
    pending.push(state);
    while (pending.length > 0) {
      const current = pending.pop()!;
      if (seenAt[current] === position) continue;
      seenAt[current] = position;
      steps += 1;
      const instruction = instructions[current]!;
      switch (instruction.kind) {
        case "match":
          accepting = true;
          break;
        case "character":
          into.push(current);
          break;
        case "star":
          into.push(current);
          pending.push(instruction.next);
          break;
        case "split":
          for (let branch = instruction.branches.length - 1; branch >= 0; branch -= 1) {
            pending.push(instruction.branches[branch]!);
          }
          break;
      }
    }
  };

  add(program.start, consuming);
  for (const character of text) {
    if (consuming.length === 0) return { matched: false, steps };
    const codePoint = character.codePointAt(0)!;
    position += 1;
    accepting = false;
    const next: number[] = [];
    for (const state of consuming) {
      const instruction = instructions[state]!;
      if (instruction.kind === "star") add(state, next);
      else if (instruction.kind === "character" && passes(instruction.test, codePoint)) {
        add(instruction.next, next);
      }
    }
    consuming = next;
  }
  return { matched: accepting, steps };
}
