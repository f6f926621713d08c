// An executor's health, for container health checks and supervisors: a running `deckhand
// executor` rewrites a small file in its data directory every few seconds, and `deckhand health
// executor` reads it. An executor serves no port, so a file is what a check on the same machine
// (a container's HEALTHCHECK, a Kubernetes exec probe) can read; both sides live here, so the
// file's shape is written once.
import { readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { errorMessage } from "@deckhand/errors";
import { z } from "zod";

export const EXECUTOR_HEALTH_FILE = "executor-health.json";
/** How often the executor rewrites the file. */
export const EXECUTOR_HEALTH_INTERVAL_MS = 5_000;
/** A file older than this belongs to an executor that is stuck or gone. */
export const EXECUTOR_HEALTH_MAX_AGE_MS = 30_000;

const ExecutorHealthSchema = z.object({
  executor: z.string(),
  pid: z.number().int(),
  written_at: z.iso.datetime(),
  running_jobs: z.number().int(),
  /** Whether every poll of the queue since the previous write succeeded; the last error if not. */
  queue: z.object({ ok: z.boolean(), error: z.string().nullable() }),
});
export type ExecutorHealth = z.infer<typeof ExecutorHealthSchema>;

export interface ExecutorHealthFileOptions {
  dataDir: string;
  executorId: string;
  runningJobs: () => number;
  /** Scrubs an error's text before it is written (it may name the database URL). */
  redact: (text: string) => string;
  intervalMs?: number;
  now?: () => number;
}

export interface ExecutorHealthFile {
  /** Tells the file the worker failed to reach its queue; the next write reports it. */
  workerError(error: unknown): void;
  /** Writes the file now (the timer does it every interval). */
  write(): Promise<void>;
  /** Stops writing and removes the file: a stopping executor is not healthy. */
  close(): Promise<void>;
}

/** Writes the health file now and every interval until closed. */
export async function startExecutorHealthFile(
  options: ExecutorHealthFileOptions,
): Promise<ExecutorHealthFile> {
  const path = join(options.dataDir, EXECUTOR_HEALTH_FILE);
  const now = options.now ?? Date.now;
  let lastError: string | null = null;
  let closed = false;
  let writing: Promise<void> = Promise.resolve();

  const writeOnce = async () => {
    const health: ExecutorHealth = {
      executor: options.executorId,
      pid: process.pid,
      written_at: new Date(now()).toISOString(),
      running_jobs: options.runningJobs(),
      queue: { ok: lastError === null, error: lastError },
    };
    lastError = null;
    // Renamed into place, so a check never reads a half-written file.
    const temporary = `${path}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify(health)}\n`);
    if (closed) {
      await rm(temporary, { force: true });
      return;
    }
    await rename(temporary, path);
  };
  // One write at a time, in order: a timer's write never lands after close() removed the file.
  const write = () => {
    writing = writing.then(writeOnce, writeOnce);
    return writing;
  };

  await write();
  const timer = setInterval(() => {
    write().catch(() => {
      // A full disk or a removed data directory: the file goes stale and the check says so.
    });
  }, options.intervalMs ?? EXECUTOR_HEALTH_INTERVAL_MS);
  timer.unref();

  return {
    workerError(error) {
      lastError = options.redact(errorMessage(error)).slice(0, 500);
    },
    write,
    async close() {
      closed = true;
      clearInterval(timer);
      await writing.catch(() => {});
      await rm(path, { force: true });
    },
  };
}

export interface HealthVerdict {
  healthy: boolean;
  /** One line saying why, for the health check's output. */
  message: string;
}

/** Reads an executor's health file and says whether it is healthy, and why not. */
export async function checkExecutorHealth(
  dataDir: string,
  options: { now?: number; maxAgeMs?: number } = {},
): Promise<HealthVerdict> {
  const path = join(dataDir, EXECUTOR_HEALTH_FILE);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      return {
        healthy: false,
        message: `no ${EXECUTOR_HEALTH_FILE} in ${dataDir}: the executor is not running there, or not ready yet (pass its --data-dir)`,
      };
    }
    return { healthy: false, message: `cannot read ${path}: ${errorMessage(error)}` };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const health = ExecutorHealthSchema.safeParse(parsed);
  if (!health.success) {
    return {
      healthy: false,
      message: `${path} is not an executor health file; is another program writing it?`,
    };
  }
  const { executor, written_at: writtenAt, running_jobs: running, queue } = health.data;
  const ageMs = (options.now ?? Date.now()) - Date.parse(writtenAt);
  const maxAgeMs = options.maxAgeMs ?? EXECUTOR_HEALTH_MAX_AGE_MS;
  if (ageMs > maxAgeMs) {
    return {
      healthy: false,
      message: `executor ${executor} last wrote its health ${Math.round(ageMs / 1000)} s ago (more than ${Math.round(maxAgeMs / 1000)} s): it is stuck, or it stopped without removing the file`,
    };
  }
  if (!queue.ok) {
    return {
      healthy: false,
      message: `executor ${executor} cannot reach its queue: ${queue.error ?? "unknown error"}`,
    };
  }
  return {
    healthy: true,
    message: `executor ${executor} is healthy: ${running} job${running === 1 ? "" : "s"} running, queue reachable`,
  };
}
