/** Enough of an agent's stderr to show why it died, small enough for an event and a row. */
export const STDERR_TAIL_BYTES = 8 * 1024;

/** Keeps the last `limit` bytes written to it. */
export class TailBuffer {
  #chunks: Buffer[] = [];
  #size = 0;
  readonly #limit: number;

  constructor(limit = STDERR_TAIL_BYTES) {
    this.#limit = limit;
  }

  push(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    // Drop whole chunks while what remains still covers the limit.
    while (this.#chunks.length > 1 && this.#size - this.#chunks[0]!.length >= this.#limit) {
      this.#size -= this.#chunks.shift()!.length;
    }
  }

  text(): string {
    const all = Buffer.concat(this.#chunks);
    let start = Math.max(0, all.length - this.#limit);
    // Start on a character, not inside one: skip UTF-8 continuation bytes.
    while (start < all.length && (all[start]! & 0xc0) === 0x80) start += 1;
    return all.subarray(start).toString("utf8");
  }
}
