import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import {
  type BatchRunService,
  type BatchWorker,
  createRunEventHub,
  startBatchWorker,
} from "@deckhand/batches";
import {
  createDb,
  DataDirLockedError,
  type DbHandle,
  TaskRegistry,
  TaskWorker,
} from "@deckhand/db";
import type { DbModelTokenStore } from "@deckhand/model-proxy";
import type { ProviderService } from "@deckhand/providers";
import { redactSecrets, rememberSecrets } from "@deckhand/secrets";
import {
  AGENT_TURN_TASK,
  AgentTurns,
  agentBackendFactory,
  type BackendFactory,
  DbPermissionMemory,
  SessionActivityHub,
  type SessionService,
  SessionStreamHub,
} from "@deckhand/sessions";
import { ServerPath, WireHeader } from "@deckhand/wire";
import { type RunningAgent, startAgent } from "@deckhand/workspace-agent";
import pino, { type Logger } from "pino";
import { announceAdminToken, generateAdminToken } from "./admin-token.ts";
import { startAgentLauncher } from "./agent-launcher.ts";
import type { ApiTokenStore } from "./api-tokens.ts";
import { ADMIN_TOKEN_ENV, type ServerConfig, serverOriginPolicy } from "./config.ts";
import { createServerApp } from "./create-server-app.ts";
import type { DbUsageRecorder } from "./db-stores.ts";
import { ServerEndpoint } from "./server-endpoint.ts";
import { ServerError } from "./server-error.ts";
import { ServerHttp } from "./server-http.ts";
import { serverPaths } from "./server-paths.ts";
import { serverAgentEnvironment } from "./server-secrets.ts";
import { composeServices } from "./server-services.ts";

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
  sessions: SessionService;
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

/** What shutdown gives running tasks (agent turns) to finish before releasing them. */
export const TASK_SHUTDOWN_TIMEOUT_MS = 10_000;

/** A provider probe's model token outlives any probe (20 s by default) and is revoked after it. */
const _PROBE_MODEL_TOKEN_TTL_MS = 5 * 60_000;
/** Starts the control plane: database (migrated), workspace agent, task worker, HTTP server. */
export async function startServer(
  config: ServerConfig,
  options: StartServerOptions = {},
): Promise<RunningServer> {
  // Deckhand's own secrets: redacted wherever this process redacts (logs, events, parts,
  // recordings, agent output), and never inherited by an agent process.
  const { policy: agentPolicy, environment: agentEnv } = serverAgentEnvironment(config);
  const logger =
    options.logger ??
    pino(
      {
        level: config.logLevel,
        base: { service: "deckhand-server" },
        // The last line of defence: no log line leaves the process with a model token in it.
        hooks: { streamWrite: (line) => redactSecrets(line) },
      },
      options.logDestination ?? process.stdout,
    );
  // Undo what started if a later step fails, so a failed start leaves no process behind.
  const cleanups: (() => Promise<void>)[] = [];
  const undo = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  };
  try {
    await mkdir(config.dataDir, { recursive: true });
    const database = await createDb(
      config.databaseUrl !== null
        ? { databaseUrl: config.databaseUrl }
        : { dataDir: join(config.dataDir, "db") },
    );
    cleanups.push(() => database.close());
    logger.info({ kind: database.kind }, "database ready (migrations applied)");

    const endpoint = new ServerEndpoint();
    const launcher = await startAgentLauncher(config, agentPolicy, logger, endpoint);
    cleanups.push(() => launcher.close());

    const workspacesRoot = join(config.dataDir, "workspaces");
    await mkdir(workspacesRoot, { recursive: true });
    let agent: RunningAgent | null = null;
    let agentToken: string | null = null;
    if (config.workspaceAgent) {
      const root = workspacesRoot;
      // Only this process talks to the agent; a fresh token each start is enough.
      agentToken = randomBytes(32).toString("base64url");
      rememberSecrets([agentToken]);
      agent = await startAgent(
        {
          host: "127.0.0.1",
          port: 0,
          root,
          token: agentToken,
          maxRunningProcesses: 64,
          terminateGraceMs: 5_000,
          shutdownGraceMs: 5_000,
          logLevel: config.logLevel,
          maxRequestBodyBytes: config.maxRequestBodyBytes,
        },
        {
          logger: logger.child({ component: "workspace-agent" }),
          environment: agentEnv,
          launcher,
        },
      );
      const started = agent;
      cleanups.push(() => started.close());
    }

    const services = composeServices({
      config,
      database,
      workspacesRoot,
      agentEnvironment: { policy: agentPolicy, environment: agentEnv },
      launcher,
      endpoint,
      logger,
    });
    const { modelTokens, modelUsage, apiTokens, sessions, batches, providers } = services;
    const publishing = batches.publishing;
    const generatedAdminToken = await generateAdminToken(config, apiTokens, logger);
    /** Whether the proxy serves an agent type: sessions and probes point such agents at it. */
    const hasUpstream = (agentType: string) => agentType in config.modelUpstreams;
    cleanups.push(() => providers.close());
    // Runs before providers.close(): a probe waiting for a server that never listened gives up.
    cleanups.push(async () => endpoint.abandon());
    // Config problems reach the log now, and probes that are due run while the server starts.
    if (options.warmUpProviders ?? true) await providers.warmUp();

    const hub = new SessionStreamHub(database);
    await hub.start();
    cleanups.push(() => hub.stop());
    const activityHub = new SessionActivityHub(database, {
      sessionsById: (ids) => sessions.sessionsById(ids),
    });
    await activityHub.start();
    cleanups.push(() => activityHub.stop());
    const runHub = createRunEventHub(database);
    await runHub.start();
    cleanups.push(() => runHub.stop());

    const agentTurns = new AgentTurns({
      database,
      sessions,
      providers,
      modelTokens,
      serverUrl: () => endpoint.url(),
      workspaceAgent: agent ? { url: agent.url, token: agentToken } : null,
      hasUpstream,
      createBackend:
        options.createBackend ??
        agentBackendFactory({
          permissionMemory: new DbPermissionMemory(database.db),
          dataDir: config.dataDir,
          agentEnvironment: agentEnv,
          launcher,
          ...(config.nativeModel ? { nativeModel: config.nativeModel } : {}),
        }),
      logger,
    });
    await agentTurns.start();
    cleanups.push(() => agentTurns.stop());
    const tasks = options.tasks ?? new TaskRegistry();
    // Tests may bring their own agent_turn handler; otherwise the agent turns run here.
    if (!tasks.has(AGENT_TURN_TASK)) agentTurns.register(tasks);

    let workerStopped = false;
    /** Set as shutdown begins: the API then refuses new work with a 503 that says so. */
    let shuttingDown = false;
    let worker: TaskWorker | null = null;
    let batchWorker: BatchWorker | null = null;
    const originPolicy = serverOriginPolicy(config);
    const app = createServerApp({
      serverPaths: serverPaths(config.dataDir),
      database,
      originPolicy,
      requireAuth: config.requireAuth,
      sessions,
      apiTokens,
      providers,
      agentTurns,
      adminToken: config.adminToken,
      agent: agent ? { url: agent.url, token: agentToken } : null,
      queueRunning: () => worker !== null && !workerStopped,
      shuttingDown: () => shuttingDown,
      batches,
      ...(publishing ? { publishing } : {}),
      modelUpstreams: config.modelUpstreams,
      codeHostConnections: config.codeHostConnections,
      modelProxyRateLimit: config.modelProxyRateLimit,
      maxRequestBodyBytes: config.maxRequestBodyBytes,
      modelTokens,
      modelUsage,
      logger,
      webDir: config.webDir ?? null,
    });

    const http = await ServerHttp.listen({
      config,
      fetch: app.fetch,
      originPolicy,
      hubs: { sessions: hub, activity: activityHub, runs: runHub },
      sessions,
      batches,
      apiTokens,
      logger,
    });
    const { server, port, url } = http;
    cleanups.push(() => new Promise<void>((resolveClose) => server.close(() => resolveClose())));
    endpoint.listened(url, port, (request) => app.fetch(request));

    // The worker starts once the server listens: agent turns reach the model proxy through it.
    if (options.runTasks ?? true) {
      worker = new TaskWorker({
        database,
        registry: tasks,
        // Agent turns mostly wait on models; several run at once (one at a time per agent).
        concurrency: config.taskConcurrency,
        onError: (error) => logger.warn({ err: error }, "task worker error; retrying"),
        redact: (text) => redactSecrets(text),
        onTaskFailed: (task) => logger.warn(task, "task attempt failed"),
        shutdownTimeoutMs: options.taskShutdownTimeoutMs ?? TASK_SHUTDOWN_TIMEOUT_MS,
      });
      await worker.start();
      const startedWorker = worker;
      cleanups.push(() => startedWorker.stop());
    }
    // Batch workspace jobs are CPU-bound and long; they get a worker of their own, so a batch
    // run never takes the slots agent turns wait in, and its concurrency follows the CPUs.
    // `batchConcurrency: 0` leaves them to `deckhand executor` processes on the same database.
    if ((options.runBatchJobs ?? true) && config.batchConcurrency > 0) {
      batchWorker = await startBatchWorker({
        database,
        service: batches,
        concurrency: config.batchConcurrency,
        onError: (error) => logger.warn({ err: error }, "batch worker error; retrying"),
        redact: (text) => redactSecrets(text),
        onTaskFailed: (task) => logger.warn(task, "batch job attempt failed"),
        onRecovered: (recovered) =>
          logger.warn(recovered, "failed batch jobs the queue gave up on (see their errors)"),
        shutdownTimeoutMs: options.taskShutdownTimeoutMs ?? TASK_SHUTDOWN_TIMEOUT_MS,
      });
      // Tracking runs where batch jobs run; the first refresh is due one interval from now.
      if (config.codeHostConnections.length > 0) await publishing?.scheduleTracking();
      const startedBatchWorker = batchWorker;
      cleanups.push(() => startedBatchWorker.stop());
    } else {
      logger.info(
        "this server runs no batch workspace jobs (batchConcurrency 0): deckhand executor processes on its database run them",
      );
    }

    logger.info(
      {
        url,
        dataDir: config.dataDir,
        database: database.kind,
        auth: config.requireAuth,
        agent: agent?.url ?? null,
        modelAgentTypes: Object.keys(config.modelUpstreams),
      },
      "deckhand server listening",
    );
    logger.info(
      `next: curl ${url}${ServerPath.health}${config.requireAuth ? ` -H "${WireHeader.authorization}: Bearer $${ADMIN_TOKEN_ENV}"` : ""}`,
    );
    if (generatedAdminToken !== null) {
      announceAdminToken(generatedAdminToken, options.announce);
    }

    let closing: Promise<void> | null = null;
    const close = () => {
      closing ??= (async () => {
        logger.info(
          "shutting down: no new tasks; running tasks finish or are released, then agents, HTTP, workspace agent and database stop",
        );
        // 0. Browsers hear of it at once: their streams close (they reconnect to the next
        //    server from their last event id) and the API refuses new work with a 503, rather
        //    than showing a live stream and taking a message no worker will run.
        shuttingDown = true;
        await http.closeStreams();
        // The order matters: a running agent turn talks to the model proxy over this server's
        // HTTP listener, so HTTP stays up until no task runs and no agent process is left.
        // 1. Stop claiming; running tasks get the worker's shutdown timeout to finish, then
        //    their abort signal fires and they go back to pending without spending an attempt.
        //    Agent turns are interrupted at once instead (their messages say so): a turn waits
        //    on a model for minutes, so the timeout would only keep the server up for nothing.
        workerStopped = true;
        // 2. The agents' processes stop once their turns ended (a released turn's agent too).
        await Promise.all([worker?.stop(), batchWorker?.stop(), agentTurns.stop()]);
        await providers.close();
        // 3. HTTP: no new connections; requests in flight get a short grace, then are cut.
        await http.stop();
        await hub.stop();
        await runHub.stop();
        // 4. The workspace agent (whatever processes it still runs), then the database.
        await agent?.close();
        await launcher.close();
        await database.close();
        logger.info("stopped");
        logger.flush?.();
      })();
      return closing;
    };
    return {
      url,
      port,
      database,
      agent,
      tasks,
      modelTokens,
      modelUsage,
      sessions,
      batches,
      apiTokens,
      providers,
      agentTurns,
      generatedAdminToken,
      close,
    };
  } catch (error) {
    await undo();
    if (error instanceof ServerError) throw error;
    if (error instanceof DataDirLockedError) {
      // Named as the user gave it (--data-dir), not PGlite's directory inside it.
      const where = error.holder.hostname === hostname() ? "" : ` on host ${error.holder.hostname}`;
      throw new ServerError(
        "data_dir_locked",
        `the data directory ${config.dataDir} is in use by deckhand process ${error.holder.pid}${where}; stop that process, choose another --data-dir, or use PostgreSQL (--database-url) to run several processes`,
        { cause: error },
      );
    }
    throw new ServerError(
      "start_failed",
      `the server could not start: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}
