import { createHash } from "node:crypto";
import {
  type AgentBackend,
  AgentPool,
  type AgentPoolEntryHealth,
  type AgentSessionContext,
} from "@deckhand/agent-backends";
import {
  agentSessions,
  type DbHandle,
  type MessagePartKind,
  messageParts,
  messages,
  type TaskRegistry,
} from "@deckhand/db";
import {
  type ModelTokenStore,
  mintModelToken,
  redactSecrets,
  revokeModelToken,
} from "@deckhand/model-proxy";
import type { ProviderService, ResolvedProvider } from "@deckhand/providers";
import {
  type AgentEvent,
  type AnswerPermissionRequest,
  type ApprovalPolicyName,
  WirePath,
} from "@deckhand/wire";
import { and, asc, eq } from "drizzle-orm";
import type { Logger } from "pino";
import { z } from "zod";
import { appendSessionEvent, publishSessionEvent } from "./session-events.ts";
import { AGENT_TURN_TASK, type AgentTurnPayload, type SessionService } from "./session-service.ts";

/** NOTIFY channel for cancel and permission answers: whichever process runs the agent acts. */
export const AGENT_CONTROL_CHANNEL = "deckhand_agent_control";

/** The proxy agent type of Deckhand's native agent (the `modelUpstreams` key it uses). */
export const NATIVE_AGENT_TYPE = "deckhand";

const ControlMessageSchema = z.discriminatedUnion("action", [
  z.object({ action: z.literal("cancel"), session_id: z.string(), agent: z.string() }),
  z.object({
    action: z.literal("permission"),
    session_id: z.string(),
    agent: z.string(),
    request_id: z.string(),
    outcome: z.enum(["allow_once", "allow_always", "reject_once", "reject_always", "cancelled"]),
  }),
]);
type ControlMessage = z.infer<typeof ControlMessageSchema>;

const AgentTurnPayloadSchema = z.object({
  session_id: z.uuid(),
  chat_id: z.uuid(),
  user_message_id: z.uuid(),
  agent: z.string().min(1),
});

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
  sessions: SessionService;
  providers: ProviderService;
  modelTokens: ModelTokenStore & {
    /** Moves a live token's expiry, so an agent in use keeps proxy access. */
    extend(id: string, expiresAt: Date): Promise<boolean>;
  };
  /** The server's own URL (known once it listens): agents reach the model proxy through it. */
  serverUrl: () => string;
  workspaceAgent: { url: string; token: string | null } | null;
  /**
   * Whether the proxy has an upstream for an agent type. An agent whose type has none is not
   * pointed at the proxy: it keeps its own login and credentials.
   */
  hasUpstream(agentType: string): boolean;
  createBackend: BackendFactory;
  logger: Logger;
  /** Backends unused this long are stopped. Defaults to 15 minutes. */
  idleTimeoutMs?: number;
  /** Lifetime of the model token each backend gets. Defaults to 12 hours. */
  modelTokenTtlMs?: number;
}

interface CreateContext {
  chatId: string;
  approvalPolicy: ApprovalPolicyName;
  agentSessionRowId: string;
  resumeSessionId: string | null;
  worktreePath: string;
}

/** A deterministic id for the answer to a user message, so a re-run task finds its message. */
export function assistantMessageId(userMessageId: string): string {
  const hex = createHash("sha256").update(`assistant:${userMessageId}`).digest("hex");
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** Turns a turn's events into the assistant message's parts, in the order they first appeared. */
class PartCollector {
  readonly parts: { kind: MessagePartKind; content: Record<string, unknown> }[] = [];
  readonly #toolCalls = new Map<string, Record<string, unknown>>();
  #open: { kind: "text" | "reasoning"; content: { text: string } } | null = null;
  #plan: Record<string, unknown> | null = null;
  /** Text and reasoning parts begun since the last event of another type. */
  #sinceOther: { kind: MessagePartKind; content: Record<string, unknown> }[] = [];
  /** The last error an agent reported, for the message's `error` column. */
  lastError: string | null = null;

  add(event: AgentEvent): void {
    if (event.type === "text" || event.type === "reasoning") {
      if (this.#open?.kind !== event.type) {
        this.#open = { kind: event.type, content: { text: "" } };
        this.parts.push(this.#open);
        this.#sinceOther.push(this.#open);
      }
      this.#open.content.text += event.delta;
      return;
    }
    if (event.type === "retry") {
      // The stream's rule: a retry discards the text and reasoning since the last other event.
      for (const part of this.#sinceOther) this.parts.splice(this.parts.indexOf(part), 1);
      this.#sinceOther = [];
      this.#open = null;
      return;
    }
    this.#sinceOther = [];
    if (event.type === "tool_call") {
      this.#open = null;
      const { type: _type, message_id: _message, ...content } = event;
      const existing = this.#toolCalls.get(event.tool_call_id);
      if (existing) Object.assign(existing, content);
      else {
        const part = { ...content } as Record<string, unknown>;
        this.#toolCalls.set(event.tool_call_id, part);
        this.parts.push({ kind: "tool_call", content: part });
      }
      return;
    }
    if (event.type === "tool_update") {
      this.#open = null;
      const { type: _type, message_id: _message, ...update } = event;
      let part = this.#toolCalls.get(event.tool_call_id);
      if (!part) {
        part = { tool_call_id: event.tool_call_id };
        this.#toolCalls.set(event.tool_call_id, part);
        this.parts.push({ kind: "tool_call", content: part });
      }
      for (const [key, value] of Object.entries(update)) if (value !== undefined) part[key] = value;
      return;
    }
    if (event.type === "plan") {
      this.#open = null;
      if (this.#plan) this.#plan.entries = event.entries;
      else {
        this.#plan = { entries: event.entries };
        this.parts.push({ kind: "plan", content: this.#plan });
      }
      return;
    }
    if (event.type === "error") {
      this.#open = null;
      this.lastError = event.message;
      this.parts.push({
        kind: "error",
        content: {
          message: event.message,
          ...(event.stderr_tail ? { stderr_tail: event.stderr_tail } : {}),
        },
      });
    }
  }
}

/**
 * Runs agent turns: the `agent_turn` task handler, the pool of live backends, and the control
 * channel that carries cancel requests and permission answers to the process running the agent.
 */
export class AgentTurns {
  readonly pool: AgentPool<CreateContext>;
  readonly #options: AgentTurnsOptions;
  readonly #logger: Logger;
  /** The model token of each live backend, revoked when the backend goes. */
  readonly #tokens = new Map<string, string>();
  /** The model-usage job id of each live backend, announced so clients can read its usage. */
  readonly #jobIds = new Map<string, string>();
  /** The agent session id last announced for each backend (a restarted agent may get a new one). */
  readonly #announced = new WeakMap<AgentBackend, string>();
  /** Turns of one (session, agent) run one after another, never interleaved on one backend. */
  readonly #turnLocks = new Map<string, Promise<unknown>>();
  #unlisten: (() => Promise<void>) | null = null;

  constructor(options: AgentTurnsOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: "agent-turns" });
    this.pool = new AgentPool<CreateContext>({
      create: (key, context) => this.#createBackend(key.sessionId, key.agent, context),
      onDisposed: async (key) => {
        const tokenId = this.#tokens.get(`${key.sessionId}/${key.agent}`);
        this.#tokens.delete(`${key.sessionId}/${key.agent}`);
        this.#jobIds.delete(`${key.sessionId}/${key.agent}`);
        if (tokenId) await revokeModelToken(options.modelTokens, tokenId).catch(() => {});
      },
      idleTimeoutMs: options.idleTimeoutMs ?? 15 * 60_000,
    });
  }

  register(registry: TaskRegistry): void {
    registry.register<AgentTurnPayload>(AGENT_TURN_TASK, {
      schema: AgentTurnPayloadSchema,
      handle: (payload) => this.runTurn(payload),
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

  async stop(): Promise<void> {
    await this.#unlisten?.();
    this.#unlisten = null;
    await this.pool.shutdown();
  }

  health(): Promise<AgentPoolEntryHealth[]> {
    return this.pool.health();
  }

  /** Asks whichever process runs (session, agent) to cancel its turn. */
  async cancel(sessionId: string, agent: string): Promise<void> {
    await this.#publishControl({ action: "cancel", session_id: sessionId, agent });
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
    const backend = await this.pool.peek({ sessionId: message.session_id, agent: message.agent });
    if (!backend) return;
    if (message.action === "cancel") await backend.cancel();
    else
      await backend.respondToPermission({
        requestId: message.request_id,
        outcome: message.outcome,
      });
  }

  async #createBackend(
    sessionId: string,
    agent: string,
    context: CreateContext,
  ): Promise<AgentBackend> {
    const { providers, modelTokens, serverUrl } = this.#options;
    // The agent runs in the session's worktree: its node_modules/.bin comes before PATH.
    const where = { projectDir: context.worktreePath };
    const plain = await providers.resolve(agent, where);
    const agentType = plain.agentType ?? (plain.transport === "native" ? NATIVE_AGENT_TYPE : null);
    let modelProxy: AgentSessionContext["modelProxy"] = null;
    let provider = plain;
    if (agentType !== null && this.#options.hasUpstream(agentType)) {
      const jobId = `agent-session:${context.agentSessionRowId}`;
      const minted = await mintModelToken(modelTokens, {
        jobId,
        ttlMs: this.#options.modelTokenTtlMs ?? 12 * 60 * 60_000,
      });
      this.#tokens.set(`${sessionId}/${agent}`, minted.tokenId);
      this.#jobIds.set(`${sessionId}/${agent}`, jobId);
      const url = `${serverUrl()}${WirePath.modelProvider}/${agentType}`;
      modelProxy = { url, token: minted.token, jobId };
      provider = await providers.resolve(agent, {
        ...where,
        proxy: { proxyUrl: url, token: minted.token, jobId },
      });
    }
    const workspaceAgent = this.#options.workspaceAgent;
    if (!workspaceAgent) {
      throw new Error("agents need a workspace agent; start the server without --no-agent");
    }
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

  async #oneAtATime<Result>(key: string, work: () => Promise<Result>): Promise<Result> {
    const previous = this.#turnLocks.get(key) ?? Promise.resolve();
    const run = previous.catch(() => {}).then(work);
    this.#turnLocks.set(key, run);
    try {
      return await run;
    } finally {
      if (this.#turnLocks.get(key) === run) this.#turnLocks.delete(key);
    }
  }

  /** The `agent_turn` task: runs one user message's turn, start to finish. */
  async runTurn(payload: AgentTurnPayload): Promise<void> {
    const db = this.#options.database.db;
    const { session_id: sessionId, chat_id: chatId, agent } = payload;
    const messageId = assistantMessageId(payload.user_message_id);

    // At-least-once delivery: a task run again after a crash finds its message and does not
    // start the turn a second time (its side effects may have happened).
    const [existing] = await db.select().from(messages).where(eq(messages.id, messageId));
    if (existing) {
      if (existing.status === "streaming" || existing.status === "pending") {
        await this.#finish(messageId, sessionId, chatId, agent, "failed", [], {
          error: "the server stopped during this turn; send the message again",
        });
      }
      return;
    }

    const [userPart] = await db
      .select()
      .from(messageParts)
      .where(eq(messageParts.messageId, payload.user_message_id))
      .orderBy(asc(messageParts.position));
    const text = String((userPart?.content as { text?: string } | undefined)?.text ?? "");

    await db.transaction(async (transaction) => {
      await transaction.insert(messages).values({
        id: messageId,
        chatId,
        role: "assistant",
        agentType: agent,
        status: "streaming",
      });
      await appendSessionEvent(transaction, sessionId, chatId, {
        type: "turn_started",
        chat_id: chatId,
        message_id: messageId,
        user_message_id: payload.user_message_id,
        agent,
      });
    });

    const collector = new PartCollector();
    const onEvent = async (event: AgentEvent) => {
      collector.add(event);
      await publishSessionEvent(db, sessionId, chatId, event);
    };

    let agentSessionRowId: string | null = null;
    try {
      const worktree = await this.#options.sessions.activeWorktree(sessionId);
      const { approval_policy: approvalPolicy } =
        await this.#options.sessions.getSession(sessionId);
      agentSessionRowId = await this.#options.sessions.ensureAgentSession(sessionId, agent, null);
      const [row] = await db
        .select()
        .from(agentSessions)
        .where(eq(agentSessions.id, agentSessionRowId));
      const rowId = agentSessionRowId;
      const result = await this.#oneAtATime(`${sessionId}/${agent}`, () =>
        this.pool.use(
          { sessionId, agent },
          async (backend) => {
            const started = await backend.ensureSession();
            const announced = this.#announced.get(backend);
            if (announced !== started.agentSessionId) {
              this.#announced.set(backend, started.agentSessionId);
              await publishSessionEvent(db, sessionId, chatId, {
                type: "agent_session",
                agent,
                agent_session_id: started.agentSessionId,
                resumed: started.resumed,
                had_previous: announced !== undefined || row?.resumeSessionId != null,
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
            // Each turn renews the backend's model token: it expires only when the agent sits
            // unused longer than its lifetime (the pool disposes idle agents well before that).
            const tokenId = this.#tokens.get(`${sessionId}/${agent}`);
            if (tokenId) {
              await this.#options.modelTokens.extend(
                tokenId,
                new Date(Date.now() + (this.#options.modelTokenTtlMs ?? 12 * 60 * 60_000)),
              );
            }
            const turn = await backend.prompt({ messageId, text, onEvent });
            const crashed = backend.health().status === "crashed";
            await db
              .update(agentSessions)
              .set({
                status: crashed ? "crashed" : "idle",
                lastActiveAt: new Date(),
                updatedAt: new Date(),
              })
              .where(eq(agentSessions.id, rowId));
            return turn;
          },
          {
            chatId,
            approvalPolicy,
            agentSessionRowId: rowId,
            resumeSessionId: row?.resumeSessionId ?? null,
            worktreePath: worktree.path,
          },
        ),
      );
      await this.#options.sessions
        .recordPendingChanges({ sessionId, agentSessionId: rowId, chatId })
        .catch((error: unknown) =>
          this.#logger.warn({ err: error, sessionId }, "recording pending changes failed"),
        );
      const status =
        result.stopReason === "cancelled"
          ? "cancelled"
          : result.stopReason === "error"
            ? "failed"
            : "complete";
      await this.#finish(messageId, sessionId, chatId, agent, status, collector.parts, {
        ...(status === "failed"
          ? { error: collector.lastError ?? "the agent ended the turn with an error" }
          : {}),
      });
    } catch (error) {
      // The turn is not retried: an agent may have acted already. The user sees why it failed.
      const reason = redactSecrets(error instanceof Error ? error.message : String(error));
      this.#logger.warn({ err: error, sessionId, agent }, "agent turn failed");
      await onEvent({ type: "error", message_id: messageId, message: reason }).catch(() => {});
      await onEvent({ type: "turn_end", message_id: messageId, stop_reason: "error" }).catch(
        () => {},
      );
      if (agentSessionRowId) {
        await this.#options.sessions
          .recordPendingChanges({ sessionId, agentSessionId: agentSessionRowId, chatId })
          .catch(() => {});
      }
      await this.#finish(messageId, sessionId, chatId, agent, "failed", collector.parts, {
        error: reason,
      });
    }
  }

  async #finish(
    messageId: string,
    sessionId: string,
    chatId: string,
    agent: string,
    status: "complete" | "failed" | "cancelled",
    parts: { kind: MessagePartKind; content: Record<string, unknown> }[],
    extra: { error?: string },
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
            content: JSON.parse(redactSecrets(JSON.stringify(part.content))),
          })),
        );
      }
      await transaction
        .update(messages)
        .set({ status, error: extra.error ?? null, completedAt: new Date() })
        .where(and(eq(messages.id, messageId)));
      await appendSessionEvent(transaction, sessionId, chatId, {
        type: "turn_finished",
        chat_id: chatId,
        message_id: messageId,
        agent,
        status,
      });
    });
  }
}
