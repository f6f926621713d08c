import type { AgentBackend } from "@deckhand/agent-backends";
import type { AgentEvent, StopReason } from "@deckhand/wire";
import type { Logger } from "pino";
import { headCommit } from "../git-head.ts";
import { type OpenSession, requireOpenSession } from "../required-rows.ts";
import { ABORTED, type SessionLock } from "../session-lock.ts";
import type { AgentTurnPayload } from "../store/agent-turn-tasks.ts";
import type { SessionStore } from "../store/session-store.ts";
import type { AfterTurn } from "./after-turn.ts";
import type { SessionAgents } from "./session-agents.ts";
import type { LiveTurn, TurnControl } from "./turn-control.ts";
import { INTERRUPTED_ERROR, type TurnMessages, type TurnOutcome, turnOf } from "./turn-messages.ts";
import { TurnStream } from "./turn-stream.ts";

export interface TurnRunnerOptions {
  store: SessionStore;
  /** The session lock, shared with the session domain's git work. */
  lock: SessionLock;
  control: TurnControl;
  agents: SessionAgents;
  messages: TurnMessages;
  afterTurn: AfterTurn;
  logger: Logger;
}

/** How a turn ran inside the session's lock: cancelled before it began, failed, or stopped. */
type LockedRun = "not_started" | TurnOutcome | { stopReason: StopReason };

/** What one turn prompts, and where. */
interface PromptedTurn {
  live: LiveTurn;
  stream: TurnStream;
  text: string;
  model: string | null;
  mode: string | null;
  agentSessionId: string;
  /** Whether the agent had a session here before, to resume. */
  hadPrevious: boolean;
  /** The agent is done (prompted or not): the work after the turn may begin. */
  agentDone(): void;
}

/**
 * Runs one user message's turn, start to finish: its message begins, the agent's backend is
 * prompted in the session's lock with what the turn streams stored as it comes, the work after
 * it is done, and its message ends with what came of it.
 */
export class TurnRunner {
  readonly #options: TurnRunnerOptions;
  readonly #inFlight = new Set<Promise<void>>();

  constructor(options: TurnRunnerOptions) {
    this.#options = options;
  }

  /**
   * Runs the turn of a queued task. `signal` is the task's: when it aborts (the server is
   * stopping) the agent is cancelled and the message ends `cancelled` with the reason
   * `interrupted`.
   */
  async run(payload: AgentTurnPayload, signal: AbortSignal | undefined): Promise<void> {
    const run = this.#run(payload, signal);
    this.#inFlight.add(run);
    try {
      await run;
    } finally {
      this.#inFlight.delete(run);
    }
  }

  /** Waits for the turns running here to end, at most `timeoutMs`. */
  async settle(timeoutMs: number): Promise<void> {
    if (this.#inFlight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.#inFlight]),
      new Promise<void>((resolveWait) => {
        timer = setTimeout(resolveWait, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }

  async #run(payload: AgentTurnPayload, taskSignal: AbortSignal | undefined): Promise<void> {
    const { store, control, messages, logger } = this.#options;
    const turn = turnOf(payload);
    if (!(await messages.begin(turn, payload.user_message_id))) return;
    // The prompt and the session are read at once: neither waits for the other (on PostgreSQL
    // their round trips overlap). A session that is not open fails the turn, as before; its
    // rejection is seen below.
    const sessionRead = requireOpenSession(store, turn.sessionId);
    sessionRead.catch(() => {});
    const text = await this.#promptText(payload.user_message_id);
    const live = control.track(turn, taskSignal);
    const stream = new TurnStream(store, turn, logger);
    let outcome: TurnOutcome;
    try {
      const session = await sessionRead;
      // The session's lock (shared with the session domain): one turn of a session at a time,
      // and no pending change applied or rejected here while it runs.
      const ran = await this.#options.lock.turn(turn.sessionId, live.signal, () =>
        this.#runLocked({ live, stream, session, payload, text }),
      );
      if (ran === ABORTED || ran === "not_started") {
        // Cancelled before it began: the agent never saw the message.
        await stream.emit({
          type: "turn_end",
          message_id: turn.messageId,
          stop_reason: "cancelled",
        });
        outcome = { status: "cancelled" };
      } else {
        outcome = outcomeOf(ran, stream);
      }
    } catch (error) {
      outcome = await stream.fail(error);
    } finally {
      live.release();
    }
    // Stopped by the server rather than a person: a failure it caused is not the agent's.
    if (live.interrupted && outcome.status !== "complete") {
      outcome = { status: "cancelled", error: INTERRUPTED_ERROR, reason: "interrupted" };
    }
    // The parts and the final events must follow everything the turn streamed; the turn's end,
    // held back by the stream, commits with them.
    await stream
      .settle()
      .catch((error: unknown) =>
        logger.warn(
          { err: error, sessionId: turn.sessionId, agent: turn.agent },
          "storing the turn's events failed",
        ),
      );
    const held = stream.takeHeld();
    await messages.finish(turn, outcome, stream.partsToStore(), held);
  }

  /** What the agent is asked: the user's text, after what Deckhand told the chat (if it is new). */
  async #promptText(userMessageId: string): Promise<string> {
    const { text, context } = await this.#options.store.messages.promptOf(userMessageId);
    // An agent new to the chat is told first what Deckhand told it (a taken-over workspace).
    return context === "" ? text : `${context}\n\n---\n\n${text}`;
  }

  /** The turn in the session's lock: the agent's prompt, then the work after it. */
  async #runLocked(turn: {
    live: LiveTurn;
    stream: TurnStream;
    session: OpenSession;
    payload: AgentTurnPayload;
    text: string;
  }): Promise<LockedRun> {
    const { control, store, agents, afterTurn } = this.#options;
    const { live, stream, session, payload } = turn;
    const { sessionId, chatId, agent } = live.turn;
    const worktree = session.worktree;
    // The branch's commit before the agent works: commits it made are folded back after. Read
    // from the files while the cancel check's statement runs.
    const sinceRead = headCommit(worktree.path).catch(() => null);
    if (await control.cancelRequested(live)) return "not_started";
    let stopReason: StopReason | null = null;
    let failure: TurnOutcome | null = null;
    let agentSessionId: string | null = null;
    const since = await sinceRead;
    // The work after the turn starts as soon as the agent is done: its `git status` runs while
    // the agent session's end and what the turn streamed are stored, and the rest once those
    // are (`stored`: false when the turn's events could not be stored, which fails the turn).
    let afterTurnRun: Promise<void> | null = null;
    let tellStored: (stored: boolean) => void = () => {};
    const stored = new Promise<boolean>((resolveStored) => {
      tellStored = resolveStored;
    });
    const startAfterTurn = (rowId: string): Promise<void> =>
      (afterTurnRun ??= afterTurn.run(
        { ...live.turn, worktree, agentSessionId: rowId, since, stream },
        stored,
      ));
    try {
      const agentSession = await store.agentSessions.ensure(sessionId, agent, null);
      agentSessionId = agentSession.id;
      const resumeSessionId =
        agentSession.resumeSessionId ??
        (await store.agentSessions.latestResumeId(sessionId, agent));
      const prompted: PromptedTurn = {
        live,
        stream,
        text: turn.text,
        model: payload.model ?? null,
        mode: payload.mode ?? null,
        agentSessionId: agentSession.id,
        hadPrevious: resumeSessionId !== null,
        agentDone: () => void startAfterTurn(agentSession.id),
      };
      stopReason = await agents.pool.use(
        { sessionId, agent },
        (backend) => this.#prompt(backend, prompted),
        {
          chatId,
          approvalPolicy: session.session.approvalPolicy,
          agentSessionRowId: agentSession.id,
          resumeSessionId,
          worktreePath: worktree.path,
        },
      );
    } catch (error) {
      failure = await stream.fail(error);
    }
    if (agentSessionId !== null) {
      // What the agent streamed is stored before the work after the turn writes; its
      // `turn_end` may wait for the message's end (the work after the turn stores it first if
      // it writes).
      const afterTurnDone = startAfterTurn(agentSessionId);
      try {
        await stream.settle();
      } catch (error) {
        tellStored(false);
        throw error;
      }
      tellStored(true);
      await afterTurnDone;
    }
    return failure ?? { stopReason: stopReason! };
  }

  /** One turn on the (session, agent) backend, inside the session's lock. */
  async #prompt(backend: AgentBackend, turn: PromptedTurn): Promise<StopReason> {
    const { store, agents, control } = this.#options;
    const { live, stream } = turn;
    const { sessionId, chatId, agent, messageId } = live.turn;
    const started = await backend.ensureSession();
    await agents.announce(backend, started, {
      sessionId,
      chatId,
      agent,
      hadPrevious: turn.hadPrevious,
    });
    // The agent session's row is marked while the model access is renewed and a cancel looked
    // for (on PostgreSQL their round trips overlap); its failure fails the turn, as before.
    const marked = store.agentSessions.markActive(turn.agentSessionId, started.agentSessionId);
    marked.catch(() => {});
    await agents.renewModelAccess({ sessionId, agent });
    const cancelled = await control.cancelRequested(live);
    await marked;
    let stopReason: StopReason;
    // A cancel that came while the agent was starting or the turn waited: no prompt at all.
    if (cancelled) {
      await stream.emit({ type: "turn_end", message_id: messageId, stop_reason: "cancelled" });
      stopReason = "cancelled";
    } else {
      stopReason = await this.#promptUntilCancelled(backend, live, {
        messageId,
        text: turn.text,
        onEvent: stream.emit,
        model: turn.model,
        mode: turn.mode,
      });
    }
    turn.agentDone();
    await store.agentSessions.markTurnEnded(
      turn.agentSessionId,
      backend.health().status === "crashed" ? "crashed" : "idle",
    );
    return stopReason;
  }

  /** Prompts the backend; a cancel of the turn cancels the agent's prompt. */
  async #promptUntilCancelled(
    backend: AgentBackend,
    live: LiveTurn,
    prompt: {
      messageId: string;
      text: string;
      onEvent(event: AgentEvent): Promise<void>;
      model: string | null;
      mode: string | null;
    },
  ): Promise<StopReason> {
    const { sessionId, agent } = live.turn;
    const signal = live.signal;
    // Backends that watch the signal cancel themselves; cancel() covers those that do not.
    const onAbort = () => {
      void backend
        .cancel()
        .catch((error: unknown) =>
          this.#options.logger.warn(
            { err: error, sessionId, agent },
            "cancelling the agent failed",
          ),
        );
    };
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      return (await backend.prompt({ ...prompt, signal })).stopReason;
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }
}

/** How a turn that ran in the lock ended, as its message stores it. */
function outcomeOf(ran: TurnOutcome | { stopReason: StopReason }, stream: TurnStream): TurnOutcome {
  if ("status" in ran) return ran;
  if (ran.stopReason === "cancelled") return { status: "cancelled" };
  if (ran.stopReason === "error") {
    return {
      status: "failed",
      error: stream.lastError ?? "the agent ended the turn with an error",
    };
  }
  return { status: "complete" };
}
