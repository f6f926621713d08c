import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { capOutput, MODEL_OUTPUT_MAX_BYTES, outputForModel } from "./model-output.ts";

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
