import { spawnSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { quoteShellWord } from "./quote-shell-word.ts";
import { ShellError } from "./shell-error.ts";

interface ShellResult {
  status: number | null;
  stdout: Buffer;
  stderr: string;
}

function runShell(script: string): ShellResult {
  const result = spawnSync("/bin/sh", ["-c", script], { env: { PATH: process.env.PATH } });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr.toString() };
}

/**
 * How many words a real POSIX shell makes of `word` and what `printf %s` prints for it: the
 * count first, then a newline, then the bytes.
 */
function throughShell(word: string): { words: number; printed: Buffer } {
  const result = runShell(`set -- ${word}; printf '%s\\n' "$#"; printf %s ${word}`);
  expect(result.status, result.stderr).toBe(0);
  const newline = result.stdout.indexOf(0x0a);
  return {
    words: Number(result.stdout.subarray(0, newline).toString()),
    printed: result.stdout.subarray(newline + 1),
  };
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
  "=",
  "A=",
  "é",
  "日本語",
  "😀",
  "\u00a0",
);

const values = fc
  .array(fc.oneof(shellHostile, fc.string({ unit: "binary" }), fc.string({ unit: "grapheme" })), {
    maxLength: 12,
  })
  .map((pieces) => pieces.join(""))
  .filter((value) => !value.includes("\u0000"));

describe("quoteShellWord", () => {
  it("gives back every generated string byte for byte through /bin/sh, as one word", () => {
    fc.assert(
      fc.property(values, (value) => {
        const { words, printed } = throughShell(quoteShellWord(value));
        expect(words).toBe(1);
        expect(printed.equals(Buffer.from(value, "utf8"))).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it("gives back the empty string and lone specials", () => {
    for (const value of ["", "'", "''", "\\", "!", "*", "#", "$", "`", "\n", "=", "A=b"]) {
      const { words, printed } = throughShell(quoteShellWord(value));
      expect(words).toBe(1);
      expect(printed.toString("utf8")).toBe(value);
    }
  });

  it("leaves plain words bare and single-quotes everything else", () => {
    expect(quoteShellWord("--json")).toBe("--json");
    expect(quoteShellWord("src/index.ts")).toBe("src/index.ts");
    expect(quoteShellWord("user@host:8080/a,b+c%20")).toBe("user@host:8080/a,b+c%20");
    expect(quoteShellWord("")).toBe("''");
    expect(quoteShellWord("it's")).toBe(`'it'\\''s'`);
    expect(quoteShellWord("it's here")).toBe(`'it'\\''s here'`);
    expect(quoteShellWord("a b")).toBe("'a b'");
    expect(quoteShellWord("~")).toBe("'~'");
  });

  it("quotes a word that would read as an assignment, and only that use of =", () => {
    expect(quoteShellWord("a=b")).toBe("'a=b'");
    expect(quoteShellWord("PATH=/tmp")).toBe("'PATH=/tmp'");
    expect(quoteShellWord("_x1=")).toBe("'_x1='");
    expect(quoteShellWord("analytics.enabled=false")).toBe("analytics.enabled=false");
    expect(quoteShellWord("--registry=https://example.test/")).toBe(
      "--registry=https://example.test/",
    );
    expect(quoteShellWord("1a=b")).toBe("1a=b");
    expect(quoteShellWord("=b")).toBe("=b");
  });

  it("keeps an assignment-looking word a command when it comes first", () => {
    // Bare, `A=b` would be an assignment and the shell would succeed doing nothing.
    const result = runShell(`${quoteShellWord("DECKHAND_SHELL_TEST=1")}`);
    expect(result.status).toBe(127);
  });

  it("rejects a NUL character with a ShellError instead of truncating", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (before, after) => {
        expect(() => quoteShellWord(`${before}\u0000${after}`)).toThrow(ShellError);
      }),
      { numRuns: 50 },
    );
    let caught: unknown;
    try {
      quoteShellWord("a\u0000b");
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ShellError);
    expect((caught as ShellError).code).toBe("nul_character");
    expect((caught as ShellError).message).toMatch(/NUL character/);
  });
});
