import type { FileHandle } from "node:fs/promises";

/** Bytes looked at to decide a file is binary, as git and grep do. */
export const BINARY_SNIFF_BYTES = 8 * 1024;

const CHUNK_BYTES = 64 * 1024;
const NEWLINE = 0x0a;

export interface LineWindow {
  /** First line wanted, 1-based. */
  offset: number;
  /** Most lines wanted; undefined for all to the end. */
  limit: number | undefined;
  /** Most bytes of content. */
  maxBytes: number;
}

export interface LineSlice {
  /** Null when a NUL byte appears in the first BINARY_SNIFF_BYTES. */
  content: Buffer | null;
  /** Lines in `content`; a line cut by the byte cap counts as one. */
  lines: number;
  totalLines: number;
  /** True when the only line returned was cut short by the byte cap. */
  cutMidLine: boolean;
}

/** The longest prefix of `bytes` no longer than `limit` that does not split a UTF-8 character. */
export function cutAtCharacterBoundary(bytes: Buffer, limit: number): Buffer {
  if (bytes.length <= limit) return bytes;
  let end = limit;
  // 10xxxxxx is a continuation byte; a character is at most 4 bytes, so look back at most 3.
  while (end > 0 && limit - end < 3 && (bytes[end]! & 0xc0) === 0x80) end -= 1;
  if ((bytes[end]! & 0xc0) === 0x80) end = limit;
  return bytes.subarray(0, end);
}

/**
 * Streams the file once, counting every line but keeping only the requested window, so memory
 * stays bounded by the byte cap however large the file is. Lines end at `\n`; a final line
 * without one still counts.
 */
export async function readLineWindow(handle: FileHandle, window: LineWindow): Promise<LineSlice> {
  const lastWanted =
    window.limit === undefined ? Number.POSITIVE_INFINITY : window.offset + window.limit - 1;
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let keptLines = 0;
  let collecting = true;
  let cutMidLine = false;
  // The line being collected; it is kept only once it is known to fit whole.
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let lineNumber = 1;
  let newlines = 0;
  let lastByte = -1;
  let position = 0;

  const finishLine = () => {
    if (keptBytes + pendingBytes <= window.maxBytes) {
      kept.push(...pending);
      keptBytes += pendingBytes;
      keptLines += 1;
    } else {
      collecting = false;
      if (keptLines === 0) {
        kept.push(cutAtCharacterBoundary(Buffer.concat(pending), window.maxBytes));
        keptLines = 1;
        cutMidLine = true;
      }
    }
    pending = [];
    pendingBytes = 0;
  };

  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, position);
    if (bytesRead === 0) break;
    const chunk = buffer.subarray(0, bytesRead);
    if (
      position < BINARY_SNIFF_BYTES &&
      chunk.subarray(0, BINARY_SNIFF_BYTES - position).includes(0)
    ) {
      return { content: null, lines: 0, totalLines: 0, cutMidLine: false };
    }
    position += bytesRead;
    lastByte = chunk[bytesRead - 1]!;
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline + 1;
      if (collecting && lineNumber >= window.offset && lineNumber <= lastWanted) {
        // One byte past the cap is enough to know the line does not fit, and to find a
        // character boundary when it has to be cut.
        const room = window.maxBytes + 1 - pendingBytes;
        if (room > 0) {
          const piece = Buffer.from(chunk.subarray(start, Math.min(end, start + room)));
          pending.push(piece);
        }
        pendingBytes += end - start;
      }
      if (newline !== -1) {
        newlines += 1;
        if (collecting && lineNumber >= window.offset && lineNumber <= lastWanted) finishLine();
        lineNumber += 1;
        if (lineNumber > lastWanted) collecting = false;
      }
      start = end;
    }
  }
  if (pendingBytes > 0 && collecting) finishLine();
  const unterminated = position > 0 && lastByte !== NEWLINE ? 1 : 0;
  return {
    content: Buffer.concat(kept),
    lines: keptLines,
    totalLines: newlines + unterminated,
    cutMidLine,
  };
}
