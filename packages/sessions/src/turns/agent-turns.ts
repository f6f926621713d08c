import type { AgentPool, AgentPoolEntryHealth } from "@deckhand/agent-backends";
import type { DbHandle, TaskRegistry } from "@deckhand/db";
import type { ProviderService } from "@deckhand/providers";
import type { AnswerPermissionRequest } from "@deckhand/wire";
import type { Logger } from "pino";
import type { SessionDomain } from "../session-domain.ts";
import {
  AGENT_TURN_TASK,
  type AgentTurnPayload,
  AgentTurnPayloadSchema,
} from "../store/agent-turn-tasks.ts";
import { SessionStore } from "../store/session-store.ts";
import { AfterTurn } from "./after-turn.ts";
import type { ModelAccess } from "./model-access.ts";
import { type AgentStart, type BackendFactory, SessionAgents } from "./session-agents.ts";
import { TurnControl } from "./turn-control.ts";
import { TurnMessages } from "./turn-messages.ts";
import { TurnRunner } from "./turn-runner.ts";

export interface AgentTurnsOptions {
  database: DbHandle;
  /** The session domain whose lock and pending changes the turns share. */
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

/**
 * Agent turns in this process: the `agent_turn` task handler (the turn runner), the session
 * agents it prompts, and turn control, which carries cancels and permission answers to the
 * process running the agent.
 */
export class AgentTurns {
  /** The live backends, one per (session, agent). */
  readonly pool: AgentPool<AgentStart>;
  readonly #control: TurnControl;
  readonly #runner: TurnRunner;
  readonly #stopTimeoutMs: number;

  constructor(options: AgentTurnsOptions) {
    const logger = options.logger.child({ component: "agent-turns" });
    const store = new SessionStore(options.database.db);
    const { lock, pendingChanges } = options.sessions;
    const agents = new SessionAgents({
      store,
      providers: options.providers,
      modelAccess: options.modelAccess,
      workspaceAgent: options.workspaceAgent,
      createBackend: options.createBackend,
      logger,
      idleTimeoutMs: options.idleTimeoutMs,
      healthIntervalMs: options.healthIntervalMs,
    });
    const messages = new TurnMessages(store);
    this.pool = agents.pool;
    this.#control = new TurnControl({
      database: options.database,
      store,
      messages,
      backendOf: (key) => agents.pool.peek(key),
      logger,
    });
    this.#runner = new TurnRunner({
      store,
      lock,
      control: this.#control,
      agents,
      messages,
      afterTurn: new AfterTurn({ store, lock, pendingChanges, logger }),
      logger,
    });
    this.#stopTimeoutMs = options.stopTimeoutMs ?? 10_000;
  }

  register(registry: TaskRegistry): void {
    registry.register<AgentTurnPayload>(AGENT_TURN_TASK, {
      schema: AgentTurnPayloadSchema,
      handle: (payload, context) => this.runTurn(payload, { signal: context.signal }),
    });
  }

  start(): Promise<void> {
    return this.#control.start();
  }

  /**
   * Interrupts the turns still running here (their messages end `cancelled` with the reason
   * `interrupted`), waits a bounded time for them to finish, then stops every agent.
   */
  async stop(): Promise<void> {
    await this.#control.stop();
    await this.#runner.settle(this.#stopTimeoutMs);
    await this.pool.shutdown();
  }

  health(): Promise<AgentPoolEntryHealth[]> {
    return this.pool.health();
  }

  /** Cancels the agent's unfinished turns in the session, wherever they run. */
  cancel(sessionId: string, agent: string): Promise<void> {
    return this.#control.cancel(sessionId, agent);
  }

  /** Answers an agent's permission request, in whichever process runs the agent. */
  answerPermission(
    sessionId: string,
    agent: string,
    requestId: string,
    answer: AnswerPermissionRequest,
  ): Promise<void> {
    return this.#control.answerPermission(sessionId, agent, requestId, answer);
  }

  /** The `agent_turn` task: runs one user message's turn, start to finish. */
  runTurn(payload: AgentTurnPayload, options: { signal?: AbortSignal } = {}): Promise<void> {
    return this.#runner.run(payload, options.signal);
  }
}
