import type { AgentBackend, AgentPoolKey } from "@deckhand/agent-backends";
import type { DbHandle } from "@deckhand/db";
import type { AnswerPermissionRequest } from "@deckhand/wire";
import type { Logger } from "pino";
import { z } from "zod";
import type { SessionStore } from "../store/session-store.ts";
import { type TurnMessages, type TurnRef, turnOf } from "./turn-messages.ts";

/** NOTIFY channel for cancel and permission answers: whichever process runs the agent acts. */
export const AGENT_CONTROL_CHANNEL = "deckhand_agent_control";

/** At most this many of an agent's unfinished turns are cancelled by one request. */
const MAX_CANCELLED_TURNS = 100;

const ControlMessageSchema = z.discriminatedUnion("action", [
  z.object({
    action: z.literal("cancel"),
    session_id: z.string(),
    agent: z.string(),
    /** The assistant messages whose turns are cancelled (running ones stop; others never start). */
    message_ids: z.array(z.string()),
  }),
  z.object({
    action: z.literal("permission"),
    session_id: z.string(),
    agent: z.string(),
    request_id: z.string(),
    outcome: z.enum(["allow_once", "allow_always", "reject_once", "reject_always", "cancelled"]),
  }),
]);
type ControlMessage = z.infer<typeof ControlMessageSchema>;

/** A turn this process runs, from its message's insert to its finish. */
export interface LiveTurn {
  turn: TurnRef;
  /** The prompt's signal: aborted by a cancel, or by the server stopping the turn. */
  signal: AbortSignal;
  /** The server, not a person, stopped the turn (shutting down, or the task was taken away). */
  readonly interrupted: boolean;
  /** The turn is over: it is no longer live here. */
  release(): void;
}

export interface TurnControlOptions {
  database: DbHandle;
  store: SessionStore;
  messages: TurnMessages;
  /** The live backend of (session, agent), if this process runs one. */
  backendOf(key: AgentPoolKey): Promise<AgentBackend | undefined>;
  logger: Logger;
}

interface Tracked {
  turn: TurnRef;
  controller: AbortController;
  interrupted: boolean;
}

/**
 * Turn control: cancelling turns and answering agents' permission requests, wherever the agent
 * runs. Requests are recorded (a cancel on the turn's message) and then told to every process on
 * a NOTIFY channel; the process running the turn or the agent acts on them.
 */
export class TurnControl {
  readonly #options: TurnControlOptions;
  readonly #live = new Map<string, Tracked>();
  #unlisten: (() => Promise<void>) | null = null;
  #stopping = false;

  constructor(options: TurnControlOptions) {
    this.#options = options;
  }

  async start(): Promise<void> {
    this.#unlisten = await this.#options.database.listen(AGENT_CONTROL_CHANNEL, (payload) => {
      let message: ControlMessage;
      try {
        message = ControlMessageSchema.parse(JSON.parse(payload));
      } catch {
        return;
      }
      void this.#act(message).catch((error: unknown) =>
        this.#options.logger.warn({ err: error, action: message.action }, "agent control failed"),
      );
    });
  }

  /** Stops listening and interrupts every turn still running here. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#unlisten?.();
    this.#unlisten = null;
    for (const tracked of this.#live.values()) this.#interrupt(tracked);
  }

  /**
   * Makes a turn live here until `release`: a cancel aborts its signal, and so does the task's
   * signal or the server stopping, which also marks it interrupted.
   */
  track(turn: TurnRef, taskSignal: AbortSignal | undefined): LiveTurn {
    const tracked: Tracked = { turn, controller: new AbortController(), interrupted: false };
    this.#live.set(turn.messageId, tracked);
    const onTaskAbort = () => this.#interrupt(tracked);
    if (taskSignal?.aborted || this.#stopping) onTaskAbort();
    else taskSignal?.addEventListener("abort", onTaskAbort, { once: true });
    return {
      turn,
      signal: tracked.controller.signal,
      get interrupted() {
        return tracked.interrupted;
      },
      release: () => {
        taskSignal?.removeEventListener("abort", onTaskAbort);
        this.#live.delete(turn.messageId);
      },
    };
  }

  /** Whether the turn was cancelled: here (its signal), or by any process (its message row). */
  async cancelRequested(live: LiveTurn): Promise<boolean> {
    if (live.signal.aborted) return true;
    return (await this.#options.messages.cancelRecorded(live.turn)) || live.signal.aborted;
  }

  /**
   * Cancels the agent's unfinished turns in the session, wherever they run. Each is recorded on
   * its message first, so it holds across processes and before the turn starts: a turn not
   * started yet ends `cancelled` now and never prompts the agent; a started one is marked, and
   * the process running it (told by NOTIFY) stops it, or the turn sees the mark before it
   * prompts.
   */
  async cancel(sessionId: string, agent: string): Promise<void> {
    const queued = await this.#options.store.turnTasks.unfinished(
      sessionId,
      agent,
      MAX_CANCELLED_TURNS,
    );
    const messageIds: string[] = [];
    for (const payload of queued) {
      const turn = turnOf(payload);
      messageIds.push(turn.messageId);
      await this.#options.messages.cancel(turn);
    }
    await this.#publish({
      action: "cancel",
      session_id: sessionId,
      agent,
      message_ids: messageIds,
    });
  }

  async answerPermission(
    sessionId: string,
    agent: string,
    requestId: string,
    answer: AnswerPermissionRequest,
  ): Promise<void> {
    await this.#publish({
      action: "permission",
      session_id: sessionId,
      agent,
      request_id: requestId,
      outcome: answer.outcome,
    });
  }

  async #publish(message: ControlMessage): Promise<void> {
    await this.#options.database.notify(AGENT_CONTROL_CHANNEL, JSON.stringify(message));
  }

  async #act(message: ControlMessage): Promise<void> {
    if (message.action === "cancel") {
      const cancelled = new Set(message.message_ids);
      for (const { turn, controller } of this.#live.values()) {
        if (
          turn.sessionId === message.session_id &&
          turn.agent === message.agent &&
          cancelled.has(turn.messageId)
        ) {
          controller.abort();
        }
      }
      return;
    }
    const backend = await this.#options.backendOf({
      sessionId: message.session_id,
      agent: message.agent,
    });
    if (!backend) return;
    await backend.respondToPermission({ requestId: message.request_id, outcome: message.outcome });
  }

  #interrupt(tracked: Tracked): void {
    if (tracked.controller.signal.aborted) return;
    tracked.interrupted = true;
    tracked.controller.abort();
  }
}
