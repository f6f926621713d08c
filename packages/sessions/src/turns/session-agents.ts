import {
  type AgentBackend,
  AgentPool,
  type AgentPoolKey,
  type AgentSessionContext,
  type BackendHealth,
  type EnsureSessionResult,
} from "@deckhand/agent-backends";
import type { ProviderService, ResolvedProvider } from "@deckhand/providers";
import type { AgentEvent, ApprovalPolicyName } from "@deckhand/wire";
import type { Logger } from "pino";
import type { SessionStore } from "../store/session-store.ts";
import { agentSessionJobId } from "../usage-job.ts";
import type { ModelAccess, ModelAccessLease } from "./model-access.ts";

/** The proxy agent type of Deckhand's native agent (the `modelUpstreams` key it uses). */
export const NATIVE_AGENT_TYPE = "deckhand";

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

/** What the first turn of an agent in a session starts its backend with. */
export interface AgentStart {
  chatId: string;
  approvalPolicy: ApprovalPolicyName;
  /** The `agent_sessions` row the backend runs for. */
  agentSessionRowId: string;
  /** The agent's own session to resume, from an earlier run. */
  resumeSessionId: string | null;
  worktreePath: string;
}

export interface SessionAgentsOptions {
  store: SessionStore;
  providers: Pick<ProviderService, "resolve">;
  modelAccess: ModelAccess;
  workspaceAgent: { url: string; token: string | null } | null;
  createBackend: BackendFactory;
  logger: Logger;
  idleTimeoutMs?: number | undefined;
  healthIntervalMs?: number | undefined;
}

/** What this process holds for one live backend, released when it goes. */
interface Held {
  /** The `agent_sessions` row it was created for (null until its backend is being made). */
  rowId: string | null;
  /** Its model access, when its agent type goes through the proxy. */
  lease: ModelAccessLease | null;
  /** The usage job it is announced with, so clients can read its usage. */
  jobId: string | null;
}

/**
 * The agents of sessions that run in this process: one backend per (session, agent) in a pool,
 * started in the session's worktree with the provider's command and model access, renewed each
 * turn, and recorded on its `agent_sessions` row when it dies between turns or goes.
 */
export class SessionAgents {
  readonly pool: AgentPool<AgentStart>;
  readonly #options: SessionAgentsOptions;
  readonly #held = new Map<string, Held>();
  /** The agent session id last announced for each backend (a restarted agent may get a new one). */
  readonly #announced = new WeakMap<AgentBackend, string>();

  constructor(options: SessionAgentsOptions) {
    this.#options = options;
    this.pool = new AgentPool<AgentStart>({
      create: (key, start) => this.#create(key, start),
      onDisposed: (key) => this.#disposed(key),
      onCrashed: (key, health) => this.#crashedBetweenTurns(key, health),
      idleTimeoutMs: options.idleTimeoutMs ?? 15 * 60_000,
      ...(options.healthIntervalMs !== undefined
        ? { healthIntervalMs: options.healthIntervalMs }
        : {}),
    });
  }

  /**
   * Tells the session which agent session a turn runs in, when it is new to this backend (the
   * first turn, or the agent restarted): its id, whether it was resumed, and its usage job.
   */
  async announce(
    backend: AgentBackend,
    started: EnsureSessionResult,
    turn: { sessionId: string; chatId: string; agent: string; hadPrevious: boolean },
  ): Promise<void> {
    const announced = this.#announced.get(backend);
    if (announced === started.agentSessionId) return;
    this.#announced.set(backend, started.agentSessionId);
    await this.#options.store.publishEvent(turn.sessionId, turn.chatId, {
      type: "agent_session",
      agent: turn.agent,
      agent_session_id: started.agentSessionId,
      resumed: started.resumed,
      had_previous: announced !== undefined || turn.hadPrevious,
      usage_job_id: this.#held.get(heldKey(turn))?.jobId ?? null,
    });
  }

  /**
   * Renews the backend's model access: it expires only when the agent sits unused longer than
   * its lifetime (the pool disposes idle agents well before that).
   */
  async renewModelAccess(key: AgentPoolKey): Promise<void> {
    await this.#held.get(heldKey(key))?.lease?.renew();
  }

  async #create(key: AgentPoolKey, start: AgentStart): Promise<AgentBackend> {
    const { sessionId, agent } = key;
    const { providers, modelAccess } = this.#options;
    // The agent runs in the session's worktree: its node_modules/.bin comes before PATH.
    const where = { projectDir: start.worktreePath };
    const plain = await providers.resolve(agent, where);
    const agentType = plain.agentType ?? (plain.transport === "native" ? NATIVE_AGENT_TYPE : null);
    let modelProxy: AgentSessionContext["modelProxy"] = null;
    let provider = plain;
    let lease: ModelAccessLease | null = null;
    let jobId: string | null = null;
    if (agentType !== null && modelAccess.serves(agentType)) {
      jobId = agentSessionJobId(start.agentSessionRowId);
      // Released when the backend goes (see #disposed), not when this call ends.
      lease = await modelAccess.lease(agentType, jobId);
      this.#held.set(heldKey(key), { rowId: null, lease, jobId });
      modelProxy = { url: lease.context.proxyUrl, token: lease.context.token, jobId };
      provider = await providers.resolve(agent, { ...where, proxy: lease.context });
    }
    const workspaceAgent = this.#options.workspaceAgent;
    if (!workspaceAgent) {
      throw new Error("agents need a workspace agent; start the server without --no-agent");
    }
    this.#held.set(heldKey(key), { rowId: start.agentSessionRowId, lease, jobId });
    const logger = this.#options.logger;
    return this.#options.createBackend({
      agent,
      provider,
      approvalPolicy: start.approvalPolicy,
      publishIdleEvent: (event) => {
        void this.#options.store
          .publishEvent(sessionId, start.chatId, event)
          .catch((error: unknown) =>
            logger.warn({ err: error, sessionId, agent }, "could not stream an idle event"),
          );
      },
      logger: logger.child({ sessionId, agent }),
      context: {
        sessionId,
        chatId: start.chatId,
        worktreePath: start.worktreePath,
        workspaceAgent,
        modelProxy,
        resumeSessionId: start.resumeSessionId,
      },
    });
  }

  /**
   * The backend is gone: its model access ends, and its row is history now (the next turn makes
   * a new one that resumes the agent's own session from this row's resume id).
   */
  async #disposed(key: AgentPoolKey): Promise<void> {
    const held = this.#held.get(heldKey(key));
    this.#held.delete(heldKey(key));
    if (held?.lease) await held.lease.release().catch(() => {});
    if (held?.rowId) {
      await this.#options.store.agentSessions
        .markClosed(held.rowId)
        .catch((error: unknown) =>
          this.#options.logger.warn(
            { err: error, ...key },
            "could not mark the agent session closed",
          ),
        );
    }
  }

  /** An agent process died while no turn ran: the row says so and the session is told. */
  async #crashedBetweenTurns(key: AgentPoolKey, health: BackendHealth): Promise<void> {
    const rowId = this.#held.get(heldKey(key))?.rowId;
    if (!rowId) return;
    if (!(await this.#options.store.agentSessions.markCrashed(rowId))) return;
    this.#options.logger.warn(
      { ...key, lastError: health.lastError },
      "an agent died between turns",
    );
    await this.#options.store.publishEvent(key.sessionId, null, {
      type: "error",
      message_id: null,
      message: `${health.lastError ?? `${key.agent} stopped`} between turns; the next message to ${key.agent} starts it again`,
    });
  }
}

function heldKey(key: AgentPoolKey): string {
  return `${key.sessionId}/${key.agent}`;
}
