import { errorMessage } from "@deckhand/errors";
import { redactSecrets } from "@deckhand/secrets";
import {
  type AgentEvent,
  type CollectedPart,
  type PartChanges,
  PartCollector,
} from "@deckhand/wire";
import type { Logger } from "pino";
import type { SessionEventWriter } from "../store/session-events.ts";
import type { SessionStore } from "../store/session-store.ts";
import type { TurnOutcome, TurnRef } from "./turn-messages.ts";

/**
 * While text or reasoning streams, parts are stored at most this often (with the event that
 * comes after the interval); any other event stores them at once. The session's event log has
 * every delta as it came.
 */
const PART_FLUSH_MS = 200;

/**
 * What one turn streams: its events go to the session's log in order, batched while a write is
 * in flight (group commit), so an agent streaming deltas is not held to one transaction per
 * delta. The message's parts commit with the events they come from, so a message read mid-turn
 * holds what was streamed; a batch of deltas alone stores them every PART_FLUSH_MS rather than
 * rewriting a growing text.
 */
export class TurnStream {
  readonly #turn: TurnRef;
  readonly #logger: Logger;
  readonly #collector = new PartCollector();
  readonly #writer: SessionEventWriter<AgentEvent>;
  /** The turn's end, held back to commit with the message's end (`takeHeld`). */
  #held: AgentEvent[] = [];
  #writeFailed = false;
  #storedAt = 0;

  constructor(store: SessionStore, turn: TurnRef, logger: Logger) {
    this.#turn = turn;
    this.#logger = logger;
    this.#writer = store.eventWriter<AgentEvent>(turn.sessionId, {
      onBatch: async (transaction, entries) => {
        let onlyDeltas = true;
        for (const { event } of entries) {
          this.#collector.add(event);
          if (event.type !== "text" && event.type !== "reasoning") onlyDeltas = false;
        }
        if (onlyDeltas && Date.now() - this.#storedAt < PART_FLUSH_MS) return;
        this.#storedAt = Date.now();
        await transaction.messages.storePartChanges(turn.messageId, this.#collector.takeChanges());
      },
    });
  }

  /**
   * Streams an event of the turn; waits only when the writer is far ahead of the database. A
   * `turn_end` is held back: nothing waits on it but the turn's `turn_finished`, and the two
   * then commit with the message's end in one statement (`takeHeld`), unless anything is
   * appended or flushed before, which stores it first.
   */
  emit = (event: AgentEvent): Promise<void> => {
    if (event.type === "turn_end") {
      this.#held.push(event);
      return Promise.resolve();
    }
    // Both are queued now, in order (the writer queues synchronously): no await in between.
    const released = this.#release();
    const appended = this.#writer.append(this.#turn.chatId, event);
    return Promise.all([released, appended]).then(() => {});
  };

  /** Waits until every event so far is stored: before anything else is appended to the log. */
  async flush(): Promise<void> {
    await this.#release();
    await this.settle();
  }

  /** Waits until every event so far is stored, but for a held `turn_end`. */
  async settle(): Promise<void> {
    try {
      await this.#writer.flush();
    } catch (error) {
      this.#writeFailed = true;
      throw error;
    }
  }

  /**
   * What the message's end stores of its parts, once the stream is settled: the changes since
   * the last batch stored them (each part whole, redacted), or every part when a write failed
   * (what was stored is then unknown).
   */
  partsToStore(): CollectedPart[] | PartChanges {
    const changes = this.#collector.takeChanges();
    return this.#writeFailed ? this.#collector.parts : changes;
  }

  /**
   * The held events, which the caller now stores (the message's end does); the writer must be
   * settled first, so they follow everything streamed before them.
   */
  takeHeld(): AgentEvent[] {
    const held = this.#held;
    this.#held = [];
    for (const event of held) this.#collector.add(event);
    return held;
  }

  /** Queues the held events on the writer, before anything appended after this call. */
  #release(): Promise<void> {
    if (this.#held.length === 0) return Promise.resolve();
    const held = this.#held;
    this.#held = [];
    return Promise.all(held.map((event) => this.#writer.append(this.#turn.chatId, event))).then(
      () => {},
    );
  }

  /** The message's parts as the events streamed so far make them. */
  get parts(): CollectedPart[] {
    return this.#collector.parts;
  }

  /** The last error the agent streamed, if any. */
  get lastError(): string | null {
    return this.#collector.lastError;
  }

  /**
   * The turn failed: the user sees why (an error event and the turn's end). It is not retried:
   * an agent may have acted already.
   */
  async fail(error: unknown): Promise<TurnOutcome> {
    const { sessionId, agent, messageId } = this.#turn;
    const reason = redactSecrets(errorMessage(error));
    this.#logger.warn({ err: error, sessionId, agent }, "agent turn failed");
    await this.emit({ type: "error", message_id: messageId, message: reason }).catch(() => {});
    await this.emit({ type: "turn_end", message_id: messageId, stop_reason: "error" }).catch(
      () => {},
    );
    return { status: "failed", error: reason };
  }
}
