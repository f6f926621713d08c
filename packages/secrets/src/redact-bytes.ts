// Redaction of raw bytes, for bodies too large to turn into strings and back (a model request
// carries the whole conversation, often megabytes, on every turn). Each secret is searched for
// with Buffer#indexOf, native and fast, in every spelling it takes inside a JSON document; the
// matches are merged, and the body is copied only when something is replaced.
import { MODEL_TOKEN_PREFIX, ModelTokenPattern } from "@deckhand/wire";
import { REDACTED, searchableSecrets } from "./redaction.ts";

const MARKER = Buffer.from(REDACTED);
const TOKEN_PREFIX = Buffer.from(MODEL_TOKEN_PREFIX);
/** A scoped token at the start of a window of the body (decoded byte for byte, as latin1). */
const TOKEN_AT_START = new RegExp(`^(?:${ModelTokenPattern.source})`);
/** Wider than any token, so the window always holds a whole one. */
const TOKEN_WINDOW = 128;

/** `\uXXXX` for every character beyond ASCII, as serialisers that emit ASCII only write it. */
function asciiEscaped(text: string): string {
  return text.replace(/[\u0080-\uffff]/g, (character) => {
    return `\\u${character.charCodeAt(0).toString(16).padStart(4, "0")}`;
  });
}

/**
 * The spellings of a secret inside a JSON body: as it is, inside a JSON string (quotes,
 * backslashes and control characters escaped), inside a JSON string that is itself inside one
 * (tool-call arguments are JSON text in a JSON string), and each of those with characters beyond
 * ASCII as `\uXXXX` escapes. Other spellings (an escaped `/`, upper-case hex, escapes of plain
 * ASCII letters) are legal JSON that no common serialiser writes; they are not searched for.
 */
export function jsonSpellings(secret: string): string[] {
  const spellings = new Set([secret, asciiEscaped(secret)]);
  let escaped = secret;
  for (let depth = 0; depth < 2; depth += 1) {
    escaped = JSON.stringify(escaped).slice(1, -1);
    spellings.add(escaped);
    spellings.add(asciiEscaped(escaped));
  }
  return [...spellings];
}

type Range = [start: number, end: number];

function occurrences(body: Buffer, pattern: Buffer, ranges: Range[]): void {
  let index = body.indexOf(pattern);
  while (index !== -1) {
    ranges.push([index, index + pattern.length]);
    index = body.indexOf(pattern, index + pattern.length);
  }
}

/** Scoped tokens whose value is not known here (another job's): the wire's token pattern. */
function tokenOccurrences(body: Buffer, ranges: Range[]): void {
  let index = body.indexOf(TOKEN_PREFIX);
  while (index !== -1) {
    const window = body.toString("latin1", index, Math.min(body.length, index + TOKEN_WINDOW));
    const length = TOKEN_AT_START.exec(window)?.[0].length ?? 0;
    if (length > 0) ranges.push([index, index + length]);
    index = body.indexOf(TOKEN_PREFIX, index + Math.max(length, 1));
  }
}

/** Overlapping matches (two secrets sharing characters) become one, so no piece is left. */
function merged(ranges: Range[]): Range[] {
  ranges.sort((left, right) => left[0] - right[0]);
  const result: Range[] = [];
  for (const [start, end] of ranges) {
    const last = result.at(-1);
    if (last !== undefined && start < last[1]) last[1] = Math.max(last[1], end);
    else result.push([start, end]);
  }
  return result;
}

/**
 * Replaces every occurrence of each given secret, of each secret the process remembers, and of
 * anything shaped like a scoped model token in `body` (UTF-8 text, typically JSON) with
 * `[REDACTED]`, in each secret's JSON spellings (`jsonSpellings`). Returns `body` itself when
 * nothing matched, so the common case copies nothing; `count` says how many places were replaced.
 */
export function redactBytes(
  body: Uint8Array,
  secrets: Iterable<string | null | undefined> = [],
): { body: Uint8Array; count: number } {
  const buffer = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const patterns = new Set(searchableSecrets(secrets).flatMap(jsonSpellings));
  const ranges: Range[] = [];
  for (const pattern of patterns) occurrences(buffer, Buffer.from(pattern), ranges);
  tokenOccurrences(buffer, ranges);
  if (ranges.length === 0) return { body, count: 0 };
  const replaced = merged(ranges);
  const parts: Buffer[] = [];
  let from = 0;
  for (const [start, end] of replaced) {
    parts.push(buffer.subarray(from, start), MARKER);
    from = end;
  }
  parts.push(buffer.subarray(from));
  return { body: Buffer.concat(parts), count: replaced.length };
}
