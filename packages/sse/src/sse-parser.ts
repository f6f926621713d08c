/** One server-sent event, as the EventSource specification dispatches it. */
export interface SseEvent {
  /** The `event:` field, or "message" when the event named none. */
  event: string;
  data: string;
  id?: string;
}

/**
 * An incremental server-sent-events parser. Chunks may split a line, a CRLF pair or a UTF-8
 * character anywhere; the events are the same however the bytes were cut.
 */
export class SseParser {
  readonly #decoder = new TextDecoder("utf-8");
  #pending = "";
  /** The previous chunk ended in CR, so an LF starting this one belongs to that line break. */
  #skipLeadingLineFeed = false;
  #event = "";
  #data: string[] = [];
  #hasData = false;
  #id: string | undefined;

  /** Feeds bytes (or already-decoded text); returns the events they completed. */
  push(chunk: Uint8Array | string): SseEvent[] {
    const text = typeof chunk === "string" ? chunk : this.#decoder.decode(chunk, { stream: true });
    return this.#consume(text);
  }

  /** Ends the stream. A trailing event without its blank line is dropped, as the spec says. */
  end(): SseEvent[] {
    const events = this.#consume(this.#decoder.decode());
    this.#pending = "";
    this.#resetEvent();
    return events;
  }

  #consume(incoming: string): SseEvent[] {
    let text = incoming;
    if (this.#skipLeadingLineFeed && text.length > 0) {
      if (text.charCodeAt(0) === 10) text = text.slice(1);
      this.#skipLeadingLineFeed = false;
    }
    const buffer = this.#pending + text;
    const events: SseEvent[] = [];
    let start = 0;
    // Each search result is kept until the scan passes it, so a chunk of many LF-only lines
    // is not rescanned for a CR once per line.
    let lineFeed = -2;
    let carriageReturn = -2;
    for (;;) {
      if (lineFeed !== -1 && lineFeed < start) lineFeed = buffer.indexOf("\n", start);
      if (carriageReturn !== -1 && carriageReturn < start) {
        carriageReturn = buffer.indexOf("\r", start);
      }
      let end: number;
      if (lineFeed === -1 && carriageReturn === -1) break;
      if (carriageReturn === -1 || (lineFeed !== -1 && lineFeed < carriageReturn)) end = lineFeed;
      else end = carriageReturn;
      const line = buffer.slice(start, end);
      if (buffer.charCodeAt(end) === 13) {
        if (end + 1 === buffer.length) {
          // A CR at the very end: the LF that may complete it has not arrived yet.
          this.#skipLeadingLineFeed = true;
          start = end + 1;
        } else {
          start = buffer.charCodeAt(end + 1) === 10 ? end + 2 : end + 1;
        }
      } else {
        start = end + 1;
      }
      const event = this.#line(line);
      if (event) events.push(event);
    }
    this.#pending = buffer.slice(start);
    return events;
  }

  #line(line: string): SseEvent | undefined {
    if (line.length === 0) {
      const event = this.#hasData
        ? {
            event: this.#event || "message",
            data: this.#data.join("\n"),
            ...(this.#id === undefined ? {} : { id: this.#id }),
          }
        : undefined;
      this.#resetEvent();
      return event;
    }
    if (line.charCodeAt(0) === 58) return undefined; // ":" starts a comment
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === "data") {
      this.#data.push(value);
      this.#hasData = true;
    } else if (field === "event") {
      this.#event = value;
    } else if (field === "id" && !value.includes("\0")) {
      this.#id = value;
    }
    return undefined;
  }

  #resetEvent(): void {
    this.#event = "";
    this.#data = [];
    this.#hasData = false;
  }
}

const LINE_FEED = 10;
const CARRIAGE_RETURN = 13;
const BLANK_LINE = Buffer.from("\n\n");
// Bytes by how often they occur in JSON carrying English text, most common first; any byte not
// listed counts as rarer than all of them.
const COMMON_BYTES = ' "etaoinsrhldcumfpywgbvk_:,.{}0123456789';
const commonness = (byte: number): number => {
  const rank = COMMON_BYTES.indexOf(String.fromCharCode(byte));
  return rank === -1 ? COMMON_BYTES.length : rank;
};

/**
 * Picks out the events that mention `needle` (e.g. `"usage`) from an SSE byte stream without
 * parsing the rest. On LF-only streams (what the providers send) it works on raw bytes with
 * native searches, looking at each byte once: the bytes up to the last blank line form complete
 * events, and only when they contain the needle are they decoded and parsed. A CR anywhere
 * switches it to the full parser for the rest of the stream, so the answer is always that of
 * `SseParser`. The needle must not contain a line break.
 *
 * A chunk with no event to hand on costs no allocation: the bytes of the event still arriving
 * are kept as references to the chunks they lie in (the first from an offset), not as views.
 */
export class SseEventFilter {
  readonly #needle: Buffer;
  readonly #needleText: string;
  /**
   * The chunks holding the bytes after the last complete event (the start of an event still
   * arriving): all of each, except the first, which counts from `#carryStart`.
   */
  readonly #carry: Buffer[] = [];
  #carryStart = 0;
  /** Whether the carried bytes contain the needle, so they are never searched again. */
  #carryMentions = false;
  /** The last few bytes seen (`#tailLength` of them), to find a needle cut across two chunks. */
  readonly #tail: Uint8Array;
  #tailLength = 0;
  #lastByte = -1;
  #fallback: SseParser | undefined;
  /** Which of the needle's bytes to look for first: the one least common in text and JSON. */
  readonly #anchor: number;
  /** The needle from its anchor on: what is searched for natively. */
  readonly #rareTail: Buffer;

  constructor(needle: string) {
    this.#needle = Buffer.from(needle, "utf8");
    this.#needleText = needle;
    let anchor = 0;
    for (let index = 1; index < this.#needle.length; index += 1) {
      if (commonness(this.#needle[index]!) > commonness(this.#needle[anchor]!)) anchor = index;
    }
    this.#anchor = anchor;
    this.#rareTail = this.#needle.subarray(anchor);
    this.#tail = new Uint8Array(Math.max(0, this.#needle.length - 1));
  }

  /**
   * The first whole occurrence of the needle in `bytes` at or after `from`, or -1. Searches
   * natively for the needle's tail from its rarest byte on (for `"usage` that is `ge`: the
   * native search is a `memchr` for its first byte, so the rarer that byte the fewer restarts),
   * then checks the bytes before each hit. Measured on model-shaped text this is as fast as one
   * native search for the whole needle can be: `Buffer.indexOf('"usage')` stops at every quote
   * of the JSON and took five to eight times as long.
   */
  #find(bytes: Buffer, from: number): number {
    const needle = this.#needle;
    const anchor = this.#anchor;
    for (let at = bytes.indexOf(this.#rareTail, from + anchor); at !== -1; ) {
      const start = at - anchor;
      let matched = true;
      for (let index = 0; index < anchor; index += 1) {
        if (bytes[start + index] !== needle[index]) {
          matched = false;
          break;
        }
      }
      if (matched) return start;
      at = bytes.indexOf(this.#rareTail, at + 1);
    }
    return -1;
  }

  /** Feeds bytes; returns the completed events whose text contained the needle. */
  push(chunk: Uint8Array): SseEvent[] {
    if (this.#fallback) return this.#keep(this.#fallback.push(chunk));
    // Node's streams hand over Buffers already; a view is made only for other byte arrays.
    const bytes =
      chunk instanceof Buffer
        ? chunk
        : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (bytes.length === 0) return [];
    if (bytes.includes(CARRIAGE_RETURN)) return this.#fallBack(bytes);
    // A needle has no line break, so each occurrence lies inside one event: the first one's
    // position says whether the complete events mention it; the rest is short and searched apart.
    const straddles = this.#straddles(bytes);
    const first = this.#find(bytes, 0);
    let boundary = bytes.lastIndexOf(BLANK_LINE);
    if (boundary !== -1) boundary += 2;
    // The carry ends with the previous chunk, so its last byte says whether this LF ends an event.
    else if (this.#carry.length > 0 && this.#lastByte === LINE_FEED && bytes[0] === LINE_FEED) {
      boundary = 1;
    }
    this.#lastByte = bytes[bytes.length - 1]!;
    if (boundary === -1) {
      if (this.#carry.length === 0) this.#carryStart = 0;
      this.#carry.push(bytes);
      this.#carryMentions ||= straddles || first !== -1;
      return [];
    }
    const mentions = this.#carryMentions || straddles || (first !== -1 && first < boundary);
    const events = mentions ? this.#completeEvents(bytes, boundary) : [];
    this.#carry.length = 0;
    if (boundary < bytes.length) {
      this.#carry.push(bytes);
      this.#carryStart = boundary;
    }
    this.#carryMentions = first >= boundary || (first !== -1 && this.#find(bytes, boundary) !== -1);
    return events;
  }

  /** Ends the stream; an event never closed by a blank line is dropped, as in `SseParser`. */
  end(): SseEvent[] {
    if (this.#fallback) return this.#keep(this.#fallback.end());
    this.#carry.length = 0;
    this.#carryMentions = false;
    return [];
  }

  /** The bytes carried from earlier chunks, as one array from the start of their event. */
  #carried(): Buffer[] {
    return this.#carry.map((carried, index) =>
      index === 0 ? carried.subarray(this.#carryStart) : carried,
    );
  }

  /**
   * The events the carried bytes and `bytes` up to `boundary` complete. That region starts and
   * ends on event boundaries, so a fresh parser sees it whole.
   */
  #completeEvents(bytes: Buffer, boundary: number): SseEvent[] {
    const parser = new SseParser();
    const region = Buffer.concat([...this.#carried(), bytes.subarray(0, boundary)]);
    return this.#keep([...parser.push(region), ...parser.end()]);
  }

  /** A CR was seen: the full parser reads the rest of the stream, from the carried bytes on. */
  #fallBack(bytes: Buffer): SseEvent[] {
    this.#fallback = new SseParser();
    const carried = Buffer.concat(this.#carried());
    this.#carry.length = 0;
    return this.#keep([...this.#fallback.push(carried), ...this.#fallback.push(bytes)]);
  }

  /**
   * Whether the needle starts in earlier bytes and ends in these; keeps the new tail. Compares
   * in place, so a chunk costs no allocation here.
   */
  #straddles(bytes: Buffer): boolean {
    const needle = this.#needle;
    const tail = this.#tail;
    const kept = this.#tailLength;
    let found = false;
    // `inTail` bytes of the needle end the earlier bytes, the rest starts these.
    for (let inTail = Math.min(kept, needle.length - 1); inTail >= 1 && !found; inTail -= 1) {
      if (needle.length - inTail > bytes.length) continue;
      found = true;
      for (let index = 0; index < needle.length && found; index += 1) {
        const byte = index < inTail ? tail[kept - inTail + index] : bytes[index - inTail];
        found = byte === needle[index];
      }
    }
    // The new tail: the last bytes of the earlier tail and these, copied byte by byte (a few
    // bytes; a subarray to copy them from would cost more than the copy).
    const overlap = tail.length;
    const keep = Math.max(0, Math.min(kept, overlap - bytes.length));
    for (let index = 0; index < keep; index += 1) tail[index] = tail[kept - keep + index]!;
    const taken = Math.min(bytes.length, overlap);
    for (let index = 0; index < taken; index += 1) {
      tail[keep + index] = bytes[bytes.length - taken + index]!;
    }
    this.#tailLength = keep + taken;
    return found;
  }

  #keep(events: SseEvent[]): SseEvent[] {
    return events.filter((event) => event.data.includes(this.#needleText));
  }
}
