import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cutAtCharacterBoundary } from "./read-lines.ts";

describe("cutAtCharacterBoundary", () => {
  it("returns the longest prefix within the limit that is whole UTF-8 characters", () => {
    const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 40 }), fc.nat(200), (text, limit) => {
        const bytes = Buffer.from(text);
        const cut = cutAtCharacterBoundary(bytes, limit);
        expect(cut.length).toBeLessThanOrEqual(limit);
        expect(cut.length).toBeGreaterThanOrEqual(Math.min(bytes.length, limit) - 3);
        expect(text.startsWith(strictUtf8.decode(cut))).toBe(true);
      }),
    );
  });

  it("keeps a buffer that already fits", () => {
    expect(cutAtCharacterBoundary(Buffer.from("abc"), 3).toString()).toBe("abc");
  });
});
