import { SseEventFilter } from "@deckhand/sse";
import type { UsageAccumulator } from "./usage.ts";

export interface BodyObserverOptions {
  contentType: string;
  /** Non-streaming bodies up to this size are parsed for usage; larger ones count bytes only. */
  maxUsageBodyBytes: number;
  counts: UsageAccumulator;
}

/**
 * Watches an upstream body go by, counting its bytes and reading usage from it, without holding
 * on to it: SSE is scanned incrementally and only events that mention usage are parsed; a JSON
 * body is kept (up to a cap) only to be parsed once it ends.
 */
export class BodyObserver {
  bytes = 0;
  readonly #events: SseEventFilter | undefined;
  readonly #jsonChunks: Uint8Array[] | undefined;
  readonly #options: BodyObserverOptions;

  constructor(options: BodyObserverOptions) {
    this.#options = options;
    const streaming = options.contentType.includes("text/event-stream");
    // Most events are deltas; only the ones that mention usage are worth parsing: `"usage"`
    // (OpenAI, Anthropic) or `"usageMetadata"` (Gemini).
    this.#events = streaming ? new SseEventFilter('"usage') : undefined;
    this.#jsonChunks = !streaming && options.contentType.includes("json") ? [] : undefined;
  }

  chunk(chunk: Uint8Array): void {
    this.bytes += chunk.byteLength;
    if (this.#events) this.#observeEvents(this.#events.push(chunk));
    else if (this.#jsonChunks && this.bytes <= this.#options.maxUsageBodyBytes) {
      this.#jsonChunks.push(chunk);
    }
  }

  /** The body ended normally: parse what only makes sense whole. */
  end(): void {
    if (this.#events) this.#observeEvents(this.#events.end());
    if (this.#jsonChunks && this.bytes <= this.#options.maxUsageBodyBytes) {
      try {
        this.#options.counts.observe(JSON.parse(Buffer.concat(this.#jsonChunks).toString("utf8")));
      } catch {
        // An upstream answering invalid JSON still gets its bytes counted.
      }
    }
  }

  #observeEvents(events: { data: string }[]): void {
    for (const event of events) {
      try {
        this.#options.counts.observe(JSON.parse(event.data));
      } catch {
        // Not JSON: nothing to count.
      }
    }
  }
}
