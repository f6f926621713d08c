import type { Truncation } from "@deckhand/wire";
import { LINE_TRUNCATION_SUFFIX } from "../src/head-tail-buffer.ts";

/**
 * A deliberately naive model of what a closed HeadTailBuffer must show for a given input: it
 * cuts lines byte by byte over the whole input at once and keeps the whole stored stream, so
 * it cannot share the real buffer's chunk-boundary, striding or ring bugs.
 */

const SUFFIX = [...Buffer.from(LINE_TRUNCATION_SUFFIX, "latin1")];
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

export function decodeUtf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

function claimedLength(lead: number): number {
  if (lead >= 0xc2 && lead < 0xe0) return 2;
  if (lead >= 0xe0 && lead < 0xf0) return 3;
  if (lead >= 0xf0 && lead < 0xf5) return 4;
  return 1;
}

const isContinuation = (byte: number) => byte >= 0x80 && byte < 0xc0;

export interface ModelStream {
  bytes: number[];
  /** For each stored byte, its index in the input, or -1 for a byte of a line-cut suffix. */
  inputIndex: number[];
  cuts: number;
}

export function modelStream(input: Uint8Array, maxLineBytes: number): ModelStream {
  const bytes: number[] = [];
  const inputIndex: number[] = [];
  let line: number[] = [];
  let lineStart = 0;
  let discarding = false;
  let cuts = 0;
  const flushLine = (count: number) => {
    for (let index = 0; index < count; index += 1) {
      bytes.push(line[index]!);
      inputIndex.push(lineStart + index);
    }
  };
  for (let index = 0; index < input.length; index += 1) {
    const byte = input[index]!;
    if (byte === 0x0a) {
      if (!discarding) flushLine(line.length);
      bytes.push(byte);
      inputIndex.push(index);
      line = [];
      lineStart = index + 1;
      discarding = false;
      continue;
    }
    if (discarding) continue;
    line.push(byte);
    if (line.length > maxLineBytes) {
      // Keep each character whose bytes all fit within maxLineBytes.
      let keep = 0;
      while (keep < maxLineBytes) {
        const length = isContinuation(line[keep]!) ? 1 : claimedLength(line[keep]!);
        let end = keep + 1;
        while (end < keep + length && end < line.length && isContinuation(line[end]!)) end += 1;
        if (end > maxLineBytes) break;
        keep = end;
      }
      flushLine(keep);
      for (const suffixByte of SUFFIX) {
        bytes.push(suffixByte);
        inputIndex.push(-1);
      }
      cuts += 1;
      discarding = true;
    }
  }
  if (!discarding) flushLine(line.length);
  return { bytes, inputIndex, cuts };
}

export interface ModelSnapshot {
  text: string;
  truncation: Truncation | null;
  streamBytes: number;
  /** The text of the head and of the tail when there is a gap, else null. */
  parts: { head: string; tail: string; gapBytes: number } | null;
}

function incompleteAtEnd(bytes: number[], end: number): number {
  for (let back = 1; back <= Math.min(4, end); back += 1) {
    const byte = bytes[end - back]!;
    if (isContinuation(byte)) continue;
    return claimedLength(byte) > back ? back : 0;
  }
  return 0;
}

export function modelSnapshot(
  input: Uint8Array,
  options: { headBytes: number; tailBytes: number; maxLineBytes: number },
): ModelSnapshot {
  const stream = modelStream(input, options.maxLineBytes);
  const { bytes, inputIndex } = stream;
  const countOriginal = (start: number, end: number) =>
    inputIndex.slice(start, end).filter((index) => index >= 0).length;
  const truncation = (retained: number): Truncation => ({
    original_bytes: input.length,
    retained_bytes: retained,
    omitted_bytes: input.length - retained,
    strategy: "head_tail",
  });
  if (bytes.length <= options.headBytes + options.tailBytes) {
    return {
      text: decodeUtf8(Uint8Array.from(bytes)),
      truncation: stream.cuts === 0 ? null : truncation(countOriginal(0, bytes.length)),
      streamBytes: bytes.length,
      parts: null,
    };
  }
  const headEnd = options.headBytes - incompleteAtEnd(bytes, options.headBytes);
  let tailBegin = bytes.length - options.tailBytes;
  const tailStart = tailBegin;
  while (
    tailBegin < bytes.length &&
    tailBegin - tailStart < 3 &&
    isContinuation(bytes[tailBegin]!)
  ) {
    tailBegin += 1;
  }
  let lastShownBefore = 0;
  for (let index = headEnd - 1; index >= 0; index -= 1) {
    if (inputIndex[index]! >= 0) {
      lastShownBefore = inputIndex[index]! + 1;
      break;
    }
  }
  let firstShownAfter = input.length;
  for (let index = tailBegin; index < bytes.length; index += 1) {
    if (inputIndex[index]! >= 0) {
      firstShownAfter = inputIndex[index]!;
      break;
    }
  }
  const omitted = firstShownAfter - lastShownBefore;
  const head = decodeUtf8(Uint8Array.from(bytes.slice(0, headEnd)));
  const tail = decodeUtf8(Uint8Array.from(bytes.slice(tailBegin)));
  const separator = head === "" || head.endsWith("\n") ? "" : "\n";
  return {
    text: `${head}${separator}... [${omitted} ${omitted === 1 ? "byte" : "bytes"} omitted] ...\n${tail}`,
    truncation: truncation(countOriginal(0, headEnd) + countOriginal(tailBegin, bytes.length)),
    streamBytes: bytes.length,
    parts: { head, tail, gapBytes: tailBegin - headEnd },
  };
}
