/**
 * The few UTF-8 facts the buffer needs to keep every boundary it draws on a character boundary.
 * Validity beyond "how long does this lead byte say its character is" is left to TextDecoder:
 * cutting only in front of a non-continuation byte is always a boundary for the decoder too, so
 * decoding the pieces separately gives the same text as decoding them joined.
 */

export function isContinuationByte(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

/** How many bytes the character starting with `lead` claims; 1 for ASCII and for bytes that cannot start a character. */
export function sequenceLength(lead: number): number {
  if (lead < 0xc2) return 1;
  if (lead < 0xe0) return 2;
  if (lead < 0xf0) return 3;
  if (lead < 0xf5) return 4;
  return 1;
}

/**
 * How many bytes at the end of `bytes[start, end)` are the beginning of a character whose
 * remaining bytes have not been seen: a lead byte followed only by continuation bytes, fewer
 * than it asks for. Those bytes must not be decoded yet, or the character would come out as
 * U+FFFD although its remaining bytes may still arrive.
 */
export function incompleteSuffixLength(bytes: Uint8Array, start: number, end: number): number {
  let index = end - 1;
  let continuations = 0;
  while (index >= start && continuations < 3 && isContinuationByte(bytes[index]!)) {
    index -= 1;
    continuations += 1;
  }
  if (index < start) return 0;
  return sequenceLength(bytes[index]!) > continuations + 1 ? continuations + 1 : 0;
}
