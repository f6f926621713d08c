import { createHash } from "node:crypto";
import {
  type AgentBackend,
  AgentPool,
  type AgentPoolEntryHealth,
  type AgentPoolKey,
  type AgentSessionContext,
  type BackendHealth,
} from "@deckhand/agent-backends";
import {
  agentSessions,
  type DbHandle,
  messageParts,
  messages,
  sessionEvents,
  type TaskRegistry,
  type Transaction,
  tasks,
} from "@deckhand/db";
import { errorMessage } from "@deckhand/errors";
import type { ProviderService, ResolvedProvider } from "@deckhand/providers";
import { redactSecrets, redactValue } from "@deckhand/secrets";
import {
  type AgentEvent,
  AgentEventSchema,
  type AnswerPermissionRequest,
  type ApprovalPolicyName,
  type CollectedPart,
  collectParts,
  type PartChanges,
  PartCollector,
  type StopReason,
} from "@deckhand/wire";
import { and, asc, eq, gte, inArray, isNull, ne, sql } from "drizzle-orm";
import type { Logger } from "pino";
import { z } from "zod";
import { resolveCommit } from "./git.ts";
import { requireOpenSession } from "./required-rows.ts";
import type { SessionDomain } from "./session-domain.ts";
import { ABORTED } from "./session-lock.ts";
import {
  AGENT_TURN_TASK,
  type AgentTurnPayload,
  AgentTurnPayloadSchema,
} from "./store/agent-turn-tasks.ts";
import {
  appendSessionEvent,
  publishSessionEvent,
  SessionEventWriter,
} from "./store/session-events.ts";
import type { SessionWorktreeRow } from "./store/session-rows.ts";
import { SessionStore } from "./store/session-store.ts";
import { foldAgentCommits } from "./turns/fold-agent-commits.ts";
import type { ModelAccess, ModelAccessLease } from "./turns/model-access.ts";
import { agentSessionJobId } from "./usage-job.ts";

/** NOTIFY channel for cancel and permission answers: whichever process runs the agent acts. */
export const AGENT_CONTROL_CHANNEL = "deckhand_agent_control";

/** The proxy agent type of Deckhand's native agent (the `modelUpstreams` key it uses). */
export const NATIVE_AGENT_TYPE = "deckhand";

/** What an interrupted turn's message says: the server, not a person, stopped it. */
export const INTERRUPTED_ERROR =
  "interrupted: the server stopped during this turn; send the message again";

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

/** What a backend factory gets: the resolved provider and where the backend works. */
export interface BackendRequest {
  agent: string;
  provider: ResolvedProvider;
  context: AgentSessionContext;
  logger: Logger;
  /** When the native agent asks before acting: the session's policy. */
  approvalPolicy: ApprovalPolicyName;
  /** Streams what an agent sends between turns (its slash commands, a mode change). */
  publishIdleEvent(event: AgentEvent): void;
}

export type BackendFactory = (request: BackendRequest) => AgentBackend | Promise<AgentBackend>;

export interface AgentTurnsOptions {
  database: DbHandle;
  /** The session domain whose lock and pending changes the turns use. */
  sessions: Pick<SessionDomain, "lock" | "pendingChanges">;
  providers: Pick<ProviderService, "resolve">;
  /** The model-provider proxy's access for agents, which the server supplies. */
  modelAccess: ModelAccess;
  workspaceAgent: { url: string; token: string | null } | null;
  createBackend: BackendFactory;
  logger: Logger;
  /** Backends unused this long are stopped. Defaults to 15 minutes. */
  idleTimeoutMs?: number;
  /** How often backends are checked for a crash between turns. Defaults to 1 s. */
  healthIntervalMs?: number;
  /**
   * How long `stop` waits for interrupted turns to end their messages before stopping the
   * agents. Defaults to 10 s (an ACP agent gets 5 s to honour a cancel).
   */
  stopTimeoutMs?: number;
}

interface CreateContext {
  chatId: string;
  approvalPolicy: ApprovalPolicyName;
  agentSessionRowId: string;
  resumeSessionId: string | null;
  worktreePath: string;
}

/** A turn this process runs, from its message's insert to its finish. */
interface LiveTurn {
  sessionId: string;
  agent: string;
  messageId: string;
  /** The prompt's signal: aborted by a cancel, or by the server stopping the turn. */
  controller: AbortController;
  /** The server, not a person, stopped the turn (shutting down, or the task was taken away). */
  interrupted: boolean;
}

/**
 * While text or reasoning streams, parts are stored at most this often (with the event that
 * comes after the interval); any other event stores them at once. The session's event log has
 * every delta as it came.
 */
const PART_FLUSH_MS = 200;

/** A deterministic id for the answer to a user message, so a re-run task finds its message. */
export function assistantMessageId(userMessageId: string): string {
  const hex = createHash("sha256").update(`assistant:${userMessageId}`).digest("hex");
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

async function storePartChanges(
  transaction: Transaction,
  messageId: string,
  changes: PartChanges,
): Promise<void> {
  if (changes.truncateFrom !== null) {
    await transaction
      .delete(messageParts)
      .where(
        and(
          eq(messageParts.messageId, messageId),
          gte(messageParts.position, changes.truncateFrom),
        ),
      );
  }
  for (const { position, part } of changes.put) {
    const content = redactValue(part.content);
    await transaction
      .insert(messageParts)
      .values({ messageId, position, kind: part.kind, content })
      .onConflictDoUpdate({
        target: [messageParts.messageId, messageParts.position],
        set: { kind: part.kind, content },
      });
  }
}

/** What ended a turn, as `#finish` stores it. */
interface TurnOutcome {
  status: "complete" | "failed" | "cancelled";
  error?: string;
  reason?: "interrupted";
}

/**
 * Runs agent turns: the `agent_turn` task handler, the pool of live backends, and the control
 * channel that carries cancel requests and permission answers to the process running the agent.
 */
export class AgentTurns {
  readonly pool: AgentPool<CreateContext>;
  readonly #options: AgentTurnsOptions;
  readonly #logger: Logger;
  /** The model access of each live backend, released when the backend goes. */
  readonly #leases = new Map<string, ModelAccessLease>();
  /** The model-usage job id of each live backend, announced so clients can read its usage. */
  readonly #jobIds = new Map<string, string>();
  /** The `agent_sessions` row each live backend was created for. */
  readonly #rows = new Map<string, string>();
  /** The agent session id last announced for each backend (a restarted agent may get a new one). */
  readonly #announced = new WeakMap<AgentBackend, string>();
  readonly #live = new Map<string, LiveTurn>();
  readonly #inFlight = new Set<Promise<void>>();
  #unlisten: (() => Promise<void>) | null = null;
  #stopping = false;

  constructor(options: AgentTurnsOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: "agent-turns" });
    this.pool = new AgentPool<CreateContext>({
      create: (key, context) => this.#createBackend(key.sessionId, key.agent, context),
      onDisposed: async (key) => {
        const id = `${key.sessionId}/${key.agent}`;
        const lease = this.#leases.get(id);
        const rowId = this.#rows.get(id);
        this.#leases.delete(id);
        this.#jobIds.delete(id);
        this.#rows.delete(id);
        if (lease) await lease.release().catch(() => {});
        // The agent is gone: its row is history now, and the next turn makes a new one that
        // resumes the agent's own session from this row's resume id.
        if (rowId) {
          await options.database.db
            .update(agentSessions)
            .set({ status: "closed", updatedAt: new Date() })
            .where(and(eq(agentSessions.id, rowId), ne(agentSessions.status, "active")))
            .catch((error: unknown) =>
              this.#logger.warn({ err: error, ...key }, "could not mark the agent session closed"),
            );
        }
      },
      onCrashed: (key, health) => this.#crashedBetweenTurns(key, health),
      idleTimeoutMs: options.idleTimeoutMs ?? 15 * 60_000,
      ...(options.healthIntervalMs !== undefined
        ? { healthIntervalMs: options.healthIntervalMs }
        : {}),
    });
  }

  register(registry: TaskRegistry): void {
    registry.register<AgentTurnPayload>(AGENT_TURN_TASK, {
      schema: AgentTurnPayloadSchema,
      handle: (payload, context) => this.runTurn(payload, { signal: context.signal }),
    });
  }

  async start(): Promise<void> {
    this.#unlisten = await this.#options.database.listen(AGENT_CONTROL_CHANNEL, (payload) => {
      let message: ControlMessage;
      try {
        message = ControlMessageSchema.parse(JSON.parse(payload));
      } catch {
        return;
      }
      void this.#control(message).catch((error: unknown) =>
        this.#logger.warn({ err: error, action: message.action }, "agent control failed"),
      );
    });
  }

  /**
   * Interrupts the turns still running here (their messages end `cancelled` with the reason
   * `interrupted`), waits a bounded time for them to finish, then stops every agent.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#unlisten?.();
    this.#unlisten = null;
    for (const live of this.#live.values()) this.#interrupt(live);
    if (this.#inFlight.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...this.#inFlight]),
        new Promise<void>((resolveWait) => {
          timer = setTimeout(resolveWait, this.#options.stopTimeoutMs ?? 10_000);
        }),
      ]);
      clearTimeout(timer);
    }
    await this.pool.shutdown();
  }

  health(): Promise<AgentPoolEntryHealth[]> {
    return this.pool.health();
  }

  /**
   * Cancels the agent's unfinished turns in the session, wherever they run. Each is recorded on
   * its message first, so it holds across processes and before the turn starts: a turn not
   * started yet ends `cancelled` now and never prompts the agent; a started one is marked, and
   * the process running it (told by NOTIFY) stops it, or the turn sees the mark before it
   * prompts.
   */
  async cancel(sessionId: string, agent: string): Promise<void> {
    const db = this.#options.database.db;
    const queued = await db
      .select({ payload: tasks.payload })
      .from(tasks)
      .where(
        and(
          eq(tasks.type, AGENT_TURN_TASK),
          inArray(tasks.status, ["pending", "running"]),
          sql`${tasks.payload}->>'session_id' = ${sessionId}`,
          sql`${tasks.payload}->>'agent' = ${agent}`,
        ),
      )
      .orderBy(asc(tasks.id))
      .limit(MAX_CANCELLED_TURNS);
    const messageIds: string[] = [];
    for (const row of queued) {
      const parsed = AgentTurnPayloadSchema.safeParse(row.payload);
      if (!parsed.success) continue;
      const payload = parsed.data;
      const messageId = assistantMessageId(payload.user_message_id);
      messageIds.push(messageId);
      await db.transaction(async (transaction) => {
        const inserted = await transaction
          .insert(messages)
          .values({
            id: messageId,
            chatId: payload.chat_id,
            role: "assistant",
            agentType: agent,
            status: "cancelled",
            completedAt: new Date(),
          })
          .onConflictDoNothing()
          .returning({ id: messages.id });
        if (inserted.length > 0) {
          // The task will find its message finished and do nothing.
          await appendSessionEvent(transaction, sessionId, payload.chat_id, {
            type: "turn_finished",
            chat_id: payload.chat_id,
            message_id: messageId,
            agent,
            status: "cancelled",
          });
          return;
        }
        await transaction
          .update(messages)
          .set({ status: "cancelled" })
          .where(and(eq(messages.id, messageId), isNull(messages.completedAt)));
      });
    }
    await this.#publishControl({
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
    await this.#publishControl({
      action: "permission",
      session_id: sessionId,
      agent,
      request_id: requestId,
      outcome: answer.outcome,
    });
  }

  async #publishControl(message: ControlMessage): Promise<void> {
    await this.#options.database.notify(AGENT_CONTROL_CHANNEL, JSON.stringify(message));
  }

  async #control(message: ControlMessage): Promise<void> {
    if (message.action === "cancel") {
      const cancelled = new Set(message.message_ids);
      for (const live of this.#live.values()) {
        if (
          live.sessionId === message.session_id &&
          live.agent === message.agent &&
          cancelled.has(live.messageId)
        ) {
          live.controller.abort();
        }
      }
      return;
    }
    const backend = await this.pool.peek({ sessionId: message.session_id, agent: message.agent });
    if (!backend) return;
    await backend.respondToPermission({ requestId: message.request_id, outcome: message.outcome });
  }

  #interrupt(live: LiveTurn): void {
    if (live.controller.signal.aborted) return;
    live.interrupted = true;
    live.controller.abort();
  }

  /** An agent process died while no turn ran: the row says so and the session is told. */
  async #crashedBetweenTurns(key: AgentPoolKey, health: BackendHealth): Promise<void> {
    const rowId = this.#rows.get(`${key.sessionId}/${key.agent}`);
    if (!rowId) return;
    const db = this.#options.database.db;
    const updated = await db
      .update(agentSessions)
      .set({ status: "crashed", updatedAt: new Date() })
      .where(
        and(
          eq(agentSessions.id, rowId),
          ne(agentSessions.status, "crashed"),
          ne(agentSessions.status, "closed"),
        ),
      )
      .returning({ id: agentSessions.id });
    if (updated.length === 0) return;
    this.#logger.warn({ ...key, lastError: health.lastError }, "an agent died between turns");
    await publishSessionEvent(db, key.sessionId, null, {
      type: "error",
      message_id: null,
      message: `${health.lastError ?? `${key.agent} stopped`} between turns; the next message to ${key.agent} starts it again`,
    });
  }

  async #createBackend(
    sessionId: string,
    agent: string,
    context: CreateContext,
  ): Promise<AgentBackend> {
    const { providers, modelAccess } = this.#options;
    // The agent runs in the session's worktree: its node_modules/.bin comes before PATH.
    const where = { projectDir: context.worktreePath };
    const plain = await providers.resolve(agent, where);
    const agentType = plain.agentType ?? (plain.transport === "native" ? NATIVE_AGENT_TYPE : null);
    let modelProxy: AgentSessionContext["modelProxy"] = null;
    let provider = plain;
    if (agentType !== null && modelAccess.serves(agentType)) {
      const jobId = agentSessionJobId(context.agentSessionRowId);
      // Released when the backend goes (see onDisposed), not when this call ends.
      const lease = await modelAccess.lease(agentType, jobId);
      this.#leases.set(`${sessionId}/${agent}`, lease);
      this.#jobIds.set(`${sessionId}/${agent}`, jobId);
      const { proxyUrl, token } = lease.context;
      modelProxy = { url: proxyUrl, token, jobId };
      provider = await providers.resolve(agent, { ...where, proxy: lease.context });
    }
    const workspaceAgent = this.#options.workspaceAgent;
    if (!workspaceAgent) {
      throw new Error("agents need a workspace agent; start the server without --no-agent");
    }
    this.#rows.set(`${sessionId}/${agent}`, context.agentSessionRowId);
    const db = this.#options.database.db;
    return this.#options.createBackend({
      agent,
      provider,
      approvalPolicy: context.approvalPolicy,
      publishIdleEvent: (event) => {
        void publishSessionEvent(db, sessionId, context.chatId, event).catch((error: unknown) =>
          this.#logger.warn({ err: error, sessionId, agent }, "could not stream an idle event"),
        );
      },
      logger: this.#logger.child({ sessionId, agent }),
      context: {
        sessionId,
        chatId: context.chatId,
        worktreePath: context.worktreePath,
        workspaceAgent,
        modelProxy,
        resumeSessionId: context.resumeSessionId,
      },
    });
  }

  /** Whether the turn was cancelled: here (its signal), or by any process (its message row). */
  async #cancelRequested(live: LiveTurn): Promise<boolean> {
    if (live.controller.signal.aborted) return true;
    const [row] = await this.#options.database.db
      .select({ status: messages.status })
      .from(messages)
      .where(eq(messages.id, live.messageId));
    return row?.status === "cancelled" || live.controller.signal.aborted;
  }

  /** The message's parts as its events in the session log make them. */
  async #partsFromLog(sessionId: string, messageId: string): Promise<CollectedPart[]> {
    const rows = await this.#options.database.db
      .select({ payload: sessionEvents.payload })
      .from(sessionEvents)
      .where(
        and(
          eq(sessionEvents.sessionId, sessionId),
          sql`${sessionEvents.payload}->>'message_id' = ${messageId}`,
        ),
      )
      .orderBy(asc(sessionEvents.id));
    return collectParts(
      rows.flatMap((row) => {
        const event = AgentEventSchema.safeParse(row.payload);
        return event.success ? [event.data] : [];
      }),
    );
  }

  /**
   * Inserts the turn's message with a `turn_started` event; false when the message exists (a
   * task delivered again, or a turn cancelled before it started), after finishing a message
   * that an earlier run left unfinished.
   */
  async #begin(payload: AgentTurnPayload, messageId: string): Promise<boolean> {
    const db = this.#options.database.db;
    const { session_id: sessionId, chat_id: chatId, agent } = payload;
    for (;;) {
      const [existing] = await db.select().from(messages).where(eq(messages.id, messageId));
      if (existing) {
        // At-least-once delivery: a task run again after a crash finds its message and does not
        // start the turn a second time (its side effects may have happened). Its parts are made
        // again from the session log, which has every event that was streamed.
        if (existing.completedAt === null) {
          await this.#finish(
            messageId,
            sessionId,
            chatId,
            agent,
            existing.status === "cancelled"
              ? { status: "cancelled" }
              : {
                  status: "failed",
                  error: "the server stopped during this turn; send the message again",
                },
            await this.#partsFromLog(sessionId, messageId),
          );
        }
        return false;
      }
      const inserted = await db.transaction(async (transaction) => {
        const rows = await transaction
          .insert(messages)
          .values({
            id: messageId,
            chatId,
            role: "assistant",
            agentType: agent,
            status: "streaming",
          })
          .onConflictDoNothing()
          .returning({ id: messages.id });
        if (rows.length === 0) return false;
        await appendSessionEvent(transaction, sessionId, chatId, {
          type: "turn_started",
          chat_id: chatId,
          message_id: messageId,
          user_message_id: payload.user_message_id,
          agent,
        });
        return true;
      });
      if (inserted) return true;
    }
  }

  /**
   * The `agent_turn` task: runs one user message's turn, start to finish. `signal` is the task's:
   * when it aborts (the server is stopping) the agent is cancelled and the message ends
   * `cancelled` with the reason `interrupted`.
   */
  async runTurn(payload: AgentTurnPayload, options: { signal?: AbortSignal } = {}): Promise<void> {
    const run = this.#runTurn(payload, options.signal);
    this.#inFlight.add(run);
    try {
      await run;
    } finally {
      this.#inFlight.delete(run);
    }
  }

  async #runTurn(payload: AgentTurnPayload, taskSignal: AbortSignal | undefined): Promise<void> {
    const db = this.#options.database.db;
    const { session_id: sessionId, chat_id: chatId, agent } = payload;
    const messageId = assistantMessageId(payload.user_message_id);
    if (!(await this.#begin(payload, messageId))) return;

    const store = new SessionStore(db);
    const asked = await store.messages.userMessageText(payload.user_message_id);
    // An agent new to the chat is told first what Deckhand told it (a taken-over workspace).
    const context = await store.messages.contextFor(payload.user_message_id);
    const text = context === "" ? asked : `${context}\n\n---\n\n${asked}`;

    const live: LiveTurn = {
      sessionId,
      agent,
      messageId,
      controller: new AbortController(),
      interrupted: false,
    };
    this.#live.set(messageId, live);
    const onTaskAbort = () => this.#interrupt(live);
    if (taskSignal?.aborted || this.#stopping) onTaskAbort();
    else taskSignal?.addEventListener("abort", onTaskAbort, { once: true });

    const collector = new PartCollector();
    let storedAt = 0;
    // Events go to the database in order, batched while a write is in flight (group commit), so
    // an agent streaming deltas is not held to one transaction per delta. Parts commit with the
    // events they come from, so a message read mid-turn holds what was streamed; a batch of
    // deltas alone stores them every PART_FLUSH_MS rather than rewriting a growing text.
    const writer = new SessionEventWriter<AgentEvent>(db, sessionId, {
      onBatch: async (transaction, entries) => {
        let onlyDeltas = true;
        for (const { event } of entries) {
          collector.add(event);
          if (event.type !== "text" && event.type !== "reasoning") onlyDeltas = false;
        }
        if (onlyDeltas && Date.now() - storedAt < PART_FLUSH_MS) return;
        storedAt = Date.now();
        await storePartChanges(transaction, messageId, collector.takeChanges());
      },
    });
    const onEvent = (event: AgentEvent) => writer.append(chatId, event);
    /** Waits until every event so far is stored: before anything else is appended to the log. */
    const flushEvents = () => writer.flush();
    const failTurn = async (error: unknown): Promise<TurnOutcome> => {
      // The turn is not retried: an agent may have acted already. The user sees why it failed.
      const reason = redactSecrets(errorMessage(error));
      this.#logger.warn({ err: error, sessionId, agent }, "agent turn failed");
      await onEvent({ type: "error", message_id: messageId, message: reason }).catch(() => {});
      await onEvent({ type: "turn_end", message_id: messageId, stop_reason: "error" }).catch(
        () => {},
      );
      return { status: "failed", error: reason };
    };

    let outcome: TurnOutcome;
    try {
      const { session, worktree } = await requireOpenSession(store, sessionId);
      const { approvalPolicy } = session;
      // The session's lock (shared with the session service): one turn of a session at a time,
      // and no pending change applied or rejected here while it runs.
      const ran = await this.#options.sessions.lock.turn(
        sessionId,
        live.controller.signal,
        async () => {
          if (await this.#cancelRequested(live)) return "not_started" as const;
          let stopReason: StopReason | null = null;
          let failure: TurnOutcome | null = null;
          let agentSessionRowId: string | null = null;
          // The branch's commit before the agent works: commits it makes are folded back after.
          const since = await resolveCommit(worktree.path, "HEAD").catch(() => null);
          try {
            const agentSession = await store.agentSessions.ensure(sessionId, agent, null);
            agentSessionRowId = agentSession.id;
            const rowId = agentSessionRowId;
            const resumeSessionId =
              agentSession.resumeSessionId ??
              (await store.agentSessions.latestResumeId(sessionId, agent));
            stopReason = await this.pool.use(
              { sessionId, agent },
              (backend) =>
                this.#promptBackend(backend, {
                  live,
                  rowId,
                  chatId,
                  text,
                  model: payload.model ?? null,
                  mode: payload.mode ?? null,
                  hadPrevious: resumeSessionId !== null,
                  onEvent,
                }),
              {
                chatId,
                approvalPolicy,
                agentSessionRowId: rowId,
                resumeSessionId,
                worktreePath: worktree.path,
              },
            );
          } catch (error) {
            failure = await failTurn(error);
          }
          if (agentSessionRowId !== null) {
            await flushEvents();
            await this.#afterTurn({
              sessionId,
              chatId,
              agent,
              messageId,
              agentSessionRowId,
              worktree,
              since,
              onEvent,
              flushEvents,
            });
          }
          return failure ?? { stopReason: stopReason! };
        },
      );
      if (ran === ABORTED || ran === "not_started") {
        // Cancelled before it began: the agent never saw the message.
        await onEvent({ type: "turn_end", message_id: messageId, stop_reason: "cancelled" });
        outcome = { status: "cancelled" };
      } else if ("status" in ran) {
        outcome = ran;
      } else if (ran.stopReason === "cancelled") {
        outcome = { status: "cancelled" };
      } else if (ran.stopReason === "error") {
        outcome = {
          status: "failed",
          error: collector.lastError ?? "the agent ended the turn with an error",
        };
      } else {
        outcome = { status: "complete" };
      }
    } catch (error) {
      outcome = await failTurn(error);
    } finally {
      taskSignal?.removeEventListener("abort", onTaskAbort);
      this.#live.delete(messageId);
    }
    // Stopped by the server rather than a person: a failure it caused is not the agent's.
    if (live.interrupted && outcome.status !== "complete") {
      outcome = { status: "cancelled", error: INTERRUPTED_ERROR, reason: "interrupted" };
    }
    // The parts and the final events must follow everything the turn streamed.
    await flushEvents().catch((error: unknown) =>
      this.#logger.warn({ err: error, sessionId, agent }, "storing the turn's events failed"),
    );
    await this.#finish(messageId, sessionId, chatId, agent, outcome, collector.parts);
  }

  /** One turn on the (session, agent) backend, inside the session's lock. */
  async #promptBackend(
    backend: AgentBackend,
    turn: {
      live: LiveTurn;
      rowId: string;
      chatId: string;
      text: string;
      model: string | null;
      mode: string | null;
      hadPrevious: boolean;
      onEvent(event: AgentEvent): Promise<void>;
    },
  ): Promise<StopReason> {
    const db = this.#options.database.db;
    const { live, rowId, onEvent } = turn;
    const { sessionId, agent, messageId } = live;
    const started = await backend.ensureSession();
    const announced = this.#announced.get(backend);
    if (announced !== started.agentSessionId) {
      this.#announced.set(backend, started.agentSessionId);
      await publishSessionEvent(db, sessionId, turn.chatId, {
        type: "agent_session",
        agent,
        agent_session_id: started.agentSessionId,
        resumed: started.resumed,
        had_previous: announced !== undefined || turn.hadPrevious,
        usage_job_id: this.#jobIds.get(`${sessionId}/${agent}`) ?? null,
      });
    }
    await db
      .update(agentSessions)
      .set({
        status: "active",
        resumeSessionId: started.agentSessionId,
        lastActiveAt: new Date(),
        updatedAt: new Date(),
      })
      .where(eq(agentSessions.id, rowId));
    // Each turn renews the backend's model access: it expires only when the agent sits unused
    // longer than its lifetime (the pool disposes idle agents well before that).
    await this.#leases.get(`${sessionId}/${agent}`)?.renew();
    let stopReason: StopReason;
    // A cancel that came while the agent was starting or the turn waited: no prompt at all.
    if (await this.#cancelRequested(live)) {
      await onEvent({ type: "turn_end", message_id: messageId, stop_reason: "cancelled" });
      stopReason = "cancelled";
    } else {
      const signal = live.controller.signal;
      // Backends that watch the signal cancel themselves; cancel() covers those that do not.
      const onAbort = () => {
        void backend
          .cancel()
          .catch((error: unknown) =>
            this.#logger.warn({ err: error, sessionId, agent }, "cancelling the agent failed"),
          );
      };
      signal.addEventListener("abort", onAbort, { once: true });
      try {
        ({ stopReason } = await backend.prompt({
          messageId,
          text: turn.text,
          onEvent,
          signal,
          model: turn.model,
          mode: turn.mode,
        }));
      } finally {
        signal.removeEventListener("abort", onAbort);
      }
    }
    await db
      .update(agentSessions)
      .set({
        status: backend.health().status === "crashed" ? "crashed" : "idle",
        lastActiveAt: new Date(),
        updatedAt: new Date(),
      })
      .where(eq(agentSessions.id, rowId));
    return stopReason;
  }

  /**
   * After an agent's turn, still inside the session's lock: commits it made on the session branch
   * are folded back into the worktree, and the worktree's changes become pending changes
   * credited to it.
   */
  async #afterTurn(turn: {
    sessionId: string;
    chatId: string;
    agent: string;
    messageId: string;
    agentSessionRowId: string;
    worktree: SessionWorktreeRow;
    since: string | null;
    onEvent(event: AgentEvent): Promise<void>;
    flushEvents(): Promise<void>;
  }): Promise<void> {
    const { sessions } = this.#options;
    const since = turn.since;
    const { sessionId, chatId, agent, messageId } = turn;
    if (since !== null) {
      try {
        const folded = await sessions.lock.git(sessionId, () =>
          foldAgentCommits(turn.worktree, since),
        );
        if (folded.kind === "moved") {
          await turn.onEvent({
            type: "error",
            message_id: messageId,
            message: `after ${agent}'s turn, ${folded.reason}`,
          });
        } else if (folded.kind === "folded") {
          if (folded.folded.length > 0) {
            await publishSessionEvent(this.#options.database.db, sessionId, chatId, {
              type: "commits_folded",
              chat_id: chatId,
              agent,
              commits: folded.folded.map(({ sha, subject }) => ({ sha, subject })),
            });
          }
          if (folded.kept.length > 0) {
            await turn.onEvent({
              type: "error",
              message_id: messageId,
              message: `${agent} committed ${folded.kept.map((commit) => commit.sha.slice(0, 12)).join(", ")} on the session branch before a pending change was applied during its turn; those commits stay there, unreviewed`,
            });
          }
        }
      } catch (error) {
        this.#logger.warn({ err: error, sessionId }, "folding the agent's commits failed");
      }
    }
    await turn.flushEvents();
    await sessions.pendingChanges
      .record({
        sessionId,
        worktreePath: turn.worktree.path,
        agentSession: { id: turn.agentSessionRowId, agent },
        chatId,
      })
      .catch((error: unknown) =>
        this.#logger.warn({ err: error, sessionId }, "recording pending changes failed"),
      );
  }

  /**
   * Ends the message: its status and error, its parts (all of them, rewritten whole, so a secret
   * split across deltas is redacted too), and a `turn_finished` event.
   */
  async #finish(
    messageId: string,
    sessionId: string,
    chatId: string,
    agent: string,
    outcome: TurnOutcome,
    parts: CollectedPart[],
  ): Promise<void> {
    const db = this.#options.database.db;
    await db.transaction(async (transaction) => {
      await transaction.delete(messageParts).where(eq(messageParts.messageId, messageId));
      if (parts.length > 0) {
        await transaction.insert(messageParts).values(
          parts.map((part, position) => ({
            messageId,
            position,
            kind: part.kind,
            content: redactValue(part.content),
          })),
        );
      }
      await transaction
        .update(messages)
        .set({ status: outcome.status, error: outcome.error ?? null, completedAt: new Date() })
        .where(eq(messages.id, messageId));
      await appendSessionEvent(transaction, sessionId, chatId, {
        type: "turn_finished",
        chat_id: chatId,
        message_id: messageId,
        agent,
        status: outcome.status,
        ...(outcome.reason ? { reason: outcome.reason } : {}),
      });
    });
  }
}
