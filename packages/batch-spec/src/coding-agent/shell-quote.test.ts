import { spawnSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BatchSpecError } from "../batch-spec-error.ts";
import { shellQuote, shellValue } from "./shell-quote.ts";

/** What a real POSIX shell makes of `printf %s <word>`, as bytes. */
function throughShell(word: string, environment: NodeJS.ProcessEnv = {}): Buffer {
  const result = spawnSync("/bin/sh", ["-c", `printf %s ${word}`], {
    env: { PATH: process.env.PATH, ...environment },
  });
  expect(result.status, result.stderr.toString()).toBe(0);
  return result.stdout;
}

describe("shellQuote", () => {
  // That every string comes back byte for byte through /bin/sh, as one word, is
  // @deckhand/shell's property test (packages/shell/src/quote-shell-word.test.ts); this wrapper
  // only adds batch-spec's error.
  it("leaves plain words bare and quotes everything else", () => {
    expect(shellQuote("--json")).toBe("--json");
    expect(shellQuote("analytics.enabled=false")).toBe("analytics.enabled=false");
    expect(shellQuote("")).toBe("''");
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
    expect(shellQuote("a b")).toBe("'a b'");
  });

  it("rejects a NUL character with an error instead of truncating", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (before, after) => {
        expect(() => shellQuote(`${before}\u0000${after}`)).toThrow(BatchSpecError);
      }),
      { numRuns: 50 },
    );
    expect(() => shellQuote("a\u0000b")).toThrow(/NUL character/);
    expect(() => shellQuote("a\u0000b")).toThrow(
      expect.objectContaining({ code: "shell_nul_character" }),
    );
  });
});

describe("shellValue", () => {
  it("expands environment references at run time and keeps literals literal", () => {
    const word = shellValue(["Job: '$x' ", { env: "JOB" }, "!"]);
    expect(throughShell(word, { JOB: "job $(id) 1" }).toString("utf8")).toBe(
      "Job: '$x' job $(id) 1!",
    );
  });

  it("rejects an invalid variable name", () => {
    expect(() => shellValue([{ env: "NOT-A-NAME" }])).toThrow(
      /not a valid environment variable name/,
    );
  });
});
