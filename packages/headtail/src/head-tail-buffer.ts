import type { Truncation } from "@deckhand/wire";
import { HeadTailError } from "./head-tail-error.ts";
import { incompleteSuffixLength, isContinuationByte, sequenceLength } from "./utf8.ts";

export interface HeadTailOptions {
  /** Bytes kept from the start of the stored stream. 0 keeps only a tail. */
  headBytes?: number;
  /** Bytes kept from the end of the stored stream. 0 keeps only a head. */
  tailBytes?: number;
  /** Longest line kept whole; longer lines are cut here and end in `LINE_TRUNCATION_SUFFIX`. */
  maxLineBytes?: number;
}

export interface HeadTailSnapshot {
  text: string;
  /** Null when `text` is the whole output; otherwise how much of it is missing. */
  truncation: Truncation | null;
}

export interface HeadTailIncrementalRead {
  text: string;
  /** Pass back as the next cursor to read only what comes after `text`. */
  nextCursor: number;
  /** Stored bytes after the cursor that were no longer retained and are not in `text`. */
  missedBytes: number;
}

export type HeadTailWaitResult = "changed" | "closed" | "aborted";

export const HEAD_TAIL_DEFAULTS: Readonly<Required<HeadTailOptions>> = Object.freeze({
  headBytes: 16_384,
  tailBytes: 16_384,
  maxLineBytes: 2048,
});

/**
 * Ends every line that was cut. Plain ASCII on purpose: then no window boundary or UTF-8 repair
 * can ever remove part of it, which keeps the byte accounting exact. It carries no count because
 * it is stored when the cut happens, before the rest of the line has arrived.
 */
export const LINE_TRUNCATION_SUFFIX = " ... [line truncated]";

const SUFFIX = Buffer.from(LINE_TRUNCATION_SUFFIX, "latin1");
const SUFFIX_LENGTH = SUFFIX.length;
const NEWLINE = 0x0a;
// ignoreBOM keeps a leading U+FEFF in the text: it is output like any other character.
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

function omissionMarker(omittedBytes: number): string {
  return `... [${omittedBytes} ${omittedBytes === 1 ? "byte" : "bytes"} omitted] ...\n`;
}

/**
 * One cut line: `at` is where its suffix starts in the stored stream, `raw` how many written
 * bytes came before the cut, `dropped` how many written bytes of the line the cut discarded.
 * Enough to translate stored-stream positions back into written-byte counts.
 */
interface LineCut {
  readonly at: number;
  readonly raw: number;
  dropped: number;
}

interface Waiter {
  readonly cursor: number;
  settle(result: HeadTailWaitResult): void;
}

function asBuffer(chunk: Uint8Array | string): Buffer {
  if (typeof chunk === "string") return Buffer.from(chunk, "utf8");
  if (Buffer.isBuffer(chunk)) return chunk;
  return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

function isCursor(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function sizeOption(options: HeadTailOptions, name: keyof HeadTailOptions, minimum: number) {
  const value = options[name] ?? HEAD_TAIL_DEFAULTS[name];
  if (!Number.isSafeInteger(value) || value < minimum) {
    throw new HeadTailError(
      "invalid_options",
      `${name} must be an integer of at least ${minimum}, got ${String(value)}`,
    );
  }
  return value;
}

/**
 * Captures a process's output, whatever its volume, in bounded memory: the first `headBytes`
 * and the last `tailBytes` of the stored stream. The stored stream is what was written after
 * cutting lines longer than `maxLineBytes`; cursors are byte offsets in it.
 *
 * Bytes are stored raw and only turned into text when read, where every boundary (head end, tail
 * start, cursor, read limit) is moved onto a character boundary and invalid bytes become U+FFFD.
 * Up to a few written bytes wait before being stored: a character whose last bytes have not been
 * written yet, and the last three bytes before the line limit of a line that has not yet ended
 * (the next byte decides whether and where it is cut). `close()` stores them. So `streamBytes`
 * only ever counts bytes that a read can already return, and a waiter woken by a write always
 * finds something new to read.
 */
export class HeadTailBuffer {
  readonly #headBytes: number;
  readonly #tailBytes: number;
  readonly #maxLineBytes: number;

  #head: Buffer | null = null;
  /** Stream offset `offset` (at or past the head) lives at `offset % tailBytes`. */
  #ring: Buffer | null = null;
  #streamBytes = 0;
  #totalBytes = 0;
  /** Written bytes already stored or dropped; the carry is not among them yet. */
  #rawConsumed = 0;
  #closed = false;

  /** Bytes of the current line written so far and stored (or carried), while not discarding. */
  #lineLength = 0;
  #discarding = false;
  /** The last bytes written, held back because what to do with them depends on the next ones. */
  readonly #carry = Buffer.alloc(8);
  #carryLength = 0;

  #cutCount = 0;
  #currentCut: LineCut | null = null;
  /** Cuts whose suffix starts inside the head; bounded by headBytes / suffix length. */
  readonly #headCuts: LineCut[] = [];
  /** Cuts that may still matter for the tail: the last one before it and every one inside it. */
  #tailCuts: LineCut[] = [];
  #tailCutsStart = 0;

  readonly #changeWaiters = new Set<Waiter>();
  readonly #closeWaiters = new Set<Waiter>();

  constructor(options: HeadTailOptions = {}) {
    this.#headBytes = sizeOption(options, "headBytes", 0);
    this.#tailBytes = sizeOption(options, "tailBytes", 0);
    this.#maxLineBytes = sizeOption(options, "maxLineBytes", 1);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Every byte ever passed to `write()` before `close()`: the `original_bytes` of a snapshot. */
  get totalBytes(): number {
    return this.#totalBytes;
  }

  /** Length of the stored stream so far, which is the cursor of "now". */
  get streamBytes(): number {
    return this.#streamBytes;
  }

  /** How many `waitForChange` / `waitForClose` calls are still pending; for diagnostics. */
  get waiterCount(): number {
    return this.#changeWaiters.size + this.#closeWaiters.size;
  }

  /** Appends output; strings are encoded as UTF-8. Ignored after `close()`. */
  write(chunk: Uint8Array | string): void {
    if (this.#closed) return;
    const bytes = asBuffer(chunk);
    const length = bytes.length;
    if (length === 0) return;
    this.#totalBytes += length;
    const before = this.#streamBytes;
    if (this.#carryLength === 0) {
      this.#consume(bytes);
    } else {
      // Only the carried bytes need joining to the new ones: up to the first newline, or far
      // enough that the line is certainly cut. Either way nothing is carried past that point, so
      // the rest of the chunk is consumed in place instead of being copied.
      const bound = this.#maxLineBytes + 4;
      const newline = bytes.subarray(0, bound).indexOf(NEWLINE);
      const pieceLength = newline >= 0 ? newline + 1 : Math.min(length, bound);
      const piece = Buffer.allocUnsafe(this.#carryLength + pieceLength);
      this.#carry.copy(piece, 0, 0, this.#carryLength);
      bytes.copy(piece, this.#carryLength, 0, pieceLength);
      this.#carryLength = 0;
      this.#consume(piece);
      if (pieceLength < length) this.#consume(bytes.subarray(pieceLength));
    }
    if (this.#streamBytes > before && this.#changeWaiters.size > 0) {
      for (const waiter of this.#changeWaiters) {
        if (waiter.cursor < this.#streamBytes) waiter.settle("changed");
      }
    }
  }

  /** Ends the stream: stores whatever was held back and wakes every waiter. */
  close(): void {
    if (this.#closed) return;
    if (this.#carryLength > 0) {
      // The line did not grow past the limit and the character will never be completed:
      // store the bytes as they are; reading shows an unfinished character as U+FFFD.
      this.#commit(this.#carry, 0, this.#carryLength);
      this.#rawConsumed += this.#carryLength;
      this.#carryLength = 0;
    }
    this.#closed = true;
    for (const waiter of this.#changeWaiters) {
      waiter.settle(this.#streamBytes > waiter.cursor ? "changed" : "closed");
    }
    for (const waiter of this.#closeWaiters) waiter.settle("closed");
  }

  /**
   * Everything retained, as text. When something was left out (bytes between head and tail, or
   * the rest of a cut line), `truncation` says how much, counted in written bytes.
   */
  snapshot(): HeadTailSnapshot {
    const streamEnd = this.#streamBytes;
    const headLength = Math.min(streamEnd, this.#headBytes);
    const tailStart = this.#tailStartOf(streamEnd);
    if (tailStart === headLength) {
      const text = this.#decode(0, streamEnd);
      if (this.#cutCount === 0) return { text, truncation: null };
      return { text, truncation: this.#truncation(streamEnd - this.#cutCount * SUFFIX_LENGTH) };
    }
    const headEnd = this.#trimIncompleteEnd(0, headLength);
    const tailBegin = this.#skipContinuations(tailStart, streamEnd);
    const omittedBetween =
      this.#rawPosition(this.#tailCuts, this.#tailCutsStart, tailBegin, true) -
      this.#rawPosition(this.#headCuts, 0, headEnd, false);
    const headText = this.#decode(0, headEnd);
    const separator = headText === "" || headText.endsWith("\n") ? "" : "\n";
    const text =
      headText + separator + omissionMarker(omittedBetween) + this.#decode(tailBegin, streamEnd);
    const retained =
      headEnd -
      suffixBytesWithin(this.#headCuts, 0, 0, headEnd) +
      (streamEnd - tailBegin) -
      suffixBytesWithin(this.#tailCuts, this.#tailCutsStart, tailBegin, streamEnd);
    return { text, truncation: this.#truncation(retained) };
  }

  /**
   * The stored stream from `cursor` on, at most `limit` bytes of it. The text is always one
   * contiguous piece of the stream: a read that would cross the gap between head and tail stops
   * at the head's end, and the next read reports the gap as `missedBytes`. A `limit` smaller than
   * the character at the cursor still returns that one character, so every read makes progress.
   */
  readSince(cursor: number, limit?: number): HeadTailIncrementalRead {
    if (!isCursor(cursor)) {
      throw new HeadTailError(
        "invalid_cursor",
        `cursor must be a non-negative integer byte offset, got ${String(cursor)}; pass 0 or a nextCursor from an earlier read`,
      );
    }
    if (
      limit !== undefined &&
      !(limit === Number.POSITIVE_INFINITY || (isCursor(limit) && limit > 0))
    ) {
      throw new HeadTailError(
        "invalid_limit",
        `limit must be a positive integer number of bytes, got ${String(limit)}`,
      );
    }
    const streamEnd = this.#streamBytes;
    if (cursor >= streamEnd) return { text: "", nextCursor: streamEnd, missedBytes: 0 };
    const headLength = Math.min(streamEnd, this.#headBytes);
    const tailStart = this.#tailStartOf(streamEnd);
    let start = cursor;
    let regionStart = 0;
    let regionEnd = streamEnd;
    let missedBytes = 0;
    if (tailStart !== headLength) {
      const headEnd = this.#trimIncompleteEnd(0, headLength);
      if (cursor < headEnd) {
        regionEnd = headEnd;
      } else {
        regionStart = this.#skipContinuations(tailStart, streamEnd);
        if (cursor < regionStart) {
          missedBytes = regionStart - cursor;
          start = regionStart;
        }
      }
    }
    start = this.#alignToCharacter(start, regionStart, regionEnd);
    let end = regionEnd;
    if (limit !== undefined && start + limit < end) {
      end = this.#trimIncompleteEnd(start, start + limit);
      if (end === start) end = this.#characterEnd(start, regionEnd);
    }
    return { text: this.#decode(start, end), nextCursor: end, missedBytes };
  }

  /**
   * Resolves "changed" once the stream is longer than `cursor` (default: its length now), or
   * "closed" once the buffer is closed with nothing past the cursor; at once if either is
   * already true, even with an aborted signal. "aborted" when the signal aborts first. Passing
   * the `nextCursor` of the last read, rather than relying on the default, is what makes sure
   * output written between that read and this call is not missed.
   */
  waitForChange(
    options: { cursor?: number; signal?: AbortSignal } = {},
  ): Promise<HeadTailWaitResult> {
    const cursor = options.cursor ?? this.#streamBytes;
    if (!isCursor(cursor)) {
      return Promise.reject(
        new HeadTailError(
          "invalid_cursor",
          `cursor must be a non-negative integer byte offset, got ${String(cursor)}`,
        ),
      );
    }
    if (this.#streamBytes > cursor) return Promise.resolve("changed");
    if (this.#closed) return Promise.resolve("closed");
    return this.#wait(this.#changeWaiters, cursor, options.signal);
  }

  /** Resolves "closed" once `close()` has been called (at once if it has), or "aborted" first. */
  waitForClose(signal?: AbortSignal): Promise<"closed" | "aborted"> {
    if (this.#closed) return Promise.resolve("closed");
    return this.#wait(this.#closeWaiters, 0, signal) as Promise<"closed" | "aborted">;
  }

  #wait(
    waiters: Set<Waiter>,
    cursor: number,
    signal: AbortSignal | undefined,
  ): Promise<HeadTailWaitResult> {
    if (signal?.aborted) return Promise.resolve("aborted");
    return new Promise((resolve) => {
      const onAbort = () => waiter.settle("aborted");
      const waiter: Waiter = {
        cursor,
        settle(result) {
          waiters.delete(waiter);
          signal?.removeEventListener("abort", onAbort);
          resolve(result);
        },
      };
      waiters.add(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /**
   * Cuts long lines out of `input` and stores the rest. Lines are found by striding: the last
   * newline within the next `maxLineBytes - lineLength` bytes proves every line before it short,
   * so a chunk of short lines costs one native search per `maxLineBytes`, not one per line.
   */
  #consume(input: Buffer): void {
    const length = input.length;
    const maxLineBytes = this.#maxLineBytes;
    const rawStart = this.#rawConsumed;
    let position = 0;
    let segmentStart = 0;
    while (position < length) {
      if (this.#discarding) {
        const cut = this.#currentCut!;
        const newline = input.indexOf(NEWLINE, position);
        if (newline < 0) {
          cut.dropped += length - position;
          position = length;
          break;
        }
        cut.dropped += newline - position;
        this.#discarding = false;
        this.#lineLength = 0;
        segmentStart = newline;
        position = newline + 1;
        continue;
      }
      // The byte at line offset maxLineBytes: if it is not a newline, the line is too long.
      const limitIndex = position + maxLineBytes - this.#lineLength;
      if (limitIndex >= length) {
        const newline = input.lastIndexOf(NEWLINE, length - 1);
        this.#lineLength =
          newline >= position ? length - 1 - newline : this.#lineLength + (length - position);
        position = length;
        break;
      }
      const newline = input.lastIndexOf(NEWLINE, limitIndex);
      if (newline >= position) {
        this.#lineLength = limitIndex - newline;
        position = limitIndex + 1;
        continue;
      }
      // Cut in front of the character that would reach past the limit. Its bytes are in this
      // input: the last three bytes before the limit are always carried until the line resolves.
      const lowest = Math.max(0, position - this.#lineLength, limitIndex - 3);
      let cutIndex = limitIndex;
      for (let index = limitIndex - 1; index >= lowest; index -= 1) {
        const byte = input[index]!;
        if (byte < 0x80) break;
        if (byte >= 0xc0) {
          // A lead byte whose character really continues past the limit; one that is not
          // followed by continuation bytes is invalid on its own and fits.
          if (index + sequenceLength(byte) > limitIndex && isContinuationByte(input[limitIndex]!)) {
            cutIndex = index;
          }
          break;
        }
      }
      this.#commit(input, segmentStart, cutIndex);
      this.#startCut(rawStart + cutIndex);
      position = cutIndex;
    }
    let carry = 0;
    if (!this.#discarding) {
      // Bytes within three of the line limit wait for the byte that decides whether the line is
      // cut there (the cut may have to move back onto a character boundary); an unfinished
      // character waits for its remaining bytes.
      // Either way the stored part must end on a character boundary, so a held zone that
      // starts inside a character takes the whole character.
      carry = incompleteSuffixLength(input, segmentStart, length);
      const held = this.#lineLength - Math.max(0, maxLineBytes - 3);
      if (held > carry) carry = held + incompleteSuffixLength(input, segmentStart, length - held);
      this.#commit(input, segmentStart, length - carry);
      if (carry > 0) {
        input.copy(this.#carry, 0, length - carry, length);
        this.#carryLength = carry;
        this.#lineLength -= carry;
      }
    }
    this.#rawConsumed = rawStart + length - carry;
  }

  #startCut(raw: number): void {
    const cut: LineCut = { at: this.#streamBytes, raw, dropped: 0 };
    this.#currentCut = cut;
    this.#cutCount += 1;
    this.#discarding = true;
    if (cut.at < this.#headBytes) this.#headCuts.push(cut);
    this.#tailCuts.push(cut);
    this.#commit(SUFFIX, 0, SUFFIX_LENGTH);
    const tailStart = this.#tailStartOf(this.#streamBytes);
    const cuts = this.#tailCuts;
    while (
      cuts.length - this.#tailCutsStart >= 2 &&
      cuts[this.#tailCutsStart + 1]!.at < tailStart
    ) {
      this.#tailCutsStart += 1;
    }
    if (this.#tailCutsStart > 64 && this.#tailCutsStart * 2 > cuts.length) {
      this.#tailCuts = cuts.slice(this.#tailCutsStart);
      this.#tailCutsStart = 0;
    }
  }

  /** Appends `source[start, end)` to the stored stream, copying only what stays retained. */
  #commit(source: Buffer, start: number, end: number): void {
    let from = start;
    let length = end - start;
    if (length <= 0) return;
    if (this.#streamBytes < this.#headBytes) {
      const take = Math.min(length, this.#headBytes - this.#streamBytes);
      this.#head ??= Buffer.alloc(this.#headBytes);
      source.copy(this.#head, this.#streamBytes, from, from + take);
      this.#streamBytes += take;
      from += take;
      length -= take;
      if (length === 0) return;
    }
    const tailBytes = this.#tailBytes;
    if (length > tailBytes) {
      this.#streamBytes += length - tailBytes;
      from = end - tailBytes;
      length = tailBytes;
      if (length === 0) return;
    }
    this.#ring ??= Buffer.alloc(tailBytes);
    const ringIndex = this.#streamBytes % tailBytes;
    const first = Math.min(length, tailBytes - ringIndex);
    source.copy(this.#ring, ringIndex, from, from + first);
    if (first < length) source.copy(this.#ring, 0, from + first, end);
    this.#streamBytes += length;
  }

  #tailStartOf(streamEnd: number): number {
    return Math.max(Math.min(streamEnd, this.#headBytes), streamEnd - this.#tailBytes);
  }

  /** The byte at a retained stream offset. */
  #byteAt(offset: number): number {
    if (offset < this.#headBytes) return this.#head![offset]!;
    return this.#ring![offset % this.#tailBytes]!;
  }

  #trimIncompleteEnd(start: number, end: number): number {
    const from = Math.max(start, end - 4);
    const window = new Uint8Array(end - from);
    for (let offset = from; offset < end; offset += 1) window[offset - from] = this.#byteAt(offset);
    return end - incompleteSuffixLength(window, 0, window.length);
  }

  /** Skips the continuation bytes of a character whose first bytes are no longer retained. */
  #skipContinuations(start: number, end: number): number {
    let offset = start;
    while (offset < end && offset - start < 3 && isContinuationByte(this.#byteAt(offset))) {
      offset += 1;
    }
    return offset;
  }

  /** Moves a cursor that points into the middle of a character to that character's end. */
  #alignToCharacter(cursor: number, regionStart: number, regionEnd: number): number {
    if (cursor >= regionEnd || !isContinuationByte(this.#byteAt(cursor))) return cursor;
    for (let back = 1; back <= 3; back += 1) {
      const index = cursor - back;
      if (index < regionStart) return cursor;
      const byte = this.#byteAt(index);
      if (!isContinuationByte(byte)) {
        if (index + sequenceLength(byte) <= cursor) return cursor;
        return this.#characterEnd(index, regionEnd);
      }
    }
    return cursor;
  }

  /** Where the character starting at `start` ends: its lead byte plus the continuations it asks for. */
  #characterEnd(start: number, regionEnd: number): number {
    const limit = Math.min(regionEnd, start + sequenceLength(this.#byteAt(start)));
    let end = start + 1;
    while (end < limit && isContinuationByte(this.#byteAt(end))) end += 1;
    return end;
  }

  /**
   * Translates a stream position back into written bytes. For the start of a retained range:
   * the index of the first written byte shown from there on; for its end: one past the last
   * written byte shown before it. The bytes a cut line dropped lie between its suffix and its
   * newline, so a gap next to a suffix counts them.
   */
  #rawPosition(cuts: readonly LineCut[], from: number, position: number, isRangeStart: boolean) {
    for (let index = cuts.length - 1; index >= from; index -= 1) {
      const cut = cuts[index]!;
      if (isRangeStart ? cut.at > position : cut.at >= position) continue;
      const suffixEnd = cut.at + SUFFIX_LENGTH;
      if (position > suffixEnd) return cut.raw + cut.dropped + (position - suffixEnd);
      return isRangeStart ? cut.raw + cut.dropped : cut.raw;
    }
    return position;
  }

  #truncation(retainedBytes: number): Truncation {
    return {
      original_bytes: this.#totalBytes,
      retained_bytes: retainedBytes,
      omitted_bytes: this.#totalBytes - retainedBytes,
      strategy: "head_tail",
    };
  }

  #decode(start: number, end: number): string {
    if (start >= end) return "";
    const parts: Buffer[] = [];
    if (start < this.#headBytes) {
      parts.push(this.#head!.subarray(start, Math.min(end, this.#headBytes)));
    }
    if (end > this.#headBytes) {
      const from = Math.max(start, this.#headBytes);
      const ring = this.#ring!;
      const ringStart = from % this.#tailBytes;
      const ringEnd = ringStart + (end - from);
      if (ringEnd <= this.#tailBytes) {
        parts.push(ring.subarray(ringStart, ringEnd));
      } else {
        parts.push(ring.subarray(ringStart), ring.subarray(0, ringEnd - this.#tailBytes));
      }
    }
    if (parts.length === 1) return decoder.decode(parts[0]);
    let text = "";
    for (let index = 0; index < parts.length - 1; index += 1) {
      text += decoder.decode(parts[index], { stream: true });
    }
    return text + decoder.decode(parts[parts.length - 1]);
  }
}

/** Bytes of line-cut suffixes inside the stream range `[start, end)`. */
function suffixBytesWithin(
  cuts: readonly LineCut[],
  from: number,
  start: number,
  end: number,
): number {
  let total = 0;
  for (let index = cuts.length - 1; index >= from; index -= 1) {
    const cut = cuts[index]!;
    const suffixEnd = cut.at + SUFFIX_LENGTH;
    if (suffixEnd <= start) break;
    const overlap = Math.min(end, suffixEnd) - Math.max(start, cut.at);
    if (overlap > 0) total += overlap;
  }
  return total;
}
