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
 */
export function createAcpBackend(options: AcpBackendOptions): AgentBackend {
  const { context, launch, agent } = options;
  const timeouts: AcpTimeouts = { ...DEFAULT_ACP_TIMEOUTS, ...options.timeouts };
  const redaction = new AcpRedaction(context, launch, options.secrets);
  const redact = (text: string): string => redaction.text(text);
  const logger = redaction.logger(options.logger ?? silentLogger);

  const { files, terminals } = workspaceRequestHandlers(context);

  let live: AcpAgentConnection | null = null;
  let starting: Promise<EnsureSessionResult> | null = null;
  let status: BackendHealth["status"] = "idle";
  let lastError: string | null = null;
  let disposed = false;
  /** The agent's session to resume when the agent is started (again). */
  let resumeSessionId: string | null = context.resumeSessionId;
  const events = new AcpEventRouter({
    agent,
    worktreePath: context.worktreePath,
    redaction,
    logger,
    onIdleEvent: options.onIdleEvent,
    session: () => live,
  });
  const emit = (event: AgentEvent): void => events.emit(event);
  const permissions = new AcpPermissions({
    sessionId: context.sessionId,
    agent,
    memory: options.permissionMemory ?? createInMemoryPermissionMemory(),
    logger,
    events,
  });

  const opener = new AcpSessionOpener({
    agent,
    worktreePath: context.worktreePath,
    logger,
    redaction,
    events,
    login: options.login,
  });

  const handlers: AcpClientHandlers = {
    onUpdate: (notification) => events.onUpdate(notification),
    requestPermission: (params) => permissions.request(params),
    files,
    terminals,
    redact,
  };

  function startFailure(agentProcess: AgentProcess | null, error: unknown): AgentBackendError {
    const tail = agentProcess?.stderrTail().trim() ?? "";
    const message = redact(
      `cannot start ${agent} (${launch.executable}): ${errorMessage(error)}${tail ? `; its stderr ends with: ${tail}` : ""}`,
    );
    lastError = message;
    return new AgentBackendError("agent_start_failed", message, { cause: error });
  }

  /** What happens when the agent process ends. */
  function onExit(current: AcpAgentConnection, exit: AgentExit): void {
    if (live === current) live = null;
    current.connection.close();
    void terminals.releaseAll();
    permissions.cancelAll();
    if (current.stopping) return;
    status = "crashed";
    lastError = redact(`${agent} ${describeExit(exit)}`);
    logger.error("the agent process died", { agent, exit: describeExit(exit) });
  }

  async function startProcess(): Promise<AcpAgentConnection> {
    let agentProcess: AgentProcess | null = null;
    try {
      agentProcess = spawnAgentProcess(launch, context.worktreePath);
      const started = await AcpAgentConnection.initialize(agentProcess, {
        handlers,
        timeouts,
        serveFileReads: options.serveFileReads ?? true,
        clientInfo: options.clientInfo ?? { name: "deckhand", version: "0.0.0" },
      });
      void agentProcess.exited.then((exit) => onExit(started, exit));
      return started;
    } catch (error) {
      const failure = startFailure(agentProcess, error);
      await agentProcess?.stop(timeouts.stopGraceMs);
      throw failure;
    }
  }

  async function openSession(): Promise<EnsureSessionResult> {
    live ??= await startProcess();
    const current = live;
    let agentSessionId: string;
    try {
      agentSessionId = await opener.open(current, resumeSessionId);
    } catch (error) {
      const failure = startFailure(current.process, error);
      current.stopping = true;
      await current.process.stop(timeouts.stopGraceMs);
      throw failure;
    }
    resumeSessionId = agentSessionId;
    if (status !== "active") status = "idle";
    return { agentSessionId, resumed: current.resumed };
  }

  async function ensureSession(): Promise<EnsureSessionResult> {
    if (disposed) throw new AgentBackendError("disposed", `the ${agent} backend was disposed`);
    if (live?.sessionId != null) return { agentSessionId: live.sessionId, resumed: live.resumed };
    starting ??= openSession().finally(() => {
      starting = null;
    });
    return starting;
  }

  async function runTurn(current: AcpTurn, input: PromptInput): Promise<StopReason> {
    let session: EnsureSessionResult;
    try {
      session = await ensureSession();
    } catch (error) {
      emit({ type: "error", message_id: current.messageId, message: redact(errorMessage(error)) });
      return "error";
    }
    // A cancel that came while the agent was starting: the turn ends before it begins.
    if (current.cancelRequested) return "cancelled";
    if (live === null) {
      emit({
        type: "error",
        message_id: current.messageId,
        message: lastError ?? `${agent} is not running`,
      });
      return "error";
    }
    const agentProcess = live.process;
    const connection = live.connection;
    try {
      await live.applySettings(session.agentSessionId, input, (mode) =>
        emit({ type: "mode", agent, mode_id: mode }),
      );
    } catch (error) {
      const message = redact(`${agent} refused the turn's settings: ${errorMessage(error)}`);
      emit({ type: "error", message_id: current.messageId, message });
      return "error";
    }
    try {
      const response = await connection.agent.request(acp.methods.agent.session.prompt, {
        sessionId: session.agentSessionId,
        prompt: [{ type: "text", text: input.text }],
      });
      await current.settle();
      const usage = usageFromResponse(response, current.messageId);
      if (usage !== null) emit(usage);
      return stopReasonFrom(response.stopReason);
    } catch (error) {
      if (current.stoppedByCancel) return "cancelled";
      // A closed pipe usually means the agent died; its exit and stderr tell the real story.
      const exit = await Promise.race([agentProcess.exited, sleep(1_000).then(() => null)]);
      await current.settle();
      if (exit !== null) {
        const message = redact(`${agent} ${describeExit(exit)} during the turn`);
        lastError = message;
        status = "crashed";
        emit({
          type: "error",
          message_id: current.messageId,
          message,
          stderr_tail: redact(agentProcess.stderrTail()),
        });
        return "error";
      }
      const message = redact(`${agent} failed the prompt: ${errorMessage(error)}`);
      lastError = message;
      emit({ type: "error", message_id: current.messageId, message });
      return "error";
    }
  }

  async function cancelTurn(current: AcpTurn): Promise<void> {
    current.cancelRequested = true;
    const running = live;
    if (running?.sessionId != null) {
      await running.agent
        .notify(acp.methods.agent.session.cancel, { sessionId: running.sessionId })
        .catch(() => {});
    }
    // ACP: the client answers every pending permission request with `cancelled`.
    permissions.cancelAll();
    const ended = await Promise.race([
      current.finished.then(() => true),
      sleep(timeouts.cancelMs).then(() => false),
    ]);
    if (!ended && running !== null && events.turn === current) {
      logger.warn("the agent did not end the turn after session/cancel; stopping it", {
        agent,
        waitedMs: timeouts.cancelMs,
      });
      current.stoppedByCancel = true;
      await running.stop();
    }
    await current.finished;
  }

  async function prompt(input: PromptInput): Promise<PromptResult> {
    if (disposed) throw new AgentBackendError("disposed", `the ${agent} backend was disposed`);
    if (events.turn !== null) {
      throw new AgentBackendError(
        "turn_in_progress",
        `${agent} is still working on a turn; cancel it or wait for its turn_end`,
      );
    }
    const current = new AcpTurn(input, logger);
    events.turn = current;
    status = "active";
    const onAbort = () => void cancel();
    input.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const stopReason = current.cancelRequested ? "cancelled" : await runTurn(current, input);
      permissions.cancelAll();
      emit({ type: "turn_end", message_id: current.messageId, stop_reason: stopReason });
      await current.delivered();
      return { stopReason, text: current.text };
    } finally {
      input.signal?.removeEventListener("abort", onAbort);
      events.turn = null;
      // A crash already said "crashed"; anything else leaves the backend ready for a turn.
      if (status === "active") status = "idle";
      current.finish();
    }
  }

  async function cancel(): Promise<void> {
    const current = events.turn;
    if (current === null) return;
    current.cancelling ??= cancelTurn(current);
    await current.cancelling;
  }

  async function closeSession(): Promise<void> {
    await cancel();
    await starting?.catch(() => {});
    const current = live;
    if (current !== null) {
      if (current.sessionId !== null && current.capabilities.sessionCapabilities?.close) {
        await Promise.race([
          current.agent
            .request(acp.methods.agent.session.close, { sessionId: current.sessionId })
            .catch(() => {}),
          sleep(timeouts.stopGraceMs),
        ]);
      }
      await current.stop();
    }
    await terminals.releaseAll();
    status = "closed";
  }

  return {
    ensureSession,
    prompt,
    cancel,

    async respondToPermission(answer: PermissionAnswer) {
      permissions.respond(answer);
    },

    closeSession,

    async dispose() {
      if (disposed) return;
      disposed = true;
      await closeSession();
    },

    health() {
      return { status, pid: live?.process.pid ?? null, lastError };
    },
  };
}
