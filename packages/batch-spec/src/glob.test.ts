import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BatchSpecError } from "./batch-spec-error.ts";
import { compileGlob, matchesGlob } from "./glob.ts";

describe("matchesGlob", () => {
  it.each([
    ["github.com/acme/*", "github.com/acme/api", true],
    ["github.com/acme/*", "github.com/acme/team/api", true],
    ["github.com/*/api", "github.com/acme/api", true],
    ["github.com/acme/ap?", "github.com/acme/api", true],
    ["github.com/acme/[a-c]pi", "github.com/acme/api", true],
    ["github.com/acme/[!a-c]pi", "github.com/acme/api", false],
    ["github.com/{acme,corp}/*", "github.com/corp/web", true],
    ["github.com/acme/api", "github.com/acme/api-v2", false],
    ["a\\*b", "a*b", true],
    ["a\\*b", "axb", false],
    ["a.b", "axb", false],
    ["*", "", true],
  ])("%s matches %s: %s", (pattern, text, expected) => {
    expect(matchesGlob(pattern, text)).toBe(expected);
  });

  it("rejects malformed patterns with a BatchSpecError naming the problem", () => {
    expect(() => compileGlob("[ab")).toThrow(
      new BatchSpecError(
        "invalid_glob",
        'invalid glob pattern "[ab": a "[" is never closed with "]"',
      ),
    );
    expect(() => compileGlob("{a,b")).toThrow(
      'invalid glob pattern "{a,b": a "{" is never closed with "}"',
    );
  });

  it("matches any text without special characters exactly", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (pattern, other) => {
        fc.pre(!/[*?[\]{}\\]/.test(pattern));
        expect(matchesGlob(pattern, pattern)).toBe(true);
        expect(matchesGlob(pattern, other)).toBe(pattern === other);
      }),
    );
  });

  it("matches any text with a lone *, and a prefix with prefix*", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (prefix, rest) => {
        fc.pre(!/[*?[\]{}\\,]/.test(prefix));
        expect(matchesGlob("*", rest)).toBe(true);
        expect(matchesGlob(`${prefix}*`, `${prefix}${rest}`)).toBe(true);
      }),
    );
  });
});
