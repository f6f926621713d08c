import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  capForJson,
  capOutput,
  MODEL_OUTPUT_MAX_BYTES,
  outputForModel,
  toolResultText,
} from "./model-output.ts";

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

describe("capOutput", () => {
  it("leaves output within the cap alone", () => {
    expect(capOutput("hello")).toEqual({ text: "hello", omittedBytes: 0 });
  });

  it("keeps head and tail within the cap and says how much was left out", () => {
    const text = `${"a".repeat(40_000)}${"z".repeat(40_000)}`;
    const capped = capOutput(text);
    const bytes = Buffer.byteLength(capped.text);
    expect(bytes).toBeLessThanOrEqual(MODEL_OUTPUT_MAX_BYTES);
    expect(capped.text.startsWith("aaaa")).toBe(true);
    expect(capped.text.endsWith("zzzz")).toBe(true);
    expect(capped.text).toContain(`[${capped.omittedBytes} bytes omitted]`);
    expect(capped.omittedBytes).toBeGreaterThan(80_000 - MODEL_OUTPUT_MAX_BYTES);
  });

  it("cuts on character boundaries, so the result is valid UTF-8 within the cap", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme", maxLength: 400 }),
        fc.integer({ min: 60, max: 300 }),
        (text, maxBytes) => {
          const capped = capOutput(text, maxBytes);
          const bytes = Buffer.from(capped.text, "utf8");
          expect(bytes.length).toBeLessThanOrEqual(Math.max(maxBytes, Buffer.byteLength(text)));
          expect(strictUtf8.decode(bytes)).toBe(capped.text);
          if (capped.omittedBytes > 0) expect(bytes.length).toBeLessThanOrEqual(maxBytes);
          expect(capped.text.includes("\uFFFD")).toBe(text.includes("\uFFFD"));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("outputForModel", () => {
  it("adds what the agent already omitted to what the cap omits", () => {
    const result = outputForModel("x".repeat(100), {
      original_bytes: 5000,
      retained_bytes: 100,
      omitted_bytes: 4900,
      strategy: "head_tail",
    });
    expect(result.truncated).toEqual({ original_bytes: 5000, omitted_bytes: 4900 });
    expect(outputForModel("short", null).truncated).toBeNull();
  });
});

describe("toolResultText", () => {
  const nasty = '"\\\n\t\u0001\u001b[0m\u2028é';

  it("keeps a whole result under 32 KiB of valid UTF-8 when escaping would push it over", () => {
    const output = capOutput(nasty.repeat(20_000)).text;
    expect(Buffer.byteLength(JSON.stringify(output))).toBeGreaterThan(1.5 * MODEL_OUTPUT_MAX_BYTES);
    const result = { success: false, output, exit_code: 1, truncated: null, note: null };
    const text = toolResultText(result);
    const bytes = Buffer.from(text, "utf8");
    expect(bytes.length).toBeLessThanOrEqual(MODEL_OUTPUT_MAX_BYTES);
    expect(strictUtf8.decode(bytes)).toBe(text);
    const parsed = JSON.parse(text) as {
      output: string;
      truncated: { original_bytes: number; omitted_bytes: number };
    };
    expect(parsed).toMatchObject({ success: false, exit_code: 1, note: null });
    expect(parsed.output.startsWith(nasty)).toBe(true);
    expect(parsed.output.endsWith(output.slice(-nasty.length))).toBe(true);
    expect(parsed.output).toMatch(/bytes omitted/);
    expect(parsed.truncated.original_bytes).toBe(Buffer.byteLength(output));
    expect(parsed.truncated.omitted_bytes).toBeGreaterThan(0);
    // What the model is told was left out is what is missing.
    const kept = Buffer.byteLength(
      parsed.output.replace(/\n\.\.\. \[\d+ bytes omitted\] \.\.\.\n/, ""),
    );
    expect(kept + parsed.truncated.omitted_bytes).toBe(parsed.truncated.original_bytes);
  });

  it("adds to what was already omitted, and leaves a result that fits as its JSON", () => {
    const small = { output: "ok", truncated: null };
    expect(toolResultText(small)).toBe(JSON.stringify(small));
    const text = toolResultText({
      output: "\u0001".repeat(30_000),
      truncated: { original_bytes: 90_000, omitted_bytes: 60_000 },
    });
    const parsed = JSON.parse(text) as {
      truncated: { original_bytes: number; omitted_bytes: number };
    };
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MODEL_OUTPUT_MAX_BYTES);
    expect(parsed.truncated.original_bytes).toBe(90_000);
    expect(parsed.truncated.omitted_bytes).toBeGreaterThan(60_000 + 20_000);
  });

  it("cuts a result without an output field as text, still valid UTF-8 within the cap", () => {
    const text = toolResultText({ processes: Array.from({ length: 5000 }, (_, i) => `"é${i}"\n`) });
    const bytes = Buffer.from(text, "utf8");
    expect(bytes.length).toBeLessThanOrEqual(MODEL_OUTPUT_MAX_BYTES);
    expect(strictUtf8.decode(bytes)).toBe(text);
    expect(text).toMatch(/bytes omitted/);
  });

  it("capForJson fits any text's JSON escape within the limit", () => {
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.constantFrom("a", '"', "\\", "\n", "\u0001", "é", "😀"),
          maxLength: 2000,
        }),
        fc.integer({ min: 80, max: 1000 }),
        (text, limit) => {
          const capped = capForJson(text, limit);
          const size = Buffer.byteLength(JSON.stringify(capped.text)) - 2;
          if (capped.omittedBytes > 0) expect(size).toBeLessThanOrEqual(limit);
          else expect(capped.text).toBe(text);
        },
      ),
      { numRuns: 200 },
    );
  });
});
