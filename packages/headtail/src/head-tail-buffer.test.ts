import { describe, expect, it } from "vitest";
import { HEAD_TAIL_DEFAULTS, HeadTailBuffer, LINE_TRUNCATION_SUFFIX } from "./head-tail-buffer.ts";
import { HeadTailError } from "./head-tail-error.ts";

const SUFFIX = LINE_TRUNCATION_SUFFIX;

describe("HeadTailBuffer snapshot", () => {
  it("returns empty text and no truncation when nothing was written", () => {
    const buffer = new HeadTailBuffer();
    expect(buffer.snapshot()).toEqual({ text: "", truncation: null });
    expect(buffer.totalBytes).toBe(0);
    expect(buffer.streamBytes).toBe(0);
  });

  it("returns small output whole with no truncation", () => {
    const buffer = new HeadTailBuffer();
    buffer.write("hello world\n");
    expect(buffer.snapshot()).toEqual({ text: "hello world\n", truncation: null });
    expect(buffer.totalBytes).toBe(12);
    expect(buffer.streamBytes).toBe(12);
  });

  it("returns output of exactly headBytes whole", () => {
    const line = `${"x".repeat(79)}\n`;
    const data = line.repeat(204) + "y".repeat(HEAD_TAIL_DEFAULTS.headBytes - 204 * 80);
    const buffer = new HeadTailBuffer();
    buffer.write(data);
    expect(data.length).toBe(HEAD_TAIL_DEFAULTS.headBytes);
    expect(buffer.snapshot()).toEqual({ text: data, truncation: null });
  });

  it("joins a contiguous head and tail with nothing in between", () => {
    const buffer = new HeadTailBuffer({ headBytes: 10, tailBytes: 10 });
    buffer.write("0123456789abcdefghij");
    expect(buffer.snapshot()).toEqual({ text: "0123456789abcdefghij", truncation: null });
  });

  it("keeps the first headBytes and last tailBytes around a marker line with the exact omitted count", () => {
    const buffer = new HeadTailBuffer({ headBytes: 10, tailBytes: 10 });
    buffer.write("A".repeat(50) + "Z".repeat(50));
    expect(buffer.snapshot()).toEqual({
      text: "AAAAAAAAAA\n... [80 bytes omitted] ...\nZZZZZZZZZZ",
      truncation: {
        original_bytes: 100,
        retained_bytes: 20,
        omitted_bytes: 80,
        strategy: "head_tail",
      },
    });
  });

  it("does not add a blank line before the marker when the head ends a line", () => {
    const buffer = new HeadTailBuffer({ headBytes: 6, tailBytes: 6 });
    buffer.write("first\nsecond\nthird\nlast.\n");
    expect(buffer.snapshot().text).toBe("first\n... [13 bytes omitted] ...\nlast.\n");
  });

  it("says byte, not bytes, when a single byte is omitted", () => {
    const buffer = new HeadTailBuffer({ headBytes: 2, tailBytes: 2 });
    buffer.write("ab-cd");
    expect(buffer.snapshot().text).toBe("ab\n... [1 byte omitted] ...\ncd");
  });

  it("keeps only the last tailBytes when the tail ring wraps around several times", () => {
    const buffer = new HeadTailBuffer({ headBytes: 5, tailBytes: 10 });
    for (const chunk of ["HEADD", "0123456789", "abcdefghij", "ABCDE"]) buffer.write(chunk);
    expect(buffer.snapshot()).toEqual({
      text: "HEADD\n... [15 bytes omitted] ...\nfghijABCDE",
      truncation: {
        original_bytes: 30,
        retained_bytes: 15,
        omitted_bytes: 15,
        strategy: "head_tail",
      },
    });
  });

  it("stays bounded when many megabytes are written", () => {
    const buffer = new HeadTailBuffer();
    const line = Buffer.from(`${"x".repeat(100)}\n`);
    let written = 0;
    while (written < 8 * 1024 * 1024) {
      buffer.write(line);
      written += line.length;
    }
    const { text, truncation } = buffer.snapshot();
    expect(buffer.totalBytes).toBe(written);
    expect(truncation?.original_bytes).toBe(written);
    expect(truncation?.retained_bytes).toBe(16_384 + 16_384);
    expect(truncation?.omitted_bytes).toBe(written - 32_768);
    expect(text.length).toBeLessThan(32_768 + 64);
    expect(text).toContain(`\n... [${written - 32_768} bytes omitted] ...\n`);
  });

  it("returns a copy: changing a written Uint8Array afterwards changes nothing", () => {
    const buffer = new HeadTailBuffer({ headBytes: 4, tailBytes: 4 });
    const head = new TextEncoder().encode("original");
    const tail = new TextEncoder().encode("-and-more");
    buffer.write(head);
    buffer.write(tail);
    head.fill(0x58);
    tail.fill(0x58);
    const first = buffer.snapshot();
    expect(first.text).toBe("orig\n... [9 bytes omitted] ...\nmore");
    expect(buffer.snapshot()).toEqual(first);
  });

  it("accepts strings, Buffers and Uint8Array views alike", () => {
    const buffer = new HeadTailBuffer();
    const backing = new Uint8Array([0x21, 0x63, 0x64, 0x21]);
    buffer.write("ab");
    buffer.write(new Uint8Array(backing.buffer, 1, 2));
    buffer.write(Buffer.from("ef"));
    buffer.write("");
    buffer.write(new Uint8Array(0));
    expect(buffer.snapshot().text).toBe("abcdef");
    expect(buffer.totalBytes).toBe(6);
  });

  it("keeps every line whole when many async writers interleave", async () => {
    const buffer = new HeadTailBuffer({ headBytes: 1 << 20, tailBytes: 1 << 20 });
    const writers = Array.from({ length: 10 }, async (_, writer) => {
      for (let index = 0; index < 1000; index += 1) {
        buffer.write(`writer-${writer}: line ${index}\n`);
        if (index % 7 === writer % 7) await new Promise((resolve) => setImmediate(resolve));
        else await Promise.resolve();
      }
    });
    await Promise.all(writers);
    const lines = buffer.snapshot().text.split("\n").slice(0, -1);
    expect(lines).toHaveLength(10_000);
    for (let writer = 0; writer < 10; writer += 1) {
      const own = lines.filter((line) => line.startsWith(`writer-${writer}: `));
      expect(own).toEqual(
        Array.from({ length: 1000 }, (_, index) => `writer-${writer}: line ${index}`),
      );
    }
    expect(new Set(lines.map((line) => line.slice(0, 8))).size).toBe(10);
    expect(buffer.totalBytes).toBe(buffer.streamBytes);
  });

  it("ignores writes after close and closes only once", () => {
    const buffer = new HeadTailBuffer();
    buffer.write("before\n");
    buffer.close();
    buffer.close();
    buffer.write("after\n");
    expect(buffer.closed).toBe(true);
    expect(buffer.snapshot()).toEqual({ text: "before\n", truncation: null });
    expect(buffer.totalBytes).toBe(7);
  });
});

describe("HeadTailBuffer line cutting", () => {
  it("cuts a line longer than maxLineBytes there and ends it with the suffix", () => {
    const buffer = new HeadTailBuffer();
    buffer.write(`${"m".repeat(2048 + 500)}\n`);
    expect(SUFFIX).toBe(" ... [line truncated]");
    expect(buffer.snapshot()).toEqual({
      text: `${"m".repeat(2048)}${SUFFIX}\n`,
      truncation: {
        original_bytes: 2549,
        retained_bytes: 2049,
        omitted_bytes: 500,
        strategy: "head_tail",
      },
    });
    expect(buffer.streamBytes).toBe(2048 + SUFFIX.length + 1);
  });

  it("cuts a long line in the tail", () => {
    const buffer = new HeadTailBuffer({ headBytes: 20, tailBytes: 5000 });
    buffer.write("head data goes here\n");
    buffer.write(`${"T".repeat(2048 + 100)}\n`);
    const { text, truncation } = buffer.snapshot();
    expect(text).toBe(`head data goes here\n${"T".repeat(2048)}${SUFFIX}\n`);
    expect(truncation).toEqual({
      original_bytes: 20 + 2149,
      retained_bytes: 20 + 2049,
      omitted_bytes: 100,
      strategy: "head_tail",
    });
  });

  it("cuts only the long lines and keeps short ones whole", () => {
    const buffer = new HeadTailBuffer({ maxLineBytes: 8 });
    buffer.write("short\nexactly8\nnine-long\nfar too long a line\nend");
    expect(buffer.snapshot().text).toBe(
      `short\nexactly8\nnine-lon${SUFFIX}\nfar too ${SUFFIX}\nend`,
    );
  });

  it("cuts a long line that arrives in many small writes exactly as one written at once", () => {
    const whole = new HeadTailBuffer({ maxLineBytes: 10 });
    const pieces = new HeadTailBuffer({ maxLineBytes: 10 });
    const text = "0123456789ABCDEF\nok\n€€€€€€\n";
    whole.write(text);
    for (const byte of Buffer.from(text)) pieces.write(new Uint8Array([byte]));
    expect(pieces.snapshot()).toEqual(whole.snapshot());
    expect(whole.snapshot().text).toBe(`0123456789${SUFFIX}\nok\n€€€${SUFFIX}\n`);
  });

  it("moves the cut back onto a character boundary", () => {
    const buffer = new HeadTailBuffer({ maxLineBytes: 5 });
    buffer.write("abcd€f\n");
    expect(buffer.snapshot().text).toBe(`abcd${SUFFIX}\n`);
    expect(buffer.snapshot().truncation?.omitted_bytes).toBe(4);
  });

  it("keeps a line of exactly maxLineBytes whole when its newline comes in a later write", () => {
    const buffer = new HeadTailBuffer({ maxLineBytes: 6 });
    buffer.write("abcdef");
    expect(buffer.snapshot().text).toBe("abc");
    buffer.write("\nno");
    expect(buffer.snapshot()).toEqual({ text: "abcdef\nno", truncation: null });
  });

  it("stores a line held back at the limit when the buffer closes", () => {
    const buffer = new HeadTailBuffer({ maxLineBytes: 6 });
    buffer.write("abcdef");
    buffer.close();
    expect(buffer.snapshot()).toEqual({ text: "abcdef", truncation: null });
    expect(buffer.streamBytes).toBe(6);
  });

  it("counts the bytes a cut dropped as omitted even without a gap", () => {
    const buffer = new HeadTailBuffer({ maxLineBytes: 4 });
    buffer.write("123456789\n");
    expect(buffer.snapshot().truncation).toEqual({
      original_bytes: 10,
      retained_bytes: 5,
      omitted_bytes: 5,
      strategy: "head_tail",
    });
  });

  it("counts the rest of a line cut at the head's end in the marker", () => {
    const buffer = new HeadTailBuffer({ headBytes: 4, tailBytes: 4, maxLineBytes: 2 });
    buffer.write("abcdef\n123\nxyz\n");
    // Stored: "ab" + suffix + "\n12" + suffix + "\nxy" + suffix + "\n"; head "ab" + 2 suffix bytes.
    expect(buffer.snapshot()).toEqual({
      text: "ab .\n... [12 bytes omitted] ...\ned]\n",
      truncation: {
        original_bytes: 15,
        retained_bytes: 3,
        omitted_bytes: 12,
        strategy: "head_tail",
      },
    });
  });
});

describe("HeadTailBuffer UTF-8", () => {
  it("holds back a character split across writes until it is whole", () => {
    const buffer = new HeadTailBuffer();
    const euro = Buffer.from("€");
    buffer.write("a");
    buffer.write(euro.subarray(0, 1));
    buffer.write(euro.subarray(1, 2));
    expect(buffer.snapshot()).toEqual({ text: "a", truncation: null });
    expect(buffer.streamBytes).toBe(1);
    expect(buffer.totalBytes).toBe(3);
    buffer.write(euro.subarray(2));
    expect(buffer.snapshot()).toEqual({ text: "a€", truncation: null });
    expect(buffer.streamBytes).toBe(4);
  });

  it("replaces invalid bytes with U+FFFD", () => {
    const buffer = new HeadTailBuffer();
    buffer.write(new Uint8Array([0x61, 0xff, 0x62, 0x80, 0xc3, 0x28, 0x63]));
    expect(buffer.snapshot().text).toBe("a\uFFFDb\uFFFD\uFFFD(c");
  });

  it("shows a character left unfinished at close as U+FFFD", () => {
    const buffer = new HeadTailBuffer();
    buffer.write(new Uint8Array([0x61, 0xe2, 0x82]));
    expect(buffer.snapshot().text).toBe("a");
    buffer.close();
    expect(buffer.snapshot().text).toBe("a\uFFFD");
  });

  it("never splits a character at the head's end or the tail's start", () => {
    const buffer = new HeadTailBuffer({ headBytes: 4, tailBytes: 6 });
    // The head ends inside the first €, the tail starts inside the fourth.
    buffer.write("ab€€€€cd€");
    expect(buffer.snapshot()).toEqual({
      text: "ab\n... [12 bytes omitted] ...\ncd€",
      truncation: {
        original_bytes: 19,
        retained_bytes: 7,
        omitted_bytes: 12,
        strategy: "head_tail",
      },
    });
  });

  it("keeps a leading byte order mark as a character", () => {
    const buffer = new HeadTailBuffer();
    buffer.write("\uFEFFtext");
    expect(buffer.snapshot().text).toBe("\uFEFFtext");
  });

  it("encodes lone surrogates in written strings as U+FFFD", () => {
    const buffer = new HeadTailBuffer();
    buffer.write("a\uD800b");
    expect(buffer.snapshot().text).toBe("a\uFFFDb");
  });
});

describe("HeadTailBuffer options", () => {
  it("uses 16 KiB head and tail and 2048-byte lines by default", () => {
    expect(HEAD_TAIL_DEFAULTS).toEqual({
      headBytes: 16_384,
      tailBytes: 16_384,
      maxLineBytes: 2048,
    });
    expect(Object.isFrozen(HEAD_TAIL_DEFAULTS)).toBe(true);
  });

  it("rejects sizes that are negative, fractional or not numbers", () => {
    for (const options of [
      { headBytes: -1 },
      { tailBytes: 1.5 },
      { maxLineBytes: 0 },
      { headBytes: Number.NaN },
    ]) {
      expect(() => new HeadTailBuffer(options)).toThrow(
        expect.objectContaining({ name: "HeadTailError", code: "invalid_options" }),
      );
    }
    expect(() => new HeadTailBuffer({ tailBytes: -3 })).toThrow(HeadTailError);
  });

  it("keeps only a tail when headBytes is 0 and only a head when tailBytes is 0", () => {
    const tailOnly = new HeadTailBuffer({ headBytes: 0, tailBytes: 3 });
    tailOnly.write("abcdef");
    expect(tailOnly.snapshot().text).toBe("... [3 bytes omitted] ...\ndef");
    const headOnly = new HeadTailBuffer({ headBytes: 3, tailBytes: 0 });
    headOnly.write("abcdef");
    expect(headOnly.snapshot().text).toBe("abc\n... [3 bytes omitted] ...\n");
  });
});
