import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileGlob, matchesGlob } from "./glob.ts";
import { GlobError } from "./glob-error.ts";
import { runGlobProgram } from "./glob-match.ts";
import { compileGlobProgram, MAX_BRACE_DEPTH } from "./glob-syntax.ts";
import { referenceRegExp } from "./regexp-reference.ts";

const codePoints = (text: string) => Array.from(text).length;

/** The bound the matcher promises: each state at most once per text position. */
function expectBoundedRun(pattern: string, text: string) {
  const run = runGlobProgram(compileGlobProgram(pattern), text);
  expect(run.steps).toBeLessThanOrEqual((codePoints(text) + 1) * (codePoints(pattern) + 1));
  return run;
}

describe("matchesGlob", () => {
  it.each([
    ["github.com/acme/*", "github.com/acme/api", true],
    ["github.com/acme/*", "github.com/acme/team/api", true],
    ["github.com/*/api", "github.com/acme/api", true],
    ["github.com/acme/ap?", "github.com/acme/api", true],
    ["github.com/acme/[a-c]pi", "github.com/acme/api", true],
    ["github.com/acme/[!a-c]pi", "github.com/acme/api", false],
    ["github.com/acme/[^a-c]pi", "github.com/acme/dpi", true],
    ["github.com/{acme,corp}/*", "github.com/corp/web", true],
    ["github.com/{acme,{corp,co}rp}/*", "github.com/corp/web", true],
    ["github.com/acme/api", "github.com/acme/api-v2", false],
    ["**/api", "github.com/acme/api", true],
    ["a\\*b", "a*b", true],
    ["a\\*b", "axb", false],
    ["a.b", "axb", false],
    ["a}b,c", "a}b,c", true],
    ["{a,}b", "b", true],
    ["[-a]", "-", true],
    ["[a-]", "-", true],
    ["?", "😀", true],
    ["*", "", true],
    ["", "", true],
    ["", "a", false],
  ])("%s matches %s: %s", (pattern, text, expected) => {
    expect(matchesGlob(pattern, text)).toBe(expected);
  });

  it("rejects malformed patterns with a GlobError naming the problem", () => {
    expect(() => compileGlob("[ab")).toThrow(
      new GlobError("invalid_glob", 'invalid glob pattern "[ab": a "[" is never closed with "]"'),
    );
    expect(() => compileGlob("{a,b")).toThrow(
      'invalid glob pattern "{a,b": a "{" is never closed with "}"',
    );
    expect(() => compileGlob("[]")).toThrow("a character class [] is empty");
    expect(() => compileGlob("a\\")).toThrow("it ends with an unfinished escape \\");
    // The regular expression translation threw a SyntaxError here, which was no located error.
    expect(() => compileGlob("[z-a]")).toThrow(
      'invalid glob pattern "[z-a]": the range "z"-"a" is out of order; write the smaller character first',
    );
    expect(() => compileGlob(`${"{".repeat(MAX_BRACE_DEPTH + 1)}`)).toThrow(
      `braces nest more than ${MAX_BRACE_DEPTH} deep`,
    );
  });

  it("answers the pathological pattern at once, in a bounded number of steps", () => {
    // As a regular expression this took 24-27 s for 44 characters and doubled with each two more.
    const pattern = "*a*a*a*a*a*a*a*a*b";
    for (const length of [44, 1_000, 100_000]) {
      const text = "a".repeat(length);
      expect(matchesGlob(pattern, text)).toBe(false);
      const run = expectBoundedRun(pattern, text);
      expect(run.matched).toBe(false);
    }
    expect(matchesGlob(pattern, `${"a".repeat(44)}b`)).toBe(true);
    // Nested alternatives that would each backtrack are bounded the same way.
    expectBoundedRun("{*a,*a*}{*a,*a*}{*a,*a*}{*a,*a*}b", "a".repeat(200));
  });

  describe("against the regular expression translation it replaces", () => {
    const patternCharacters = fc.constantFrom(
      "a",
      "b",
      "-",
      "*",
      "?",
      "[",
      "]",
      "!",
      "^",
      "{",
      "}",
      ",",
      "\\",
      "😀",
    );
    const textCharacters = fc.constantFrom("a", "b", "-", "]", ",", "{", "*", "!", "😀");
    const pattern = fc.array(patternCharacters, { maxLength: 10 }).map((parts) => parts.join(""));
    const text = fc.array(textCharacters, { maxLength: 8 }).map((parts) => parts.join(""));

    it("accepts and rejects the same patterns, and matches the same texts", () => {
      fc.assert(
        fc.property(pattern, fc.array(text, { minLength: 1, maxLength: 5 }), (glob, texts) => {
          let reference: RegExp | undefined;
          try {
            reference = referenceRegExp(glob);
          } catch {
            reference = undefined;
          }
          if (reference === undefined) {
            expect(() => compileGlob(glob)).toThrow(GlobError);
            return;
          }
          const compiled = compileGlob(glob);
          for (const candidate of texts) {
            expect(compiled.matches(candidate), `${glob} on ${candidate}`).toBe(
              reference.test(candidate),
            );
          }
        }),
        { numRuns: 3_000 },
      );
    });

    it("stays within (text + 1) × (pattern + 1) steps", () => {
      fc.assert(
        fc.property(pattern, text, (glob, candidate) => {
          fc.pre(
            (() => {
              try {
                compileGlob(glob);
                return true;
              } catch {
                return false;
              }
            })(),
          );
          expectBoundedRun(glob, candidate);
        }),
        { numRuns: 2_000 },
      );
    });
  });

  it("matches any text without special characters exactly", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (literal, other) => {
        fc.pre(!/[*?[\]{}\\]/.test(literal));
        expect(matchesGlob(literal, literal)).toBe(true);
        expect(matchesGlob(literal, other)).toBe(literal === other);
      }),
    );
  });
});

describe("wildcard syntax", () => {
  it("reads only * as special", () => {
    const options = { syntax: "wildcard" } as const;
    expect(matchesGlob("*_API_KEY", "OPENAI_API_KEY", options)).toBe(true);
    expect(matchesGlob("*_API_KEY", "OPENAI_API_KEYS", options)).toBe(false);
    expect(matchesGlob("A?[B]{C,D}\\", "A?[B]{C,D}\\", options)).toBe(true);
    expect(matchesGlob("A?", "AB", options)).toBe(false);
    expect(matchesGlob("*a*a*a*a*a*a*a*a*b", "a".repeat(10_000), options)).toBe(false);
  });

  it("is the glob syntax with every other character escaped", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (pattern, text) => {
        const escaped = Array.from(pattern)
          .map((character) => (character === "*" ? "*" : `\\${character}`))
          .join("");
        expect(matchesGlob(pattern, text, { syntax: "wildcard" })).toBe(matchesGlob(escaped, text));
      }),
    );
  });
});
