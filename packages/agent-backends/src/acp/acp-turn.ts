import { errorMessage } from "@deckhand/errors";
import type { AgentEvent } from "@deckhand/wire";
import type { PromptInput } from "../backend.ts";
import type { AcpBackendLogger } from "./acp-redaction.ts";

/**
 * One prompt to an ACP agent, from `prompt()` until its `turn_end`: the events it delivers, the
 * answer text it gathers, and how far a cancel got.
 */
export class AcpTurn {
  readonly messageId: string;
  /** The turn's answer text, redacted, as the agent streamed it. */
  text = "";
  cancelRequested: boolean;
  /** Set when cancel had to stop the process: its exit is then not a crash. */
  stoppedByCancel = false;
  cancelling: Promise<void> | null = null;
  /** Resolves once `prompt()` has returned (or thrown). */
  readonly finished: Promise<void>;
  /** The tool calls announced in this turn, so a permission request can announce the others. */
  readonly announced = new Set<string>();
  readonly #onEvent: PromptInput["onEvent"];
  readonly #logger: AcpBackendLogger;
  /** Events are delivered one at a time, in the order they were produced. */
  #queue: Promise<void> = Promise.resolve();
  #finish: () => void = () => {};

  constructor(input: PromptInput, logger: AcpBackendLogger) {
    this.messageId = input.messageId;
    this.#onEvent = input.onEvent;
    this.#logger = logger;
    this.cancelRequested = input.signal?.aborted === true;
    this.finished = new Promise((resolve) => {
      this.#finish = resolve;
    });
  }

  /** Queues `event` behind those before it; a consumer that fails does not end the turn. */
  deliver(event: AgentEvent): void {
    this.#queue = this.#queue.then(async () => {
      try {
        await this.#onEvent(event);
      } catch (error) {
        this.#logger.warn("an event consumer failed; the turn goes on", {
          event: event.type,
          error: errorMessage(error),
        });
      }
    });
  }

  /** Resolves once every event queued so far has been delivered. */
  delivered(): Promise<void> {
    return this.#queue;
  }

  /** Lets notifications already read reach the queue, then waits until they are delivered. */
  async settle(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    await this.#queue;
  }

  finish(): void {
    this.#finish();
  }
}
