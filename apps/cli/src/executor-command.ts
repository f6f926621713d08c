// `deckhand executor`: runs batch workspace jobs on this machine, either through the server's
// executor API with an executor token (`--server-url`; executor-over-http.ts), or from the
// server's shared PostgreSQL queue (`--database-url`, full trust). Everything it runs is composed
// from packages: the workspace job, batch-run service and worker of @deckhand/batches (the same
// the server builds), the database and queue of @deckhand/db, and the agent environment policy of
// @deckhand/secrets.
import { mkdir } from "node:fs/promises";
import { availableParallelism, homedir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  BatchesError,
  type BatchWorker,
  batchDirectories,
  codeHostSecrets,
  createBatchRunService,
  createModelSpend,
  ExecutionEnvironment,
  type ExecutorConfig,
  type ModelProviderAccess,
  readExecutorConfig,
  startBatchWorker,
} from "@deckhand/batches";
import { createDb, type DbHandle } from "@deckhand/db";
import { errorMessage } from "@deckhand/errors";
import { batchJobModelProviderAccess, DbModelTokenStore } from "@deckhand/model-proxy";
import { createProviderService } from "@deckhand/providers";
import {
  detectSandbox,
  ProcessLauncher,
  remoteModelProxy,
  remoteModelProxyHosts,
  type SandboxCapability,
} from "@deckhand/sandbox";
import {
  agentEnvironment,
  agentEnvironmentPolicy,
  redactSecrets,
  rememberSecrets,
} from "@deckhand/secrets";
import { WireEnv, WirePath } from "@deckhand/wire";
import pino from "pino";
import { type ExecutorHealthFile, startExecutorHealthFile } from "./executor-health.ts";
import { startExecutorOverHttp } from "./executor-over-http.ts";

export const DATABASE_URL_ENV = "DATABASE_URL";
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "silent"] as const;
type LogLevel = (typeof LOG_LEVELS)[number];
/** The most jobs one executor runs at once (the server's `batchConcurrency` has the same cap). */
const MAX_CONCURRENCY = 256;
const DEFAULT_LEASE_MS = 30_000;
const DEFAULT_GRACE_MS = 10_000;

export const executorUsage = `Usage: deckhand executor --server-url URL [options]   (token in $${WireEnv.executorToken})
       deckhand executor --database-url URL [options]   (full trust)

Runs batch workspace jobs on this machine: claims them from the Deckhand server, runs their
steps, and reports their results. Start as many as you like, on as many machines; a job of an
executor that dies is taken over by another once its lease expires, and resumes after its
newest cached step. SIGTERM or SIGINT stops claiming, lets running jobs finish within the grace
period and hands the rest back to the queue.

With an executor token ($${WireEnv.executorToken}, made by an admin with "deckhand
executor-tokens create"), the executor talks to the server's executor API at --server-url and
holds no database credentials; the server mints the model tokens of its jobs. With
--database-url it reaches the server's PostgreSQL database itself: fully trusted, as anyone
holding that URL can change any run and mint model tokens.

Options:
  --server-url URL     the Deckhand server: its executor API when $${WireEnv.executorToken} is
                       set, else the model proxy codingAgent steps talk to (their tokens go to
                       the shared database, where its proxy checks them)
  --database-url URL   the server's PostgreSQL database (default $${DATABASE_URL_ENV}, else
                       databaseUrl in <data-dir>/config.json), without an executor token: the
                       embedded database lives inside the server's process, out of an
                       executor's reach
  --data-dir DIR       clone cache and checkouts, and config.json, whose codeHosts and
                       agentEnvironment are read (default $${WireEnv.serverDataDir}, else ~/.deckhand)
  -j, --concurrency N  workspace jobs run at once (default: the CPU count, here ${availableParallelism()})
  --id NAME            this executor's name in the queue and on workspaces (default
                       host:pid:random); unique per running executor
  --log-level LEVEL    fatal|error|warn|info|debug|silent (default $${WireEnv.serverLogLevel}, else info)
  --lease-ms N         how long a job stays claimed without a heartbeat before another
                       executor takes it over (default ${DEFAULT_LEASE_MS}; for tests and tuning)
  --grace-ms N         how long SIGTERM lets running jobs finish before handing them back
                       (default ${DEFAULT_GRACE_MS})
  -h, --help           show this help

Exit codes: 0 stopped by a signal, 1 could not start (the database unreachable) or stop, or
the server refused the executor token (revoked), 2 bad usage or configuration.
`;

/** A problem with the arguments or the configuration: exit code 2, with the message. */
export class ExecutorUsageError extends Error {}

export interface ExecutorSettings {
  /** The database of the full-trust executor; null for one over the executor API. */
  databaseUrl: string | null;
  /** The executor token of one over the executor API (with `serverUrl`); null otherwise. */
  executorToken: string | null;
  dataDir: string;
  concurrency: number;
  serverUrl: string | null;
  id: string | null;
  logLevel: LogLevel;
  leaseMs: number;
  graceMs: number;
}

export interface ExecutorIo {
  stdout: NodeJS.WritableStream;
  stderr: { write(text: string): unknown };
  environment: NodeJS.ProcessEnv;
  cwd: string;
  homeDir: string;
}

function defaultIo(): ExecutorIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    environment: process.env,
    cwd: process.cwd(),
    homeDir: homedir(),
  };
}

function wholeNumber(value: string, flag: string, min: number, max: number): number {
  const number = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number) || number < min || number > max) {
    throw new ExecutorUsageError(
      `${flag} must be a whole number from ${min} to ${max}, not "${value}"`,
    );
  }
  return number;
}

function checkDatabaseUrl(url: string, source: string): string {
  if (!/^postgres(?:ql)?:\/\/./.test(url)) {
    // The URL may hold a password: name where it came from, never the value.
    throw new ExecutorUsageError(
      `${source} is not a PostgreSQL URL; use postgres://user:password@host:5432/database`,
    );
  }
  return url;
}

/**
 * Reads the command line, the environment under it and `<data-dir>/config.json` under that into
 * settings and the executor's configuration; every problem is an ExecutorUsageError (or a
 * BatchesError `invalid_config` for config.json) saying what to do.
 */
export async function parseExecutorArguments(
  argv: string[],
  io: Pick<ExecutorIo, "environment" | "cwd" | "homeDir">,
): Promise<{ settings: ExecutorSettings; config: ExecutorConfig } | "help"> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        "database-url": { type: "string" },
        "data-dir": { type: "string" },
        concurrency: { type: "string", short: "j" },
        "server-url": { type: "string" },
        id: { type: "string" },
        "log-level": { type: "string" },
        "lease-ms": { type: "string" },
        "grace-ms": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    throw new ExecutorUsageError(errorMessage(error));
  }
  if (values.help === true) return "help";
  const flag = (name: string) => values[name] as string | undefined;
  // An empty variable counts as unset, as `VAR= deckhand executor` means.
  const fromEnv = (name: string) => io.environment[name] || undefined;
  const dataDir = resolve(
    io.cwd,
    flag("data-dir") ?? fromEnv(WireEnv.serverDataDir) ?? join(io.homeDir, ".deckhand"),
  );
  const concurrency =
    flag("concurrency") === undefined
      ? Math.min(availableParallelism(), MAX_CONCURRENCY)
      : wholeNumber(flag("concurrency")!, "-j", 1, MAX_CONCURRENCY);
  const leaseMs =
    flag("lease-ms") === undefined
      ? DEFAULT_LEASE_MS
      : wholeNumber(flag("lease-ms")!, "--lease-ms", 1_000, 3_600_000);
  const graceMs =
    flag("grace-ms") === undefined
      ? DEFAULT_GRACE_MS
      : wholeNumber(flag("grace-ms")!, "--grace-ms", 0, 24 * 3_600_000);
  const logLevel = flag("log-level") ?? fromEnv(WireEnv.serverLogLevel) ?? "info";
  if (!isLogLevel(logLevel)) {
    throw new ExecutorUsageError(
      `${flag("log-level") !== undefined ? "--log-level" : WireEnv.serverLogLevel} "${logLevel}" is not a log level; use one of ${LOG_LEVELS.join(", ")}`,
    );
  }
  let serverUrl: string | null = null;
  const serverUrlFlag = flag("server-url");
  if (serverUrlFlag !== undefined) {
    const url = URL.canParse(serverUrlFlag) ? new URL(serverUrlFlag) : null;
    if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) {
      throw new ExecutorUsageError(
        `--server-url "${serverUrlFlag}" is not an http:// or https:// URL; use the address deckhand up listens on, e.g. http://deckhand.internal:7420`,
      );
    }
    serverUrl = url.toString().replace(/\/$/, "");
  }
  const id = flag("id") ?? null;
  if (id !== null && !/^[\x21-\x7e]{1,200}$/.test(id)) {
    throw new ExecutorUsageError(
      "--id must be 1 to 200 printable characters without spaces, e.g. builder-3",
    );
  }
  const config = await readExecutorConfig(dataDir);
  const executorToken = fromEnv(WireEnv.executorToken) ?? null;
  if (executorToken !== null) {
    if (serverUrl === null) {
      throw new ExecutorUsageError(
        `${WireEnv.executorToken} is set: pass --server-url URL, the Deckhand server whose executor API takes it`,
      );
    }
    if (flag("database-url") !== undefined) {
      throw new ExecutorUsageError(
        `pass either --database-url or an executor token (${WireEnv.executorToken}), not both: with the token the executor reaches the server over HTTP and holds no database`,
      );
    }
    return {
      settings: {
        databaseUrl: null,
        executorToken,
        dataDir,
        concurrency,
        serverUrl,
        id,
        logLevel,
        leaseMs,
        graceMs,
      },
      config,
    };
  }
  const databaseUrl =
    flag("database-url") !== undefined
      ? checkDatabaseUrl(flag("database-url")!, "--database-url")
      : fromEnv(DATABASE_URL_ENV) !== undefined
        ? checkDatabaseUrl(fromEnv(DATABASE_URL_ENV)!, DATABASE_URL_ENV)
        : config.databaseUrl !== null
          ? checkDatabaseUrl(config.databaseUrl, `databaseUrl in ${join(dataDir, "config.json")}`)
          : undefined;
  if (databaseUrl === undefined) {
    throw new ExecutorUsageError(
      `needs the server: pass --server-url URL with an executor token in ${WireEnv.executorToken} (an admin makes one with "deckhand executor-tokens create"), or, fully trusted, the server's PostgreSQL database: pass --database-url URL or set ${DATABASE_URL_ENV}. An executor on the database takes its jobs from the server's queue there, and the embedded database (PGlite) lives inside the one process that opened it, so only a server on PostgreSQL can have executors on its database`,
    );
  }
  return {
    settings: {
      databaseUrl,
      executorToken: null,
      dataDir,
      concurrency,
      serverUrl,
      id,
      logLevel,
      leaseMs,
      graceMs,
    },
    config,
  };
}

function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

/** The password in a PostgreSQL URL, as written and decoded: secrets no step may see. */
function databasePasswords(databaseUrl: string): string[] {
  try {
    const { password } = new URL(databaseUrl);
    return password === "" ? [] : [password, decodeURIComponent(password)];
  } catch {
    return [];
  }
}

/**
 * `deckhand executor [options]`: runs until SIGTERM or SIGINT, then stops claiming, lets running
 * jobs finish within `--grace-ms` and hands the rest back to the queue, and exits 0. Bad usage
 * or configuration exits 2 with one line on stderr; a start that fails (the database unreachable)
 * exits 1.
 */
export async function runExecutorCommand(
  argv: string[],
  io: ExecutorIo = defaultIo(),
): Promise<number> {
  // Listen for the signals before anything starts: a SIGTERM during start-up must still stop
  // the executor cleanly once it is up.
  let signalled = false;
  const remember = () => {
    signalled = true;
  };
  process.on("SIGTERM", remember);
  process.on("SIGINT", remember);
  const forget = () => {
    process.off("SIGTERM", remember);
    process.off("SIGINT", remember);
  };

  let settings: ExecutorSettings;
  let config: ExecutorConfig;
  try {
    const parsed = await parseExecutorArguments(argv, io);
    if (parsed === "help") {
      forget();
      io.stdout.write(executorUsage);
      return 0;
    }
    ({ settings, config } = parsed);
  } catch (error) {
    forget();
    if (error instanceof ExecutorUsageError || BatchesError.isInstance(error)) {
      io.stderr.write(
        `deckhand executor: ${error.message}${error instanceof ExecutorUsageError ? '\nRun "deckhand executor --help" for its options.' : ""}\n`,
      );
      return 2;
    }
    throw error;
  }

  // Deckhand's own secrets: redacted from every log line and job error, and never inherited by
  // a step, whatever config.json allows.
  const ownSecrets = [
    settings.databaseUrl,
    ...(settings.databaseUrl === null ? [] : databasePasswords(settings.databaseUrl)),
    settings.executorToken,
    // Over HTTP a DATABASE_URL in the environment is not used; it is withheld all the same.
    io.environment[DATABASE_URL_ENV],
    io.environment[WireEnv.adminToken],
    ...config.withheldEnv.map((name) => io.environment[name]),
    // Passwords in git URL code hosts: git gets them per command, and they are secrets alike.
    ...codeHostSecrets(config.codeHosts),
  ].filter((value): value is string => typeof value === "string" && value !== "");
  rememberSecrets(ownSecrets);
  const policy = agentEnvironmentPolicy({
    secretNames: config.withheldEnv,
    secretValues: ownSecrets,
    deny: config.agentEnvironment.deny,
    allow: config.agentEnvironment.allow,
  });
  const logger = pino(
    {
      level: settings.logLevel,
      base: { service: "deckhand-executor" },
      hooks: { streamWrite: (line) => redactSecrets(line) },
    },
    io.stdout,
  );

  // Local steps, hooks and acp steps' agents start through the same launcher as on the server:
  // the environment policy and, where bubblewrap works, its sandbox (no view of this process or
  // its secrets).
  let capability: SandboxCapability;
  try {
    capability = await detectSandbox(config.sandbox.mode);
  } catch (error) {
    io.stderr.write(`deckhand executor: ${errorMessage(error)}\n`);
    return 2;
  }
  if (capability.kind === "none" && config.sandbox.mode === "auto") {
    logger.warn(
      { sandbox: "none", reason: capability.reason },
      "local batch steps run UNSANDBOXED, as this executor's user; see docs/operations/security.md",
    );
  }
  // Sandboxed codingAgent and acp steps reach the server's model proxy (and nothing else of it)
  // through this executor, as the server's own sandboxes reach it.
  const serverUrl = settings.serverUrl;
  const launcher = new ProcessLauncher({
    capability,
    settings:
      serverUrl === null
        ? config.sandbox
        : {
            ...config.sandbox,
            allowHosts: [...config.sandbox.allowHosts, ...remoteModelProxyHosts(serverUrl)],
          },
    modelProxy: serverUrl === null ? null : remoteModelProxy(serverUrl, WirePath.modelProvider),
    policy,
    sourceEnvironment: io.environment,
    hidden: [settings.dataDir, config.providersConfigPath],
    onWarning: (message, error) => logger.warn({ err: error }, message),
  });
  // acp steps start the server's providers (its providers.json), as its sessions do: pointed at
  // the model proxy for the agent types it serves, when this executor can lease tokens for it.
  const providers = createProviderService({
    launcher,
    configPath: config.providersConfigPath,
    modelUpstreamConfigured: false,
    env: agentEnvironment(policy, io.environment),
    agentEnvironment: policy,
    withheldEnv: config.withheldEnv,
    startTimeouts: config.agentStartTimeouts,
    upstreamModels: (agentType) => config.modelUpstreams[agentType]?.models ?? [],
  });
  // Where steps run, the same for both kinds of executor; only the model tokens come from
  // elsewhere (the server over HTTP, the shared database on it).
  const executionEnvironment = (modelProvider: ModelProviderAccess | undefined) =>
    new ExecutionEnvironment({
      directories: batchDirectories(settings.dataDir),
      environmentPolicy: policy,
      outerEnvironment: io.environment,
      launcher,
      codingAgent: config.codingAgent,
      ...(config.kubernetes !== null ? { kubernetes: config.kubernetes } : {}),
      acpAgents: {
        providers,
        proxied: (agentType) => modelProvider !== undefined && agentType in config.modelUpstreams,
      },
      ...(modelProvider !== undefined ? { modelProvider } : {}),
    });
  // Set by the database executor only; typed wide, as a closure assigns it.
  let database = null as DbHandle | null;
  let worker: BatchWorker | undefined;
  // Worker errors (the queue unreachable) reach the health file once it exists.
  let reportWorkerError: (error: unknown) => void = () => {};
  // Settles when the server refuses this executor's token (revoked): it cannot go on.
  let refused: Promise<unknown> = new Promise(() => {});
  /** The full-trust executor: the server's queue and state in its PostgreSQL database. */
  const startDatabaseExecutor = async (databaseUrl: string): Promise<BatchWorker> => {
    database = await createDb({
      databaseUrl,
      // Each running job writes its events and polls its state; leave room for the queue.
      poolSize: settings.concurrency + 5,
    });
    // Runs whose model budget is spent start no more workspaces here either.
    const { spend } = createModelSpend({
      database,
      limits: config.modelBudgets,
      prices: config.modelPrices,
      codingAgent: config.codingAgent,
    });
    const service = createBatchRunService({
      database,
      spend,
      codeHosts: () => config.codeHosts,
      environment: executionEnvironment(
        settings.serverUrl !== null
          ? batchJobModelProviderAccess({
              modelTokens: new DbModelTokenStore(database.db),
              serverUrl: () => settings.serverUrl as string,
            })
          : undefined,
      ),
      // The apply job and changeset tracking run on whichever batch worker claims them, so an
      // executor publishes with the same connections (and its own environment's tokens).
      publishing: {
        connections: () => config.codeHostConnections,
        environment: io.environment,
        trackingIntervalMs: config.changesetTrackingIntervalMs,
        rolloutWindows: () => config.rolloutWindows,
        onError: (error, context) =>
          logger.warn({ err: error, ...context }, "refreshing a changeset failed"),
      },
    });
    const started = await startBatchWorker({
      database,
      service,
      concurrency: settings.concurrency,
      ...(settings.id !== null ? { workerId: settings.id } : {}),
      leaseMs: settings.leaseMs,
      shutdownTimeoutMs: settings.graceMs,
      onError: (error) => {
        reportWorkerError(error);
        logger.warn({ err: error }, "batch worker error; retrying");
      },
      redact: (text) => redactSecrets(text),
      onTaskFailed: (task) => logger.warn(task, "batch job attempt failed"),
      onRecovered: (recovered) =>
        logger.warn(recovered, "failed batch jobs the queue gave up on (see their errors)"),
    });
    // Published changesets are refreshed where batch jobs run (queued once per interval).
    if (config.codeHostConnections.length > 0) await service.publishing?.scheduleTracking();
    return started;
  };

  let health: ExecutorHealthFile;
  try {
    await mkdir(settings.dataDir, { recursive: true });
    if (settings.executorToken !== null && settings.serverUrl !== null) {
      const started = await startExecutorOverHttp({
        serverUrl: settings.serverUrl,
        executorToken: settings.executorToken,
        settings,
        config,
        environment: executionEnvironment,
        outerEnvironment: io.environment,
        logger,
      });
      worker = started.worker;
      refused = started.refused;
    } else {
      worker = await startDatabaseExecutor(settings.databaseUrl as string);
    }
    // For `deckhand health executor` (the image's health check): an executor serves no port.
    const started = worker;
    health = await startExecutorHealthFile({
      dataDir: settings.dataDir,
      executorId: started.workerId,
      runningJobs: () => started.activeCount,
      redact: (text) => redactSecrets(text),
    });
    reportWorkerError = (error) => health.workerError(error);
  } catch (error) {
    forget();
    await worker?.stop().catch(() => {});
    await launcher.close().catch(() => {});
    await database?.close().catch(() => {});
    await providers.close();
    logger.error({ err: error }, "the executor could not start");
    logger.flush();
    io.stderr.write(`deckhand executor: could not start: ${redactSecrets(errorMessage(error))}\n`);
    return 1;
  }

  logger.info(
    {
      executor: worker.workerId,
      concurrency: settings.concurrency,
      dataDir: settings.dataDir,
      leaseMs: settings.leaseMs,
      serverUrl: settings.serverUrl,
      codeHosts: config.codeHosts.length,
    },
    "deckhand executor ready",
  );
  const running = worker;
  const handle: DbHandle | null = database;
  return new Promise<number>((resolveExit) => {
    let exitCode = 0;
    const stop = () => {
      process.off("SIGTERM", stop);
      process.off("SIGINT", stop);
      logger.info(
        { running: running.activeCount, graceMs: settings.graceMs },
        "stopping: no new jobs; running jobs finish within the grace period or go back to the queue",
      );
      health
        .close()
        .then(() => running.stop())
        .then(() => launcher.close())
        .then(() => providers.close())
        .then(() => handle?.close())
        .then(
          () => {
            logger.info("stopped");
            logger.flush();
            resolveExit(exitCode);
          },
          (error: unknown) => {
            logger.error({ err: error }, "shutdown failed");
            logger.flush();
            resolveExit(1);
          },
        );
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
    forget();
    if (signalled) stop();
    // A revoked token cannot claim or report anything more: stop, and say so with exit code 1.
    void refused.then((error) => {
      logger.error(
        { err: error },
        `the server refused this executor's token (${WireEnv.executorToken}); an admin may have revoked it`,
      );
      exitCode = 1;
      stop();
    });
  });
}
