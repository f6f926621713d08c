/** One server-sent event: its `event:` name ("message" when it named none) and its data. */
export interface SseMessage {
  event: string;
  data: string;
}

/**
 * An incremental server-sent-events decoder, small on purpose: the model client needs only
 * event names and data. Chunks may split a line, a CRLF pair or a UTF-8 character anywhere.
 * (@deckhand/model-proxy has a fuller parser; this package does not depend on the proxy.)
 */
export class SseDecoder {
  readonly #decoder = new TextDecoder("utf-8");
  #buffer = "";
  #event = "";
  #data: string[] = [];
  #hasData = false;

  /** Feeds bytes; returns the events they completed. */
  push(chunk: Uint8Array | string): SseMessage[] {
    const text = typeof chunk === "string" ? chunk : this.#decoder.decode(chunk, { stream: true });
    return this.#consume(text, false);
  }

  /** Ends the stream; an event without its closing blank line is dropped, as the spec says. */
  end(): SseMessage[] {
    const messages = this.#consume(this.#decoder.decode(), true);
    this.#buffer = "";
    this.#reset();
    return messages;
  }

  #consume(text: string, final: boolean): SseMessage[] {
    this.#buffer += text;
    const messages: SseMessage[] = [];
    const lineBreak = /\r\n|\r|\n/g;
    let start = 0;
    for (let match = lineBreak.exec(this.#buffer); match; match = lineBreak.exec(this.#buffer)) {
      // A CR at the very end may be the first half of a CRLF still in flight.
      if (!final && match[0] === "\r" && match.index === this.#buffer.length - 1) break;
      const message = this.#line(this.#buffer.slice(start, match.index));
      if (message) messages.push(message);
      start = match.index + match[0].length;
    }
    this.#buffer = this.#buffer.slice(start);
    return messages;
  }

  #line(line: string): SseMessage | undefined {
    if (line.length === 0) {
      const message = this.#hasData
        ? { event: this.#event || "message", data: this.#data.join("\n") }
        : undefined;
      this.#reset();
      return message;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") {
      this.#data.push(value);
      this.#hasData = true;
    } else if (field === "event") {
      this.#event = value;
    }
    return undefined;
  }

  #reset(): void {
    this.#event = "";
    this.#data = [];
    this.#hasData = false;
  }
}
