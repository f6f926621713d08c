import { createHash } from "node:crypto";
import {
  type AgentEvent,
  AgentEventSchema,
  type CollectedPart,
  collectParts,
  type PartChanges,
  type SessionEventPayload,
} from "@deckhand/wire";
import type { AgentTurnPayload } from "../store/agent-turn-tasks.ts";
import type { SessionStore, SessionTransaction } from "../store/session-store.ts";

/** What an interrupted turn's message says: the server, not a person, stopped it. */
export const INTERRUPTED_ERROR =
  "interrupted: the server stopped during this turn; send the message again";

/** A deterministic id for the answer to a user message, so a re-run task finds its message. */
export function assistantMessageId(userMessageId: string): string {
  const hex = createHash("sha256").update(`assistant:${userMessageId}`).digest("hex");
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** One turn: an agent answering a user message in a chat of a session. */
export interface TurnRef {
  sessionId: string;
  chatId: string;
  agent: string;
  /** The assistant message that answers (see `assistantMessageId`). */
  messageId: string;
}

/** The turn a queued task runs. */
export function turnOf(payload: AgentTurnPayload): TurnRef {
  return {
    sessionId: payload.session_id,
    chatId: payload.chat_id,
    agent: payload.agent,
    messageId: assistantMessageId(payload.user_message_id),
  };
}

/** What ended a turn, as its message stores it. */
export interface TurnOutcome {
  status: "complete" | "failed" | "cancelled";
  error?: string;
  reason?: "interrupted";
}

/**
 * A turn's assistant message, from its insert (`turn_started`) to its end (`turn_finished`),
 * each with the event that announces it. The message row is also where a cancel is recorded, so
 * that it holds across processes and before the turn starts.
 */
export class TurnMessages {
  readonly #store: SessionStore;

  constructor(store: SessionStore) {
    this.#store = store;
  }

  /**
   * Inserts the turn's message with a `turn_started` event; false when the message exists (a
   * task delivered again, or a turn cancelled before it started), after finishing a message
   * that an earlier run left unfinished.
   */
  async begin(turn: TurnRef, userMessageId: string): Promise<boolean> {
    for (;;) {
      // Most turns are new, so the insert comes first; only a message that is there already is
      // read. The insert and its `turn_started` are one statement: the event is appended only
      // when the insert made the message.
      const started = await this.#store.appendEvents(
        turn.sessionId,
        [
          {
            chatId: turn.chatId,
            event: {
              type: "turn_started",
              chat_id: turn.chatId,
              message_id: turn.messageId,
              user_message_id: userMessageId,
              agent: turn.agent,
            },
          },
        ],
        {
          onlyIf: this.#store.messages.insertStreamingAssistant({
            id: turn.messageId,
            chatId: turn.chatId,
            agentType: turn.agent,
          }),
        },
      );
      const inserted = started.length > 0;
      if (inserted) return true;
      const existing = await this.#store.messages.get(turn.messageId);
      if (existing) {
        // At-least-once delivery: a task run again after a crash finds its message and does not
        // start the turn a second time (its side effects may have happened). Its parts are made
        // again from the session log, which has every event that was streamed.
        if (existing.completedAt === null) {
          await this.finish(
            turn,
            existing.status === "cancelled"
              ? { status: "cancelled" }
              : {
                  status: "failed",
                  error: "the server stopped during this turn; send the message again",
                },
            await this.#partsFromLog(turn),
          );
        }
        return false;
      }
    }
  }

  /**
   * Records a cancel on the turn's message: a turn not started yet gets its message now, ended
   * `cancelled` (its task will find it finished and do nothing); a started one is marked, and
   * ends `cancelled` when it finishes.
   */
  async cancel(turn: TurnRef): Promise<void> {
    await this.#store.transaction(async (transaction) => {
      const inserted = await transaction.messages.insertAssistant({
        id: turn.messageId,
        chatId: turn.chatId,
        agentType: turn.agent,
        status: "cancelled",
      });
      if (inserted) {
        await transaction.appendEvent(turn.sessionId, turn.chatId, {
          type: "turn_finished",
          chat_id: turn.chatId,
          message_id: turn.messageId,
          agent: turn.agent,
          status: "cancelled",
        });
        return;
      }
      await transaction.messages.markCancelled(turn.messageId);
    });
  }

  /** Whether a cancel was recorded on the turn's message (by this process or another). */
  async cancelRecorded(turn: TurnRef): Promise<boolean> {
    return (await this.#store.messages.statusOf(turn.messageId)) === "cancelled";
  }

  /**
   * Ends the message: its status and error, its parts, and a `turn_finished` event, after
   * `before` (the turn's last events, held back to commit here: see `TurnStream`). `parts` is
   * either all of them, rewritten whole (so a secret split across deltas is redacted too), or
   * what changed since the stream last stored them (it stores each part whole, redacted): with
   * nothing changed, the end is one statement.
   */
  async finish(
    turn: TurnRef,
    outcome: TurnOutcome,
    parts: CollectedPart[] | PartChanges,
    before: readonly AgentEvent[] = [],
  ): Promise<void> {
    const finished: SessionEventPayload = {
      type: "turn_finished",
      chat_id: turn.chatId,
      message_id: turn.messageId,
      agent: turn.agent,
      status: outcome.status,
      ...(outcome.reason ? { reason: outcome.reason } : {}),
    };
    const events = [...before, finished].map((event) => ({ chatId: turn.chatId, event }));
    // The message's end and its events in one statement; a message gone (its session deleted
    // meanwhile) gets no events.
    const end = async (queries: SessionStore | SessionTransaction) => {
      await queries.appendEvents(turn.sessionId, events, {
        onlyIf: queries.messages.end(turn.messageId, outcome),
      });
    };
    if (!Array.isArray(parts) && parts.truncateFrom === null && parts.put.length === 0) {
      await end(this.#store);
      return;
    }
    await this.#store.transaction(async (transaction) => {
      if (Array.isArray(parts)) await transaction.messages.rewriteParts(turn.messageId, parts);
      else await transaction.messages.storePartChanges(turn.messageId, parts);
      await end(transaction);
    });
  }

  /** The message's parts as its events in the session log make them. */
  async #partsFromLog(turn: TurnRef): Promise<CollectedPart[]> {
    const payloads = await this.#store.events.payloadsOfMessage(turn.sessionId, turn.messageId);
    return collectParts(
      payloads.flatMap((payload) => {
        const event = AgentEventSchema.safeParse(payload);
        return event.success ? [event.data] : [];
      }),
    );
  }
}
