// The start-up both compositions share, `deckhand up`'s server and the CLI's batch-only runner:
// the log, the data directory, the database (migrated) and the launcher every process of an
// agent or a step goes through, the worker of batch workspace jobs, and what a failed start says.
import { mkdir } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { type BatchRunService, type BatchWorker, startBatchWorker } from "@deckhand/batches";
import { createDb, DataDirLockedError, type DbHandle } from "@deckhand/db";
import { redactSecrets } from "@deckhand/secrets";
import pino, { type Logger } from "pino";
import { detectServerSandbox, startAgentLauncher } from "./agent-launcher.ts";
import type { ServerConfig } from "./config.ts";
import type { ServerEndpoint } from "./server-endpoint.ts";
import { ServerError } from "./server-error.ts";
import type { ServerParts } from "./server-parts.ts";
import type { ServerAgentEnvironment } from "./server-secrets.ts";

/** What shutdown gives running tasks (agent turns) to finish before releasing them. */
export const TASK_SHUTDOWN_TIMEOUT_MS = 10_000;

/** What every step of a start shares: the settings, the log, and what has started. */
export interface Foundation {
  config: ServerConfig;
  logger: Logger;
  agentEnvironment: ServerAgentEnvironment;
  parts: ServerParts;
  endpoint: ServerEndpoint;
}

/** The server's JSON log, redacted, to `destination` (standard output by default). */
export function serverLogger(config: ServerConfig, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level: config.logLevel,
      base: { service: "deckhand-server" },
      // The last line of defence: no log line leaves the process with a model token in it.
      hooks: { streamWrite: (line) => redactSecrets(line) },
    },
    destination ?? process.stdout,
  );
}

/** The data directory, the database (migrated) and the launcher every agent process uses. */
export async function startFoundation(start: Foundation) {
  const { config, logger, parts } = start;
  await mkdir(config.dataDir, { recursive: true });
  // The sandbox probe is a bubblewrap process that mostly waits on the kernel, opening the
  // database mostly CPU: the probe runs while the database opens, so a start waits for the
  // longer of the two instead of both. A database that fails to open is still the error shown.
  const sandbox = detectServerSandbox(config);
  sandbox.catch(() => {});
  const database = await createDb(
    config.databaseUrl !== null
      ? { databaseUrl: config.databaseUrl }
      : { dataDir: join(config.dataDir, "db") },
  );
  parts.started("database", () => database.close());
  logger.info({ kind: database.kind }, "database ready (migrations applied)");
  const launcher = await startAgentLauncher(
    config,
    start.agentEnvironment.policy,
    logger,
    start.endpoint,
    sandbox,
  );
  parts.started("launcher", () => launcher.close());
  const workspacesRoot = join(config.dataDir, "workspaces");
  await mkdir(workspacesRoot, { recursive: true });
  return { database, launcher, workspacesRoot };
}

/**
 * Batch workspace jobs are CPU-bound and long; they get a worker of their own, so a batch run
 * never takes the slots agent turns wait in, and its concurrency follows the CPUs.
 * `batchConcurrency: 0` leaves them to `deckhand executor` processes on the same database.
 */
export async function startBatchJobs(
  start: Foundation,
  database: DbHandle,
  batches: BatchRunService,
  options: { runBatchJobs?: boolean; taskShutdownTimeoutMs?: number },
): Promise<BatchWorker | null> {
  const { config, logger } = start;
  if (!((options.runBatchJobs ?? true) && config.batchConcurrency > 0)) {
    logger.info(
      "this server runs no batch workspace jobs (batchConcurrency 0): deckhand executor processes on its database run them",
    );
    return null;
  }
  const batchWorker = await startBatchWorker({
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
  if (config.codeHostConnections.length > 0) await batches.publishing?.scheduleTracking();
  start.parts.started("batch-worker", () => batchWorker.stop());
  return batchWorker;
}

/** A start that failed, as the ServerError the CLI shows in one line. */
export function startFailure(config: ServerConfig, error: unknown): ServerError {
  if (error instanceof ServerError) return error;
  if (error instanceof DataDirLockedError) {
    // Named as the user gave it (--data-dir), not PGlite's directory inside it.
    const where = error.holder.hostname === hostname() ? "" : ` on host ${error.holder.hostname}`;
    return new ServerError(
      "data_dir_locked",
      `the data directory ${config.dataDir} is in use by deckhand process ${error.holder.pid}${where}; stop that process, choose another --data-dir, or use PostgreSQL (--database-url) to run several processes`,
      { cause: error },
    );
  }
  return new ServerError(
    "start_failed",
    `the server could not start: ${(error as Error).message}`,
    {
      cause: error,
    },
  );
}
