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

/** Pieces a shell would otherwise interpret, mixed with arbitrary text. */
const shellHostile = fc.constantFrom(
  "'",
  '"',
  "$(id)",
  "`id`",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax under test
  "${HOME}",
  "$HOME",
  "\n",
  "\r\n",
  "#",
  "\\",
  "\\n",
  "!",
  "*",
  "?",
  "[a]",
  "~",
  " ",
  "\t",
  ";",
  "&&",
  "|",
  "<",
  ">",
  "-n",
  "%s",
  "é",
  "日本語",
  "😀",
  "\u00a0",
);

const prompts = fc
  .array(fc.oneof(shellHostile, fc.string({ unit: "binary" }), fc.string({ unit: "grapheme" })), {
    maxLength: 12,
  })
  .map((pieces) => pieces.join(""))
  .filter((value) => !value.includes("\u0000"));

describe("shellQuote", () => {
  it("gives back every generated prompt byte for byte through /bin/sh", () => {
    fc.assert(
      fc.property(prompts, (prompt) => {
        expect(throughShell(shellQuote(prompt)).equals(Buffer.from(prompt, "utf8"))).toBe(true);
      }),
      { numRuns: 250 },
    );
  });

  it("gives back the empty string and lone specials", () => {
    for (const value of ["", "'", "''", "\\", "!", "*", "#", "$", "`", "\n"]) {
      expect(throughShell(shellQuote(value)).toString("utf8")).toBe(value);
    }
  });

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
