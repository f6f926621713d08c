import { randomBytes } from "node:crypto";
import { type BatchRunService, createRunEventHub } from "@deckhand/batches";
import { type DbHandle, TaskRegistry, TaskWorker } from "@deckhand/db";
import type { DbModelTokenStore } from "@deckhand/model-proxy";
import type { ProviderService } from "@deckhand/providers";
import type { ProcessLauncher } from "@deckhand/sandbox";
import { redactSecrets, rememberSecrets } from "@deckhand/secrets";
import {
  AGENT_TURN_TASK,
  AgentTurns,
  agentBackendFactory,
  type BackendFactory,
  DbPermissionMemory,
  SessionActivityHub,
  type SessionDomain,
  SessionStreamHub,
} from "@deckhand/sessions";
import { ServerPath, WireHeader } from "@deckhand/wire";
import { type RunningAgent, startAgent } from "@deckhand/workspace-agent";
import type { Logger } from "pino";
import { announceAdminToken, generateAdminToken } from "./admin-token.ts";
import type { ApiTokenStore } from "./api-tokens.ts";
import { ADMIN_TOKEN_ENV, type ServerConfig, serverOriginPolicy } from "./config.ts";
import { createServerHandlers } from "./create-server-app.ts";
import type { DbUsageRecorder } from "./db-stores.ts";
import { ServerEndpoint } from "./server-endpoint.ts";
import {
  type Foundation,
  serverLogger,
  startBatchJobs,
  startFailure,
  startFoundation,
  TASK_SHUTDOWN_TIMEOUT_MS,
} from "./server-foundation.ts";
import { ServerHttp, type StreamHubs } from "./server-http.ts";
import { ServerParts, type ShutdownOrder } from "./server-parts.ts";
import { serverPaths } from "./server-paths.ts";
import { serverAgentEnvironment } from "./server-secrets.ts";
import { composeServices, type ServerServices } from "./server-services.ts";
import { sessionModelAccess } from "./session-model-access.ts";

export interface RunningServer {
  /** `http://host:port`, with the port actually bound (useful with port 0). */
  url: string;
  port: number;
  database: DbHandle;
  /** The local workspace agent; null when disabled. */
  agent: RunningAgent | null;
  /** Task types the worker runs; later features register theirs before `startServer`. */
  tasks: TaskRegistry;
  agentTurns: AgentTurns;
  modelTokens: DbModelTokenStore;
  modelUsage: DbUsageRecorder;
  sessions: SessionDomain;
  batches: BatchRunService;
  apiTokens: ApiTokenStore;
  providers: ProviderService;
  /**
   * The admin token generated at this start (first start beyond loopback without
   * ${ADMIN_TOKEN_ENV}, or --reset-admin-token); it was printed once and is not stored.
   */
  generatedAdminToken: string | null;
  /**
   * Stops claiming tasks and lets running ones finish (or releases them after
   * `taskShutdownTimeoutMs`), stops the agents' processes, then HTTP, the workspace agent and
   * the database, in that order.
   */
  close(): Promise<void>;
}

export interface StartServerOptions {
  /** Where JSON log lines go; standard output by default. */
  logDestination?: NodeJS.WritableStream;
  logger?: Logger;
  /** Task types for the worker; agent turns are added unless it has its own `agent_turn`. */
  tasks?: TaskRegistry;
  /**
   * Run batch workspace jobs in this process (default true): the server is an executor too. A
   * deployment with dedicated `deckhand executor` processes can turn it off.
   */
  runBatchJobs?: boolean;
  /**
   * Run the task worker of agent turns (and any other `tasks`) in this process (default true).
   * The CLI's embedded server, which exists for one batch run, turns it off, so it never picks
   * up an agent turn a stopped `deckhand up` left queued in the same data directory.
   */
  runTasks?: boolean;
  /**
   * Probe the agent providers that are due while the server starts (default true). A server
   * that serves no sessions (the CLI's embedded one) turns it off: the probes would start agents
   * for nothing.
   */
  warmUpProviders?: boolean;
  /** Makes agent backends; by default the ACP backend or the native agent, by provider. */
  createBackend?: BackendFactory;
  /** Where the generated admin token is printed; standard error by default. */
  announce?: (line: string) => void;
  /**
   * How long shutdown lets running tasks finish before aborting and releasing them;
   * 10 s (`TASK_SHUTDOWN_TIMEOUT_MS`) by default.
   */
  taskShutdownTimeoutMs?: number;
}

/**
 * How a running server stops. The order matters: a running agent turn talks to the model proxy
 * over this server's HTTP listener, so HTTP stays up until no task runs and no agent process is
 * left.
 */
const SHUTDOWN_ORDER: ShutdownOrder = [
  // 0. Browsers hear of it at once: their streams close (they reconnect to the next server from
  //    their last event id) and the API refuses new work with a 503, rather than showing a live
  //    stream and taking a message no worker will run.
  ["streams"],
  // 1. Stop claiming; running tasks get the worker's shutdown timeout to finish, then their
  //    abort signal fires and they go back to pending without spending an attempt. Agent turns
  //    are interrupted at once instead (their messages say so): a turn waits on a model for
  //    minutes, so the timeout would only keep the server up for nothing.
  // 2. The agents' processes stop once their turns ended (a released turn's agent too).
  ["task-worker", "batch-worker", "agent-turns"],
  ["providers"],
  // 3. HTTP: no new connections; requests in flight get a short grace, then are cut.
  ["http"],
  ["session-hub"],
  ["run-hub"],
  // 4. The workspace agent (whatever processes it still runs), then the database.
  ["workspace-agent"],
  ["launcher"],
  ["database"],
];

/** What the API reads of the server's own state. */
interface ServerState {
  /** Set as shutdown begins: the API then refuses new work with a 503 that says so. */
  shuttingDown: boolean;
  worker: TaskWorker | null;
  /** Set as the worker stops claiming. */
  workerStopped: boolean;
}

/** What every step of the start shares: the settings, the log, what has started, the options. */
interface Start extends Foundation {
  options: StartServerOptions;
}

/** Starts the control plane: database (migrated), workspace agent, task worker, HTTP server. */
export async function startServer(
  config: ServerConfig,
  options: StartServerOptions = {},
): Promise<RunningServer> {
  // Deckhand's own secrets: redacted wherever this process redacts (logs, events, parts,
  // recordings, agent output), and never inherited by an agent process.
  const agentEnvironment = serverAgentEnvironment(config);
  const start: Start = {
    config,
    options,
    logger: options.logger ?? serverLogger(config, options.logDestination),
    agentEnvironment,
    parts: new ServerParts(),
    endpoint: new ServerEndpoint(),
  };
  try {
    return await compose(start);
  } catch (error) {
    // Undo what started, so a failed start leaves no process behind.
    await start.parts.undo();
    throw startFailure(config, error);
  }
}

/** The parts, started in order, each registered to stop; then the running server. */
async function compose(start: Start): Promise<RunningServer> {
  const { config, options, logger, parts, endpoint } = start;
  const { database, launcher, workspacesRoot } = await startFoundation(start);
  const agent = await startWorkspaceAgent(start, launcher, workspacesRoot);
  const services = composeServices({
    config,
    database,
    workspacesRoot,
    agentEnvironment: start.agentEnvironment,
    launcher,
    endpoint,
    logger,
  });
  const generatedAdminToken = await generateAdminToken(config, services.apiTokens, logger);
  parts.started("providers", () => services.providers.close());
  // Before providers.close() when a start fails: a probe waiting for a server that never
  // listened gives up.
  parts.started("endpoint", async () => endpoint.abandon());
  // Config problems reach the log now, and probes that are due run while the server starts.
  if (options.warmUpProviders ?? true) await services.providers.warmUp();
  const hubs = await startHubs(start, database, services.sessions);
  const { agentTurns, tasks } = await startAgentTurns(start, {
    database,
    services,
    launcher,
    workspaceAgent: agent ? { url: agent.agent.url, token: agent.token } : null,
  });
  const state: ServerState = { shuttingDown: false, worker: null, workerStopped: false };
  const http = await startHttp(start, { database, services, agentTurns, hubs, agent, state });
  // The workers start once the server listens: agent turns reach the model proxy through it.
  await startTaskWorker(start, database, tasks, state);
  await startBatchJobs(start, database, services.batches, options);
  announce(start, { url: http.url, database, agent: agent?.agent ?? null, generatedAdminToken });

  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      logger.info(
        "shutting down: no new tasks; running tasks finish or are released, then agents, HTTP, workspace agent and database stop",
      );
      state.shuttingDown = true;
      await parts.stop(SHUTDOWN_ORDER);
      logger.info("stopped");
      logger.flush?.();
    })();
    return closing;
  };
  return {
    url: http.url,
    port: http.port,
    database,
    agent: agent?.agent ?? null,
    tasks,
    modelTokens: services.modelTokens,
    modelUsage: services.modelUsage,
    sessions: services.sessions,
    batches: services.batches,
    apiTokens: services.apiTokens,
    providers: services.providers,
    agentTurns,
    generatedAdminToken,
    close,
  };
}

/** The local workspace agent over the workspaces root; none when the config turns it off. */
async function startWorkspaceAgent(
  start: Start,
  launcher: ProcessLauncher,
  root: string,
): Promise<{ agent: RunningAgent; token: string } | null> {
  const { config, logger } = start;
  if (!config.workspaceAgent) return null;
  // Only this process talks to the agent; a fresh token each start is enough.
  const token = randomBytes(32).toString("base64url");
  rememberSecrets([token]);
  const agent = await startAgent(
    {
      host: "127.0.0.1",
      port: 0,
      root,
      token,
      maxRunningProcesses: 64,
      terminateGraceMs: 5_000,
      shutdownGraceMs: 5_000,
      logLevel: config.logLevel,
      maxRequestBodyBytes: config.maxRequestBodyBytes,
    },
    {
      logger: logger.child({ component: "workspace-agent" }),
      environment: start.agentEnvironment.environment,
      launcher,
    },
  );
  start.parts.started("workspace-agent", () => agent.close());
  return { agent, token };
}

/** The event feeds of the session, session-activity and batch-run streams. */
async function startHubs(
  start: Start,
  database: DbHandle,
  sessions: SessionDomain,
): Promise<StreamHubs> {
  const { parts } = start;
  const hub = new SessionStreamHub(database);
  await hub.start();
  parts.started("session-hub", () => hub.stop());
  const activityHub = new SessionActivityHub(database, {
    sessionsById: (ids) => sessions.sessions.byIds(ids),
  });
  await activityHub.start();
  parts.started("activity-hub", () => activityHub.stop());
  const runHub = createRunEventHub(database);
  await runHub.start();
  parts.started("run-hub", () => runHub.stop());
  return { sessions: hub, activity: activityHub, runs: runHub };
}

/** Agent turns, and the task types the worker runs (theirs unless the caller brings one). */
async function startAgentTurns(
  start: Start,
  input: {
    database: DbHandle;
    services: ServerServices;
    launcher: ProcessLauncher;
    workspaceAgent: { url: string; token: string } | null;
  },
): Promise<{ agentTurns: AgentTurns; tasks: TaskRegistry }> {
  const { config, options, logger, endpoint } = start;
  const { database, services } = input;
  const agentTurns = new AgentTurns({
    database,
    sessions: services.sessions,
    providers: services.providers,
    modelAccess: sessionModelAccess({
      modelTokens: services.modelTokens,
      serverUrl: () => endpoint.url(),
      serves: (agentType) => agentType in config.modelUpstreams,
    }),
    workspaceAgent: input.workspaceAgent,
    createBackend:
      options.createBackend ??
      agentBackendFactory({
        permissionMemory: new DbPermissionMemory(database.db),
        dataDir: config.dataDir,
        agentEnvironment: start.agentEnvironment.environment,
        launcher: input.launcher,
        ...(config.nativeModel ? { nativeModel: config.nativeModel } : {}),
      }),
    logger,
  });
  await agentTurns.start();
  start.parts.started("agent-turns", () => agentTurns.stop());
  const tasks = options.tasks ?? new TaskRegistry();
  // Tests may bring their own agent_turn handler; otherwise the agent turns run here.
  if (!tasks.has(AGENT_TURN_TASK)) agentTurns.register(tasks);
  return { agentTurns, tasks };
}

/** The app, listening, with its WebSocket streams; the endpoint then knows where it is. */
async function startHttp(
  start: Start,
  input: {
    database: DbHandle;
    services: ServerServices;
    agentTurns: AgentTurns;
    hubs: StreamHubs;
    agent: { agent: RunningAgent; token: string } | null;
    state: ServerState;
  },
): Promise<ServerHttp> {
  const { config, logger, parts } = start;
  const { database, services, state } = input;
  const publishing = services.batches.publishing;
  const originPolicy = serverOriginPolicy(config);
  const { app, ahead } = createServerHandlers({
    serverPaths: serverPaths(config.dataDir),
    database,
    originPolicy,
    requireAuth: config.requireAuth,
    sessions: services.sessions,
    apiTokens: services.apiTokens,
    providers: services.providers,
    agentTurns: input.agentTurns,
    adminToken: config.adminToken,
    agent: input.agent ? { url: input.agent.agent.url, token: input.agent.token } : null,
    queueRunning: () => state.worker !== null && !state.workerStopped,
    shuttingDown: () => state.shuttingDown,
    batches: services.batches,
    ...(publishing ? { publishing } : {}),
    modelUpstreams: config.modelUpstreams,
    codeHostConnections: config.codeHostConnections,
    modelProxyRateLimit: config.modelProxyRateLimit,
    maxRequestBodyBytes: config.maxRequestBodyBytes,
    modelTokens: services.modelTokens,
    modelUsage: services.modelUsage,
    spend: services.spend,
    executors: services.executors,
    logger,
    webDir: config.webDir ?? null,
  });
  const http = await ServerHttp.listen({
    config,
    fetch: app.fetch,
    ahead,
    originPolicy,
    hubs: input.hubs,
    sessions: services.sessions,
    batches: services.batches,
    apiTokens: services.apiTokens,
    logger,
  });
  parts.started("http", () => http.stop());
  parts.started("streams", () => http.closeStreams());
  start.endpoint.listened(http.url, http.port, (request) => app.fetch(request));
  return http;
}

/** The worker of agent turns (and any other `tasks`), unless the caller runs none here. */
async function startTaskWorker(
  start: Start,
  database: DbHandle,
  tasks: TaskRegistry,
  state: ServerState,
): Promise<void> {
  const { config, options, logger } = start;
  if (!(options.runTasks ?? true)) return;
  const worker = new TaskWorker({
    database,
    registry: tasks,
    // Agent turns mostly wait on models; several run at once (one at a time per agent).
    concurrency: config.taskConcurrency,
    onError: (error) => logger.warn({ err: error }, "task worker error; retrying"),
    redact: (text) => redactSecrets(text),
    onTaskFailed: (task) => logger.warn(task, "task attempt failed"),
    shutdownTimeoutMs: options.taskShutdownTimeoutMs ?? TASK_SHUTDOWN_TIMEOUT_MS,
  });
  state.worker = worker;
  await worker.start();
  start.parts.started("task-worker", async () => {
    state.workerStopped = true;
    await worker.stop();
  });
}

/** The listening line, the next command to try, and the generated admin token if any. */
function announce(
  start: Start,
  running: {
    url: string;
    database: DbHandle;
    agent: RunningAgent | null;
    generatedAdminToken: string | null;
  },
): void {
  const { config, logger } = start;
  const { url } = running;
  logger.info(
    {
      url,
      dataDir: config.dataDir,
      database: running.database.kind,
      auth: config.requireAuth,
      agent: running.agent?.url ?? null,
      modelAgentTypes: Object.keys(config.modelUpstreams),
    },
    "deckhand server listening",
  );
  logger.info(
    `next: curl ${url}${ServerPath.health}${config.requireAuth ? ` -H "${WireHeader.authorization}: Bearer $${ADMIN_TOKEN_ENV}"` : ""}`,
  );
  if (running.generatedAdminToken !== null) {
    announceAdminToken(running.generatedAdminToken, start.options.announce);
  }
}
