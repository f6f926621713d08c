import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeUtf8, modelSnapshot, modelStream } from "../test/reference-model.ts";
import { HeadTailBuffer, type HeadTailOptions } from "./head-tail-buffer.ts";

const strictDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

function isValidUtf8Text(text: string): boolean {
  try {
    return strictDecoder.decode(encoder.encode(text)) === text;
  } catch {
    return false;
  }
}

/** Bytes that exercise the interesting cases: newlines, lead and continuation bytes, junk. */
const interestingByte = fc.oneof(
  fc.constant(0x0a),
  fc.integer({ min: 0x20, max: 0x7e }),
  fc.integer({ min: 0x80, max: 0xbf }),
  fc.integer({ min: 0xc0, max: 0xff }),
  fc.integer({ min: 0, max: 0xff }),
);
const randomBytes = fc
  .array(interestingByte, { maxLength: 40 })
  .map((bytes) => Uint8Array.from(bytes));
const unicodeText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.string({ unit: fc.constantFrom("a", "\n", "é", "€", "😀", "\uFEFF", " "), maxLength: 30 }),
);
const chunk = fc.oneof(randomBytes, unicodeText);
const chunks = fc.array(chunk, { maxLength: 25 });
const smallOptions = fc.record({
  headBytes: fc.integer({ min: 0, max: 24 }),
  tailBytes: fc.integer({ min: 0, max: 24 }),
  maxLineBytes: fc.integer({ min: 1, max: 12 }),
});

function bytesOf(pieces: ReadonlyArray<Uint8Array | string>): Uint8Array {
  return Buffer.concat(
    pieces.map((piece) => (typeof piece === "string" ? Buffer.from(piece) : piece)),
  );
}

function filled(options: HeadTailOptions, pieces: ReadonlyArray<Uint8Array | string>) {
  const buffer = new HeadTailBuffer(options);
  for (const piece of pieces) buffer.write(piece);
  buffer.close();
  return buffer;
}

/** Reads the whole buffer from cursor 0 in reads of at most `limit` bytes. */
function readAll(buffer: HeadTailBuffer, limit?: number) {
  const texts: string[] = [];
  let cursor = 0;
  let missedBytes = 0;
  for (let reads = 0; cursor < buffer.streamBytes; reads += 1) {
    if (reads > 10_000) throw new Error("readSince made no progress");
    const read = buffer.readSince(cursor, limit);
    expect(read.nextCursor).toBeGreaterThan(cursor);
    texts.push(read.text);
    missedBytes += read.missedBytes;
    cursor = read.nextCursor;
  }
  return { texts, missedBytes };
}

describe("HeadTailBuffer properties", () => {
  it("(a) always produces valid UTF-8 text, in snapshots and in reads", () => {
    fc.assert(
      fc.property(
        smallOptions,
        chunks,
        fc.integer({ min: 1, max: 9 }),
        (options, pieces, limit) => {
          const buffer = new HeadTailBuffer(options);
          for (const piece of pieces) {
            buffer.write(piece);
            expect(isValidUtf8Text(buffer.snapshot().text)).toBe(true);
          }
          buffer.close();
          expect(isValidUtf8Text(buffer.snapshot().text)).toBe(true);
          for (const text of readAll(buffer, limit).texts) expect(isValidUtf8Text(text)).toBe(true);
        },
      ),
    );
  });

  it("(b) returns exactly the decoded input when it fits and no line is too long", () => {
    fc.assert(
      fc.property(smallOptions, chunks, (options, pieces) => {
        const input = bytesOf(pieces);
        const stream = modelStream(input, options.maxLineBytes);
        fc.pre(stream.cuts === 0 && input.length <= options.headBytes + options.tailBytes);
        const snapshot = filled(options, pieces).snapshot();
        expect(snapshot.text).toBe(decodeUtf8(input));
        expect(snapshot.truncation).toBeNull();
      }),
    );
  });

  it("(c) accounts for every written byte: retained + omitted = original", () => {
    fc.assert(
      fc.property(smallOptions, chunks, fc.boolean(), (options, pieces, close) => {
        const buffer = new HeadTailBuffer(options);
        for (const piece of pieces) buffer.write(piece);
        if (close) buffer.close();
        const { truncation } = buffer.snapshot();
        if (truncation === null) return;
        expect(truncation.original_bytes).toBe(bytesOf(pieces).length);
        expect(truncation.retained_bytes + truncation.omitted_bytes).toBe(
          truncation.original_bytes,
        );
        expect(truncation.retained_bytes).toBeGreaterThanOrEqual(0);
        expect(truncation.omitted_bytes).toBeGreaterThan(0);
      }),
    );
  });

  it("(d) reads from cursor 0 add up to the snapshot when nothing was omitted", () => {
    fc.assert(
      fc.property(
        smallOptions,
        chunks,
        fc.option(fc.integer({ min: 1, max: 9 })),
        (options, pieces, limit) => {
          const buffer = filled(options, pieces);
          const model = modelSnapshot(bytesOf(pieces), options);
          fc.pre(model.parts === null);
          const { texts, missedBytes } = readAll(buffer, limit ?? undefined);
          expect(missedBytes).toBe(0);
          expect(texts.join("")).toBe(buffer.snapshot().text);
        },
      ),
    );
  });

  it("matches the naive model exactly: text, truncation and stream length", () => {
    fc.assert(
      fc.property(smallOptions, chunks, (options, pieces) => {
        const buffer = filled(options, pieces);
        const model = modelSnapshot(bytesOf(pieces), options);
        expect(buffer.snapshot()).toEqual({ text: model.text, truncation: model.truncation });
        expect(buffer.streamBytes).toBe(model.streamBytes);
        expect(buffer.totalBytes).toBe(bytesOf(pieces).length);
      }),
      { numRuns: 500 },
    );
  });

  it("matches the naive model for longer lines, chunks and windows", () => {
    const mostlyText = fc
      .array(
        fc.oneof(
          { weight: 20, arbitrary: fc.constant(0x61) },
          { weight: 1, arbitrary: interestingByte },
        ),
        {
          maxLength: 400,
        },
      )
      .map((bytes) => Uint8Array.from(bytes));
    fc.assert(
      fc.property(
        fc.record({
          headBytes: fc.integer({ min: 0, max: 300 }),
          tailBytes: fc.integer({ min: 0, max: 300 }),
          maxLineBytes: fc.integer({ min: 1, max: 150 }),
        }),
        fc.array(fc.oneof(mostlyText, unicodeText), { maxLength: 12 }),
        (options, pieces) => {
          const buffer = filled(options, pieces);
          const model = modelSnapshot(bytesOf(pieces), options);
          expect(buffer.snapshot()).toEqual({ text: model.text, truncation: model.truncation });
          expect(buffer.streamBytes).toBe(model.streamBytes);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("reads across a gap give the head, then the tail after missedBytes", () => {
    fc.assert(
      fc.property(
        smallOptions,
        chunks,
        fc.option(fc.integer({ min: 1, max: 9 })),
        (options, pieces, limit) => {
          const buffer = filled(options, pieces);
          const model = modelSnapshot(bytesOf(pieces), options);
          fc.pre(model.parts !== null);
          const { texts, missedBytes } = readAll(buffer, limit ?? undefined);
          expect(texts.join("")).toBe(model.parts!.head + model.parts!.tail);
          expect(missedBytes).toBe(model.parts!.gapBytes);
        },
      ),
    );
  });

  it("gives the same result however the same bytes are split into writes", () => {
    fc.assert(
      fc.property(
        smallOptions,
        fc
          .uint8Array({ maxLength: 120 })
          .chain((bytes) =>
            fc.tuple(fc.constant(bytes), fc.uniqueArray(fc.integer({ min: 0, max: bytes.length }))),
          ),
        (options, [bytes, splits]) => {
          const points = [0, ...splits.sort((left, right) => left - right), bytes.length];
          const pieces = points.slice(1).map((end, index) => bytes.subarray(points[index]!, end));
          const whole = filled(options, [bytes]);
          const split = filled(options, pieces);
          expect(split.snapshot()).toEqual(whole.snapshot());
          expect(split.streamBytes).toBe(whole.streamBytes);
        },
      ),
    );
  });

  it("incremental reads while writing reproduce the final text when nothing was omitted", () => {
    fc.assert(
      fc.property(smallOptions, chunks, (options, pieces) => {
        const model = modelSnapshot(bytesOf(pieces), options);
        fc.pre(model.parts === null);
        const buffer = new HeadTailBuffer(options);
        let cursor = 0;
        let text = "";
        for (const piece of pieces) {
          buffer.write(piece);
          const read = buffer.readSince(cursor);
          expect(read.missedBytes).toBe(0);
          expect(read.nextCursor).toBe(buffer.streamBytes);
          text += read.text;
          cursor = read.nextCursor;
        }
        buffer.close();
        text += buffer.readSince(cursor).text;
        expect(text).toBe(buffer.snapshot().text);
        expect(text).toBe(model.text);
      }),
    );
  });
});
