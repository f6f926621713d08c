import { quoteShellWord } from "@deckhand/shell";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseShellScript, tokenizeShell } from "./shell-words.ts";

/** Characters that mean something to the shell, so the quoting is really exercised. */
const shellText = fc.string({
  unit: fc.oneof(
    fc.constantFrom(..." \t\n'\"\\$`*?[]#;&|<>(){}=~!-"),
    fc.constantFrom(..."abcxyz019./"),
    fc.string({ unit: "grapheme", minLength: 1, maxLength: 1 }),
  ),
  maxLength: 12,
});

/** One way of writing `text` as (part of) a shell word, chosen per segment. */
function render(text: string, style: "single" | "double" | "bare"): string {
  if (style === "single") return `'${text.replaceAll("'", `'\\''`)}'`;
  if (style === "double") return `"${text.replace(/["\\$`]/g, (character) => `\\${character}`)}"`;
  if (text === "") return "''";
  // A newline cannot be escaped with a backslash (that joins lines), so it is quoted instead.
  return [...text].map((character) => (character === "\n" ? "'\n'" : `\\${character}`)).join("");
}

const segment = fc.record({
  text: shellText,
  style: fc.constantFrom("single" as const, "double" as const, "bare" as const),
});

describe("shell word parsing (properties)", () => {
  it("quoteShellWord round-trips any list of words", () => {
    fc.assert(
      fc.property(fc.array(shellText, { minLength: 1, maxLength: 6 }), (list) => {
        const command = ["echo", ...list].map(quoteShellWord).join(" ");
        const script = parseShellScript(command);
        expect(script.unsupported).toEqual([]);
        expect(script.commands).toHaveLength(1);
        const parsed = script.commands[0]!.words;
        expect(parsed.map((word) => word.text)).toEqual(["echo", ...list]);
        expect(parsed.some((word) => word.expands || word.substitutes || word.glob)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it("words written with any mix of quoting styles parse back to their text", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(segment, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 5 }),
        (wordSegments) => {
          const command = wordSegments
            .map((parts) => parts.map((part) => render(part.text, part.style)).join(""))
            .join(" ");
          const expected = wordSegments.map((parts) => parts.map((part) => part.text).join(""));
          const { tokens, error } = tokenizeShell(`cmd ${command}`);
          expect(error).toBeNull();
          expect(tokens.every((token) => token.kind === "word")).toBe(true);
          const texts = tokens.map((token) => (token.kind === "word" ? token.word.text : ""));
          expect(texts).toEqual(["cmd", ...expected]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("never throws, whatever the text", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), shellText, fc.string({ unit: "binary" })), (text) => {
        const { tokens } = tokenizeShell(text);
        parseShellScript(text);
        for (const token of tokens) {
          expect(token.start).toBeGreaterThanOrEqual(0);
          expect(token.end).toBeLessThanOrEqual(text.length);
        }
      }),
      { numRuns: 500 },
    );
  });
});
