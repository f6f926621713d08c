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

/**
 * Picks out the events that mention `needle` (e.g. `"usage"`) from an SSE byte stream without
 * parsing the rest. On LF-only streams (what the providers send) it works on raw bytes with
 * native searches: the bytes up to the last blank line form complete events, and only when they
 * contain the needle are they decoded and parsed. A CR anywhere switches it to the full parser
 * for the rest of the stream, so the answer is always that of `SseParser`.
 */
export class SseEventFilter {
  readonly #needle: Buffer;
  #carry: Buffer[] = [];
  #carryEndsWithLineFeed = false;
  #fallback: SseParser | undefined;

  constructor(needle: string) {
    this.#needle = Buffer.from(needle, "utf8");
  }

  /** Feeds bytes; returns the completed events whose text contained the needle. */
  push(chunk: Uint8Array): SseEvent[] {
    if (this.#fallback) return this.#keep(this.#fallback.push(chunk));
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (bytes.includes(CARRIAGE_RETURN)) {
      this.#fallback = new SseParser();
      const carried = this.#carry;
      this.#carry = [];
      return this.#keep([
        ...this.#fallback.push(Buffer.concat(carried)),
        ...this.#fallback.push(bytes),
      ]);
    }
    let boundary = bytes.lastIndexOf("\n\n");
    if (boundary !== -1) boundary += 2;
    else if (this.#carryEndsWithLineFeed && bytes[0] === LINE_FEED) boundary = 1;
    if (boundary === -1) {
      if (bytes.length > 0) {
        this.#carry.push(bytes);
        this.#carryEndsWithLineFeed = bytes[bytes.length - 1] === LINE_FEED;
      }
      return [];
    }
    const parts = [...this.#carry, bytes.subarray(0, boundary)];
    const rest = bytes.subarray(boundary);
    this.#carry = rest.length > 0 ? [rest] : [];
    this.#carryEndsWithLineFeed = rest.length > 0 && rest[rest.length - 1] === LINE_FEED;
    if (!this.#mentionsNeedle(parts)) return [];
    // The complete region starts and ends on event boundaries, so a fresh parser sees it whole.
    const parser = new SseParser();
    return this.#keep([...parser.push(Buffer.concat(parts)), ...parser.end()]);
  }

  /** Ends the stream; an event never closed by a blank line is dropped, as in `SseParser`. */
  end(): SseEvent[] {
    if (this.#fallback) return this.#keep(this.#fallback.end());
    this.#carry = [];
    return [];
  }

  /** Whether the parts, read as one, contain the needle; without copying them into one. */
  #mentionsNeedle(parts: Buffer[]): boolean {
    const overlap = this.#needle.length - 1;
    // The last bytes seen so far, so a needle cut across parts (however small) is found too.
    let tail = Buffer.alloc(0);
    for (const part of parts) {
      if (part.includes(this.#needle)) return true;
      const joined = Buffer.concat([tail, part.subarray(0, overlap)]);
      if (joined.includes(this.#needle)) return true;
      tail = Buffer.concat([tail, part]).subarray(-overlap);
    }
    return false;
  }

  #keep(events: SseEvent[]): SseEvent[] {
    const needle = this.#needle.toString("utf8");
    return events.filter((event) => event.data.includes(needle));
  }
}
