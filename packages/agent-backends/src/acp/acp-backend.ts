import * as acp from "@agentclientprotocol/sdk";
import { errorMessage } from "@deckhand/errors";
import type { AgentEvent, StopReason } from "@deckhand/wire";
import type {
  AgentBackend,
  AgentSessionContext,
  BackendHealth,
  EnsureSessionResult,
  PermissionAnswer,
  PromptInput,
  PromptResult,
} from "../backend.ts";
import { AgentBackendError } from "../errors.ts";
import { createInMemoryPermissionMemory, type PermissionMemory } from "../permission-memory.ts";
import {
  AcpAgentConnection,
  type AcpTimeouts,
  DEFAULT_ACP_TIMEOUTS,
} from "./acp-agent-connection.ts";
import { type AcpClientHandlers, workspaceRequestHandlers } from "./acp-client.ts";
import { AcpEventRouter } from "./acp-event-router.ts";
import { stopReasonFrom, usageFromResponse } from "./acp-events.ts";
import { AcpPermissions } from "./acp-permissions.ts";
import { type AcpBackendLogger, AcpRedaction, silentLogger } from "./acp-redaction.ts";
import { type AcpLoginChoice, AcpSessionOpener } from "./acp-session-opener.ts";
import type { AcpTerminals } from "./acp-terminals.ts";
import { AcpTurn } from "./acp-turn.ts";
import {
  type AcpLaunch,
  type AgentExit,
  type AgentProcess,
  describeExit,
  spawnAgentProcess,
} from "./agent-process.ts";

export interface AcpBackendOptions {
  context: AgentSessionContext;
  launch: AcpLaunch;
  /** The agent's id (the provider id), named by `commands` and `mode` events. */
  agent: string;
  /** Where "always" permission answers are kept; an in-memory one when omitted. */
  permissionMemory?: PermissionMemory;
  timeouts?: Partial<AcpTimeouts>;
  logger?: AcpBackendLogger;
  /**
   * Receives events that arrive between turns: `commands` and `mode` updates an agent sends
   * after `session/new` or on its own. During a turn they go to the turn's `onEvent`.
   */
  onIdleEvent?: (event: AgentEvent) => void;
  /** Reported to the agent as `clientInfo`. */
  clientInfo?: { name: string; version: string };
  /** Values that must never appear in events or logs (besides the model-proxy token). */
  secrets?: readonly string[];
  /**
   * Whether `fs.readTextFile` is advertised (default true). An agent told no reads it reads the
   * worktree itself; reads it sends anyway are still served.
   */
  serveFileReads?: boolean;
  /**
   * Chooses how to log the agent in when it refuses `session/new` for want of a login, from
   * the `authMethods` it listed in `initialize` and what it said; the backend then calls
   * `authenticate` and asks for the session again. Without it, the refusal names the methods.
   */
  login?: (methods: readonly acp.AuthMethod[], refusal: string) => AcpLoginChoice;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * An AgentBackend for an agent that speaks the Agent Client Protocol over stdio. It starts the
 * agent on first use (in the worktree), serves the agent's fs and terminal requests through the
 * workspace agent, turns `session/update`s into AgentEvents and permission requests into
 * `permission_request` events, and restarts the agent on the next prompt after a crash or a
 * cancel that had to stop it, resuming its session when the agent can.
 *
 * Its parts: the started agent (AcpAgentConnection, over agent-process.ts), the client side it
 * serves (acp-client.ts: files and terminals), the event router and the turn, the permission
 * requests, and the session opener; this class starts and restarts the agent and runs turns.
 */
export class AcpBackend implements AgentBackend {
  readonly #options: AcpBackendOptions;
  readonly #agent: string;
  readonly #timeouts: AcpTimeouts;
  readonly #redaction: AcpRedaction;
  readonly #logger: AcpBackendLogger;
  readonly #terminals: AcpTerminals;
  readonly #events: AcpEventRouter;
  readonly #permissions: AcpPermissions;
  readonly #opener: AcpSessionOpener;
  readonly #handlers: AcpClientHandlers;
  #live: AcpAgentConnection | null = null;
  #starting: Promise<EnsureSessionResult> | null = null;
  #status: BackendHealth["status"] = "idle";
  #lastError: string | null = null;
  #disposed = false;
  /** The agent's session to resume when the agent is started (again). */
  #resumeSessionId: string | null;

  constructor(options: AcpBackendOptions) {
    const { context, launch, agent } = options;
    this.#options = options;
    this.#agent = agent;
    this.#timeouts = { ...DEFAULT_ACP_TIMEOUTS, ...options.timeouts };
    this.#redaction = new AcpRedaction(context, launch, options.secrets);
    const redaction = this.#redaction;
    const logger = redaction.logger(options.logger ?? silentLogger);
    this.#logger = logger;
    this.#resumeSessionId = context.resumeSessionId;
    const { files, terminals } = workspaceRequestHandlers(context);
    this.#terminals = terminals;
    const worktreePath = context.worktreePath;
    const events = new AcpEventRouter({
      agent,
      worktreePath,
      redaction,
      logger,
      onIdleEvent: options.onIdleEvent,
      session: () => this.#live,
    });
    this.#events = events;
    const memory = options.permissionMemory ?? createInMemoryPermissionMemory();
    const permissions = new AcpPermissions({
      sessionId: context.sessionId,
      agent,
      memory,
      logger,
      events,
    });
    this.#permissions = permissions;
    this.#opener = new AcpSessionOpener({
      agent,
      worktreePath,
      logger,
      redaction,
      events,
      login: options.login,
    });
    this.#handlers = {
      onUpdate: (notification) => events.onUpdate(notification),
      requestPermission: (params) => permissions.request(params),
      files,
      terminals,
      redact: (text) => redaction.text(text),
    };
  }

  async ensureSession(): Promise<EnsureSessionResult> {
    this.#assertUsable();
    const live = this.#live;
    if (live?.sessionId != null) return { agentSessionId: live.sessionId, resumed: live.resumed };
    this.#starting ??= this.#openSession().finally(() => {
      this.#starting = null;
    });
    return this.#starting;
  }

  async prompt(input: PromptInput): Promise<PromptResult> {
    this.#assertUsable();
    if (this.#events.turn !== null) {
      throw new AgentBackendError(
        "turn_in_progress",
        `${this.#agent} is still working on a turn; cancel it or wait for its turn_end`,
      );
    }
    const current = new AcpTurn(input, this.#logger);
    this.#events.turn = current;
    this.#status = "active";
    const onAbort = () => void this.cancel();
    input.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const stopReason = current.cancelRequested
        ? "cancelled"
        : await this.#runTurn(current, input);
      this.#permissions.cancelAll();
      this.#emit({ type: "turn_end", message_id: current.messageId, stop_reason: stopReason });
      await current.delivered();
      return { stopReason, text: current.text };
    } finally {
      input.signal?.removeEventListener("abort", onAbort);
      this.#events.turn = null;
      // A crash already said "crashed"; anything else leaves the backend ready for a turn.
      if (this.#status === "active") this.#status = "idle";
      current.finish();
    }
  }

  async cancel(): Promise<void> {
    const current = this.#events.turn;
    if (current === null) return;
    current.cancelling ??= this.#cancelTurn(current);
    await current.cancelling;
  }

  async respondToPermission(answer: PermissionAnswer): Promise<void> {
    this.#permissions.respond(answer);
  }

  async closeSession(): Promise<void> {
    await this.cancel();
    await this.#starting?.catch(() => {});
    const current = this.#live;
    if (current !== null) {
      if (current.sessionId !== null && current.capabilities.sessionCapabilities?.close) {
        await Promise.race([
          current.agent
            .request(acp.methods.agent.session.close, { sessionId: current.sessionId })
            .catch(() => {}),
          sleep(this.#timeouts.stopGraceMs),
        ]);
      }
      await current.stop();
    }
    await this.#terminals.releaseAll();
    this.#status = "closed";
  }

  async dispose(): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    await this.closeSession();
  }

  health(): BackendHealth {
    return {
      status: this.#status,
      pid: this.#live?.process.pid ?? null,
      lastError: this.#lastError,
    };
  }

  #assertUsable(): void {
    if (this.#disposed) {
      throw new AgentBackendError("disposed", `the ${this.#agent} backend was disposed`);
    }
  }

  #emit(event: AgentEvent): void {
    this.#events.emit(event);
  }

  #redact(text: string): string {
    return this.#redaction.text(text);
  }

  async #openSession(): Promise<EnsureSessionResult> {
    this.#live ??= await this.#startProcess();
    const current = this.#live;
    let agentSessionId: string;
    try {
      agentSessionId = await this.#opener.open(current, this.#resumeSessionId);
    } catch (error) {
      const failure = this.#startFailure(current.process, error);
      current.stopping = true;
      await current.process.stop(this.#timeouts.stopGraceMs);
      throw failure;
    }
    this.#resumeSessionId = agentSessionId;
    if (this.#status !== "active") this.#status = "idle";
    return { agentSessionId, resumed: current.resumed };
  }

  /** Spawns the agent (through its launcher, in the worktree) and initializes it. */
  async #startProcess(): Promise<AcpAgentConnection> {
    const { launch, context } = this.#options;
    let agentProcess: AgentProcess | null = null;
    try {
      agentProcess = spawnAgentProcess(launch, context.worktreePath);
      const started = await AcpAgentConnection.initialize(agentProcess, {
        handlers: this.#handlers,
        timeouts: this.#timeouts,
        serveFileReads: this.#options.serveFileReads ?? true,
        clientInfo: this.#options.clientInfo ?? { name: "deckhand", version: "0.0.0" },
      });
      void agentProcess.exited.then((exit) => this.#onExit(started, exit));
      return started;
    } catch (error) {
      const failure = this.#startFailure(agentProcess, error);
      await agentProcess?.stop(this.#timeouts.stopGraceMs);
      throw failure;
    }
  }

  #startFailure(agentProcess: AgentProcess | null, error: unknown): AgentBackendError {
    const tail = agentProcess?.stderrTail().trim() ?? "";
    const message = this.#redact(
      `cannot start ${this.#agent} (${this.#options.launch.executable}): ${errorMessage(error)}${tail ? `; its stderr ends with: ${tail}` : ""}`,
    );
    this.#lastError = message;
    return new AgentBackendError("agent_start_failed", message, { cause: error });
  }

  /** What happens when the agent process ends. */
  #onExit(current: AcpAgentConnection, exit: AgentExit): void {
    if (this.#live === current) this.#live = null;
    current.connection.close();
    void this.#terminals.releaseAll();
    this.#permissions.cancelAll();
    if (current.stopping) return;
    this.#status = "crashed";
    this.#lastError = this.#redact(`${this.#agent} ${describeExit(exit)}`);
    this.#logger.error("the agent process died", { agent: this.#agent, exit: describeExit(exit) });
  }

  async #runTurn(current: AcpTurn, input: PromptInput): Promise<StopReason> {
    const agent = this.#agent;
    let session: EnsureSessionResult;
    try {
      session = await this.ensureSession();
    } catch (error) {
      this.#turnError(current, this.#redact(errorMessage(error)));
      return "error";
    }
    // A cancel that came while the agent was starting: the turn ends before it begins.
    if (current.cancelRequested) return "cancelled";
    const live = this.#live;
    if (live === null) {
      this.#turnError(current, this.#lastError ?? `${agent} is not running`);
      return "error";
    }
    try {
      await live.applySettings(session.agentSessionId, input, (mode) =>
        this.#emit({ type: "mode", agent, mode_id: mode }),
      );
    } catch (error) {
      this.#turnError(
        current,
        this.#redact(`${agent} refused the turn's settings: ${errorMessage(error)}`),
      );
      return "error";
    }
    return this.#promptAgent(live, session.agentSessionId, current, input.text);
  }

  /** `session/prompt`, and what its failure means: the agent died, or it failed the prompt. */
  async #promptAgent(
    live: AcpAgentConnection,
    sessionId: string,
    current: AcpTurn,
    text: string,
  ): Promise<StopReason> {
    const agent = this.#agent;
    const agentProcess = live.process;
    try {
      const response = await live.agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text }],
      });
      await current.settle();
      const usage = usageFromResponse(response, current.messageId);
      if (usage !== null) this.#emit(usage);
      return stopReasonFrom(response.stopReason);
    } catch (error) {
      if (current.stoppedByCancel) return "cancelled";
      // A closed pipe usually means the agent died; its exit and stderr tell the real story.
      const exit = await Promise.race([agentProcess.exited, sleep(1_000).then(() => null)]);
      await current.settle();
      if (exit !== null) {
        const message = this.#redact(`${agent} ${describeExit(exit)} during the turn`);
        this.#lastError = message;
        this.#status = "crashed";
        this.#emit({
          type: "error",
          message_id: current.messageId,
          message,
          stderr_tail: this.#redact(agentProcess.stderrTail()),
        });
        return "error";
      }
      const message = this.#redact(`${agent} failed the prompt: ${errorMessage(error)}`);
      this.#lastError = message;
      this.#turnError(current, message);
      return "error";
    }
  }

  #turnError(current: AcpTurn, message: string): void {
    this.#emit({ type: "error", message_id: current.messageId, message });
  }

  async #cancelTurn(current: AcpTurn): Promise<void> {
    current.cancelRequested = true;
    const running = this.#live;
    if (running?.sessionId != null) {
      await running.agent
        .notify(acp.methods.agent.session.cancel, { sessionId: running.sessionId })
        .catch(() => {});
    }
    // ACP: the client answers every pending permission request with `cancelled`.
    this.#permissions.cancelAll();
    const { cancelMs } = this.#timeouts;
    const ended = await Promise.race([
      current.finished.then(() => true),
      sleep(cancelMs).then(() => false),
    ]);
    if (!ended && running !== null && this.#events.turn === current) {
      this.#logger.warn("the agent did not end the turn after session/cancel; stopping it", {
        agent: this.#agent,
        waitedMs: cancelMs,
      });
      current.stoppedByCancel = true;
      await running.stop();
    }
    await current.finished;
  }
}

export function createAcpBackend(options: AcpBackendOptions): AgentBackend {
  return new AcpBackend(options);
}
