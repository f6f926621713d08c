import { randomBytes, randomUUID } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import {
  type BatchRunService,
  type BatchWorker,
  batchDirectories,
  codeHostSecrets,
  createBatchRunService,
  createModelSpend,
  createRunEventHub,
  ExecutionEnvironment,
  ExecutorJobs,
  startBatchWorker,
} from "@deckhand/batches";
import {
  createDb,
  DataDirLockedError,
  type DbHandle,
  TaskRegistry,
  TaskWorker,
} from "@deckhand/db";
import { admitUpgrade, listen, refuseUpgrade, tokenMatches } from "@deckhand/http-kit";
import {
  batchJobModelProviderAccess,
  DbModelTokenStore,
  leaseModelProxy,
} from "@deckhand/model-proxy";
import { createProviderService, type ProviderService } from "@deckhand/providers";
import { detectSandbox, ProcessLauncher } from "@deckhand/sandbox";
import {
  agentEnvironment,
  agentEnvironmentPolicy,
  redactSecrets,
  rememberSecrets,
} from "@deckhand/secrets";
import {
  AGENT_TURN_TASK,
  AgentTurns,
  agentBackendFactory,
  type BackendFactory,
  DbPermissionMemory,
  DEFAULT_NATIVE_MODEL,
  NATIVE_AGENT_TYPE,
  SessionActivityHub,
  SessionBudgetScopes,
  SessionService,
  SessionStreamHub,
  SessionsError,
} from "@deckhand/sessions";
import {
  ServerPath,
  type SessionActivityEvent,
  type SessionEvent,
  type StoredBatchRunEvent,
  WireHeader,
  WirePath,
  WireSubprotocol,
} from "@deckhand/wire";
import { type RunningAgent, startAgent } from "@deckhand/workspace-agent";
import pino, { type Logger } from "pino";
import { ApiTokenStore } from "./api-tokens.ts";
import { batchesErrorToHttp } from "./batches-http-errors.ts";
import { ADMIN_TOKEN_ENV, type ServerConfig, serverOriginPolicy } from "./config.ts";
import { createServerApp } from "./create-server-app.ts";
import { DbProbeStore, DbUsageRecorder } from "./db-stores.ts";
import { EventStreamSocket } from "./event-stream-socket.ts";
import { ExecutorTokenStore } from "./executor-tokens.ts";
import { ServerError } from "./server-error.ts";
import { serverPaths } from "./server-paths.ts";
import { sessionsErrorToHttp } from "./sessions-http-errors.ts";
import { workspaceSessions } from "./workspace-sessions.ts";

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
/** What shutdown gives HTTP requests still in flight once no task runs any more. */
const HTTP_SHUTDOWN_GRACE_MS = 2_000;

/** A provider probe's model token outlives any probe (20 s by default) and is revoked after it. */
const PROBE_MODEL_TOKEN_TTL_MS = 5 * 60_000;
/** The password in a PostgreSQL URL, as written and decoded; none for the embedded database. */
function databasePasswords(databaseUrl: string | null): string[] {
  if (databaseUrl === null) return [];
  try {
    const { password } = new URL(databaseUrl);
    return password === "" ? [] : [password, decodeURIComponent(password)];
  } catch {
    return [];
  }
}

/** Starts the control plane: database (migrated), workspace agent, task worker, HTTP server. */
export async function startServer(
  config: ServerConfig,
  options: StartServerOptions = {},
): Promise<RunningServer> {
  // Deckhand's own secrets: redacted wherever this process redacts (logs, events, parts,
  // recordings, agent output), and never inherited by an agent process.
  const ownSecrets = [
    ...Object.values(config.modelUpstreams).map((upstream) => upstream.apiKey),
    config.adminToken,
    config.databaseUrl,
    ...databasePasswords(config.databaseUrl),
    // Code host tokens as they are now (they are read again at each use, so a rotated one is
    // remembered then): redacted everywhere, and no variable holding one reaches an agent.
    ...config.codeHostConnections.map((connection) => process.env[connection.tokenEnv] || null),
    // Passwords in git URL code hosts: git gets them per command, and they are secrets alike.
    ...codeHostSecrets(config.codeHosts),
  ];
  rememberSecrets(ownSecrets);
  const agentPolicy = agentEnvironmentPolicy({
    secretNames: config.withheldEnv,
    secretValues: ownSecrets,
    deny: config.agentEnvironment.deny,
    allow: config.agentEnvironment.allow,
  });
  // One environment for every process started for an agent: native `execute`, ACP terminals
  // (both through the workspace agent), ACP agent processes and provider probes.
  const agentEnv = agentEnvironment(agentPolicy, process.env);
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

    // One launcher for every process started for an agent or a step: the environment policy
    // and, where bubblewrap works, the sandbox. A server without one says so once, here.
    const capability = await detectSandbox(config.sandbox.mode);
    if (capability.kind === "none" && config.sandbox.mode === "auto") {
      logger.warn(
        { sandbox: "none", reason: capability.reason },
        "agents, their commands and local batch steps run UNSANDBOXED, as this server's user: they can read what this user can; see docs/operations/security.md",
      );
    } else if (capability.kind === "bubblewrap" && capability.internetFallback !== null) {
      logger.warn({ reason: capability.internetFallback }, "sandboxed steps share the network");
    }
    let appFetch: ((request: Request) => Response | Promise<Response>) | null = null;
    let serverPort: number | null = null;
    const launcher = new ProcessLauncher({
      capability,
      settings: config.sandbox,
      policy: agentPolicy,
      sourceEnvironment: process.env,
      hidden: [config.dataDir, config.providersConfigPath],
      // Sandboxed agents reach the model proxy through a socket that serves nothing else.
      modelProxy: {
        pathPrefix: WirePath.modelProvider,
        port: () => serverPort,
        fetch: (request) => {
          if (appFetch === null) return new Response("the server is starting", { status: 503 });
          return appFetch(request);
        },
      },
      onWarning: (message, error) => logger.warn({ err: error }, message),
    });
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

    const modelTokens = new DbModelTokenStore(database.db);
    const modelUsage = new DbUsageRecorder(database.db);
    const apiTokens = new ApiTokenStore(database.db);
    const executorTokens = new ExecutorTokenStore(database.db);
    // The providers are made below (their snapshot looks projects up in the sessions); a
    // session's agent, model and mode are checked against the snapshot when they are chosen.
    let providerCatalog: ProviderService | null = null;
    const readyProviders = (): ProviderService => {
      if (providerCatalog === null) throw new Error("the provider registry is not ready yet");
      return providerCatalog;
    };
    const sessions = new SessionService({
      database,
      projectsDir: join(config.dataDir, "projects"),
      // Inside the workspace agent's root, so the agent's process and file APIs reach them.
      worktreesDir: join(workspacesRoot, "sessions"),
      agentCatalog: (projectId) => {
        if (providerCatalog === null) throw new Error("the provider registry is not ready yet");
        return providerCatalog.snapshot({ projectId });
      },
      // A project cloned from a code host's URL (a taken-over batch workspace's) is cloned and
      // fetched with that host's connection credentials, per command, as batch checkouts are.
      gitEnvironment: (url) => batches.publishing?.access.gitEnvironment(url),
    });
    // Publishing: code host connections from config.json, their tokens read from the
    // environment at each use (never stored, never handed to an agent: see config.ts).
    const modelProvider = batchJobModelProviderAccess({
      modelTokens,
      serverUrl: () => listeningUrl,
    });
    // Model budgets (config.json's modelBudgets, priced with modelPrices): the proxy refuses
    // what a reached one covers, and runs whose budget is spent start no more workspaces.
    const spend = createModelSpend({
      database,
      limits: config.modelBudgets,
      prices: config.modelPrices,
      codingAgent: config.codingAgent,
    });
    const sessionScopes = new SessionBudgetScopes(database);
    spend.budgets.addSource(sessionScopes);
    // The same service `deckhand executor` makes: checkouts in <data-dir>/workspaces/batches.
    const batches = createBatchRunService({
      database,
      spend: spend.spend,
      codeHosts: () => config.codeHosts,
      environment: new ExecutionEnvironment({
        directories: batchDirectories(config.dataDir),
        environmentPolicy: agentPolicy,
        outerEnvironment: process.env,
        launcher,
        containerDetection:
          config.containerRuntime.restrictedHost === undefined
            ? {}
            : { restrictedHost: config.containerRuntime.restrictedHost },
        ...(config.kubernetes !== null ? { kubernetes: config.kubernetes } : {}),
        // codingAgent steps reach this server's model proxy with a token bound to their job.
        modelProvider,
        codingAgent: config.codingAgent,
        // acp steps run this server's providers (made below), pointed at the proxy as sessions
        // are.
        acpAgents: {
          providers: {
            list: () => readyProviders().list(),
            resolve: (id, resolveOptions) => readyProviders().resolve(id, resolveOptions),
          },
          proxied: (agentType) => hasUpstream(agentType),
        },
      }),
      // Workspaces are taken over with this server's interactive sessions.
      sessions: workspaceSessions(sessions),
      // Publishing: code host connections from config.json, their tokens read from the
      // environment at each use (never stored, never handed to an agent: see config.ts).
      publishing: {
        connections: () => config.codeHostConnections,
        environment: process.env,
        trackingIntervalMs: config.changesetTrackingIntervalMs,
        rolloutWindows: () => config.rolloutWindows,
        onError: (error, context) =>
          logger.warn({ err: error, ...context }, "refreshing a changeset failed"),
      },
    });
    const publishing = batches.publishing;
    let generatedAdminToken: string | null = null;
    if (config.requireAuth && config.adminToken === null) {
      generatedAdminToken = await apiTokens.ensureGeneratedAdminToken({
        replace: config.resetAdminToken,
      });
      rememberSecrets([generatedAdminToken]);
    } else if (config.resetAdminToken) {
      logger.warn(
        config.adminToken === null
          ? "--reset-admin-token has no effect: on loopback without an admin token the API needs none"
          : `--reset-admin-token has no effect: ${ADMIN_TOKEN_ENV} is set, so no token is generated`,
      );
    }
    /** Whether the proxy serves an agent type: sessions and probes point such agents at it. */
    const hasUpstream = (agentType: string) => agentType in config.modelUpstreams;
    // Probes may start before the server listens (warmUp); their proxy access waits for it.
    let listening: (url: string) => void = () => {};
    let notListening: (error: Error) => void = () => {};
    const listeningUrl = new Promise<string>((resolveUrl, rejectUrl) => {
      listening = resolveUrl;
      notListening = rejectUrl;
    });
    listeningUrl.catch(() => {});
    const providers = createProviderService({
      configPath: config.providersConfigPath,
      probeStore: new DbProbeStore(database.db),
      // The native agent talks to the upstream configured for its own agent type.
      modelUpstreamConfigured: () => NATIVE_AGENT_TYPE in config.modelUpstreams,
      nativeModels: [
        ...new Set([config.nativeModel ?? DEFAULT_NATIVE_MODEL, ...config.nativeModels]),
      ],
      // Probes start an agent as sessions do: pointed at the proxy with a token of its own,
      // revoked once the probe ends.
      modelProxy: {
        configured: hasUpstream,
        lease: (agentType) =>
          leaseModelProxy({ modelTokens, serverUrl: () => listeningUrl }, agentType, {
            jobId: `provider-probe:${agentType}:${randomUUID()}`,
            ttlMs: PROBE_MODEL_TOKEN_TTL_MS,
          }),
      },
      withheldEnv: config.withheldEnv,
      env: agentEnv,
      agentEnvironment: agentPolicy,
      launcher,
      startTimeouts: config.agentStartTimeouts,
      // opencode offers only the models it is told of: those of its upstream.
      upstreamModels: (agentType) => config.upstreamModels[agentType] ?? [],
      // A snapshot for a project also looks commands up in that project's checkout.
      projectDirectory: async (projectId) => {
        try {
          return (await sessions.getProject(projectId)).repository_path;
        } catch (error) {
          if (SessionsError.isInstance(error) && error.code === "not_found") return null;
          throw error;
        }
      },
      logger: {
        info: (message, fields) => logger.info({ component: "providers", ...fields }, message),
        warn: (message, fields) => logger.warn({ component: "providers", ...fields }, message),
      },
    });
    providerCatalog = providers;
    cleanups.push(() => providers.close());
    // Runs before providers.close(): a probe waiting for a server that never listened gives up.
    cleanups.push(async () => notListening(new Error("the server stopped before it listened")));
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

    let serverUrl: string | null = null;
    const agentTurns = new AgentTurns({
      database,
      sessions,
      providers,
      modelTokens,
      serverUrl: () => {
        if (serverUrl === null) throw new Error("the server is not listening yet");
        return serverUrl;
      },
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
      // Executors over HTTP: their jobs' abandoned runs are ended from their claims, since this
      // server may run no batch worker of its own.
      executors: {
        tokens: executorTokens,
        jobs: new ExecutorJobs({
          database,
          budgets: spend.spend,
          recover: () => batches.recoverAbandonedJobs(),
          onError: (error) => logger.warn({ err: error }, "executor API: recovering jobs failed"),
        }),
      },
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
      spend: { budgets: spend.budgets, batches: spend.spend, sessions: sessionScopes },
      logger,
      webDir: config.webDir ?? null,
    });

    const { server, port, url } = await listen(
      app.fetch,
      config,
      (error) =>
        new ServerError(
          "listen_failed",
          `cannot listen on ${config.host}:${config.port}: ${error.message}; choose another --listen address`,
          { cause: error },
        ),
    );
    const authorize = async (token: string | null) => {
      if (!config.requireAuth) return true;
      if (token === null) return false;
      if (config.adminToken !== null && tokenMatches(config.adminToken, token)) return true;
      return apiTokens.verify(token);
    };
    const streams = new EventStreamSocket<SessionEvent>({
      path: ServerPath.sessionStream,
      subprotocol: WireSubprotocol.sessionStream,
      hub,
      logger: logger.child({ component: "session-stream" }),
      authorize,
      check: async (sessionId) => {
        await sessions.getSession(sessionId).catch((error: unknown) => {
          throw sessionsErrorToHttp(error);
        });
      },
    });
    const runStreams = new EventStreamSocket<StoredBatchRunEvent>({
      path: ServerPath.batchRunStream,
      subprotocol: WireSubprotocol.batchRunStream,
      hub: runHub,
      logger: logger.child({ component: "batch-run-stream" }),
      authorize,
      check: async (runId) => {
        await batches.getRun(runId).catch((error: unknown) => {
          throw batchesErrorToHttp(error);
        });
      },
    });
    const activityStreams = new EventStreamSocket<SessionActivityEvent>({
      path: ServerPath.sessionActivity,
      subprotocol: WireSubprotocol.sessionActivity,
      hub: activityHub,
      logger: logger.child({ component: "session-activity" }),
      authorize,
      check: async () => {},
    });
    server.on("upgrade", (request, socket, head) => {
      // The streams carry transcripts and run logs: a page of another origin (or a rebinding
      // one) must not open one, whatever token it may hold.
      const refused = (refusal: { code: string }) =>
        logger.info(
          { path: new URL(request.url ?? "/", "http://x").pathname, code: refusal.code },
          "WebSocket upgrade refused",
        );
      if (!admitUpgrade(originPolicy, request, socket, refused)) return;
      if (
        !streams.handleUpgrade(request, socket, head) &&
        !runStreams.handleUpgrade(request, socket, head) &&
        !activityStreams.handleUpgrade(request, socket, head)
      ) {
        refuseUpgrade(
          socket,
          404,
          "not_found",
          `no WebSocket endpoint at ${new URL(request.url ?? "/", "http://x").pathname}`,
        );
      }
    });
    cleanups.push(() => new Promise<void>((resolveClose) => server.close(() => resolveClose())));
    serverUrl = url;
    serverPort = port;
    appFetch = (request) => app.fetch(request);
    listening(url);

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
      // Printed to the terminal only, never logged: it is shown this once and stored as a hash.
      (options.announce ?? ((line: string) => process.stderr.write(`${line}\n`)))(
        [
          "",
          `Generated admin token (shown only now; export it as ${ADMIN_TOKEN_ENV} for API clients):`,
          "",
          `  ${generatedAdminToken}`,
          "",
          "Lost it? Restart with --reset-admin-token to revoke it and print a new one.",
          "",
        ].join("\n"),
      );
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
        await Promise.all([streams.close(), runStreams.close(), activityStreams.close()]);
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
        const stopped = new Promise<void>((resolveClose) => server.close(() => resolveClose()));
        if ("closeIdleConnections" in server) server.closeIdleConnections();
        const grace = new Promise<void>((resolveGrace) =>
          setTimeout(resolveGrace, HTTP_SHUTDOWN_GRACE_MS).unref(),
        );
        await Promise.race([stopped, grace]);
        if ("closeAllConnections" in server) server.closeAllConnections();
        await stopped;
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
