import { describe, expect, it } from "vitest";
import { HeadTailBuffer } from "./head-tail-buffer.ts";

describe("HeadTailBuffer.readSince", () => {
  it("reads everything from cursor 0 and nothing more at nextCursor", () => {
    const buffer = new HeadTailBuffer();
    buffer.write("one\ntwo\n");
    expect(buffer.readSince(0)).toEqual({ text: "one\ntwo\n", nextCursor: 8, missedBytes: 0 });
    expect(buffer.readSince(8)).toEqual({ text: "", nextCursor: 8, missedBytes: 0 });
  });

  it("returns only what arrived after the cursor, read after read", () => {
    const buffer = new HeadTailBuffer();
    buffer.write("a");
    const first = buffer.readSince(0);
    buffer.write("bc");
    const second = buffer.readSince(first.nextCursor);
    buffer.write("d\n");
    const third = buffer.readSince(second.nextCursor);
    expect([first, second, third]).toEqual([
      { text: "a", nextCursor: 1, missedBytes: 0 },
      { text: "bc", nextCursor: 3, missedBytes: 0 },
      { text: "d\n", nextCursor: 5, missedBytes: 0 },
    ]);
  });

  it("reports bytes that left the window as missedBytes and goes on from the tail", () => {
    const buffer = new HeadTailBuffer({ headBytes: 10, tailBytes: 10 });
    buffer.write("0123456789");
    const head = buffer.readSince(0);
    buffer.write("x".repeat(80));
    buffer.write("ABCDEFGHIJ");
    const afterGap = buffer.readSince(head.nextCursor);
    buffer.write("KLMNO");
    const upToDate = buffer.readSince(afterGap.nextCursor);
    const slowReader = buffer.readSince(50);
    expect([head, afterGap, upToDate, slowReader]).toEqual([
      { text: "0123456789", nextCursor: 10, missedBytes: 0 },
      { text: "ABCDEFGHIJ", nextCursor: 100, missedBytes: 80 },
      { text: "KLMNO", nextCursor: 105, missedBytes: 0 },
      { text: "FGHIJKLMNO", nextCursor: 105, missedBytes: 45 },
    ]);
  });

  it("stops a read at the head's end instead of silently crossing the gap", () => {
    const buffer = new HeadTailBuffer({ headBytes: 4, tailBytes: 4 });
    buffer.write("headMIDDLEtail");
    expect(buffer.readSince(1)).toEqual({ text: "ead", nextCursor: 4, missedBytes: 0 });
    expect(buffer.readSince(4)).toEqual({ text: "tail", nextCursor: 14, missedBytes: 6 });
  });

  it("returns at most limit bytes and never splits a character", () => {
    const buffer = new HeadTailBuffer();
    buffer.write("a€b");
    expect(buffer.readSince(0, 2)).toEqual({ text: "a", nextCursor: 1, missedBytes: 0 });
    expect(buffer.readSince(0, 4)).toEqual({ text: "a€", nextCursor: 4, missedBytes: 0 });
    expect(buffer.readSince(4, 100)).toEqual({ text: "b", nextCursor: 5, missedBytes: 0 });
  });

  it("returns one whole character when limit is smaller than it", () => {
    const buffer = new HeadTailBuffer();
    buffer.write("😀x");
    expect(buffer.readSince(0, 1)).toEqual({ text: "😀", nextCursor: 4, missedBytes: 0 });
  });

  it("moves a cursor that points inside a character to its end", () => {
    const buffer = new HeadTailBuffer();
    buffer.write("€x");
    expect(buffer.readSince(1)).toEqual({ text: "x", nextCursor: 4, missedBytes: 0 });
  });

  it("does not return half a character that is still being written", () => {
    const buffer = new HeadTailBuffer();
    buffer.write(new Uint8Array([0x61, 0xf0, 0x9f]));
    expect(buffer.readSince(0)).toEqual({ text: "a", nextCursor: 1, missedBytes: 0 });
    buffer.write(new Uint8Array([0x98, 0x80]));
    expect(buffer.readSince(1)).toEqual({ text: "😀", nextCursor: 5, missedBytes: 0 });
  });

  it("answers a cursor past the end with empty text and the current end", () => {
    const buffer = new HeadTailBuffer();
    buffer.write("abc");
    expect(buffer.readSince(1000)).toEqual({ text: "", nextCursor: 3, missedBytes: 0 });
  });

  it("rejects a negative, fractional or non-numeric cursor with invalid_cursor", () => {
    const buffer = new HeadTailBuffer();
    for (const cursor of [
      -1,
      1.5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      "3" as unknown as number,
    ]) {
      expect(() => buffer.readSince(cursor)).toThrow(
        expect.objectContaining({ name: "HeadTailError", code: "invalid_cursor" }),
      );
    }
  });

  it("rejects a limit that is not a positive integer with invalid_limit", () => {
    const buffer = new HeadTailBuffer();
    for (const limit of [0, -1, 2.5, Number.NaN]) {
      expect(() => buffer.readSince(0, limit)).toThrow(
        expect.objectContaining({ name: "HeadTailError", code: "invalid_limit" }),
      );
    }
  });
});
