// The batch engine started inside the CLI's process for one run without --server: the engine
// and the store as `deckhand up` composes them, without the server around them (no HTTP API,
// sessions, workspace agent or provider probes). The command calls the same run API the
// server's routes call, in-process, and reads the run's events from the same feed its stream
// serves, so what it shows is what it shows for a run on a server.

import { ServerApiError } from "@deckhand/server-client";
import {
  type BatchRunStreamFrame,
  BatchRunStreamFrameSchema,
  type StoredBatchRunEvent,
  WireEnv,
} from "@deckhand/wire";
import type { FollowOptions } from "./batch-run-follow.ts";
import { RunStreamLostError } from "./batch-run-follow.ts";
import type { RunTarget } from "./batch-run-target.ts";

/** The data directory is in use (by `deckhand up`, say): the CLI suggests --server. */
export class DataDirInUseError extends Error {
  override readonly name = "DataDirInUseError";
}

/** The configuration is wrong (config.json, an environment variable). */
export class EmbeddedRunnerConfigError extends Error {
  override readonly name = "EmbeddedRunnerConfigError";
}

export interface EmbeddedRunnerOptions {
  /** Absent: $DECKHAND_DATA_DIR, else ~/.deckhand, as for `deckhand up`. */
  dataDir: string | undefined;
  /** Batch workspace jobs run at once (-j). */
  concurrency: number;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
}

type BatchRunnerModule = typeof import("@deckhand/server-app/batch-runner");
type BatchRunApi = Awaited<ReturnType<BatchRunnerModule["startBatchRunner"]>>["api"];

/**
 * Starts the batch engine as `deckhand up` would on the data directory (its config.json, code
 * hosts and step cache) with the embedded database (the data directory's, whatever
 * DATABASE_URL says), silent logs unless $DECKHAND_LOG_LEVEL asks (they go to stderr), and -j
 * batch jobs at once.
 */
export async function startEmbeddedRunner(options: EmbeddedRunnerOptions): Promise<RunTarget> {
  // Loaded only here: the engine, the database and PGlite are for runs without --server.
  const runner = await import("@deckhand/server-app/batch-runner");
  const environment = { ...options.env };
  // The process's own: the listen address, admin token and database of a `deckhand up`
  // configured in the environment are not its own.
  for (const name of [runner.DATABASE_URL_ENV, WireEnv.serverListen, WireEnv.adminToken]) {
    delete environment[name];
  }
  try {
    const config = runner.resolveServerConfig(
      {
        // The model proxy, when a step needs it, listens on loopback only.
        listen: "127.0.0.1:0",
        ...(options.dataDir !== undefined ? { dataDir: options.dataDir } : {}),
        workspaceAgent: false,
        ...(environment[WireEnv.serverLogLevel] ? {} : { logLevel: "silent" as const }),
      },
      { environment, cwd: options.cwd },
    );
    const running = await runner.startBatchRunner(
      { ...config, databaseUrl: null, batchConcurrency: options.concurrency, webDir: null },
      { logDestination: process.stderr },
    );
    return inProcessTarget(runner, running.api, running.dataDir, () => running.close());
  } catch (error) {
    if (error instanceof runner.ServerError && error.code === "data_dir_locked") {
      throw new DataDirInUseError(error.message, { cause: error });
    }
    if (error instanceof runner.ServerError) {
      throw new EmbeddedRunnerConfigError(error.message, { cause: error });
    }
    throw error;
  }
}

/** The run API in this process; its refusals are the ServerApiErrors a server's would be. */
function inProcessTarget(
  runner: BatchRunnerModule,
  api: BatchRunApi,
  dataDir: string,
  close: () => Promise<void>,
): RunTarget {
  const call = async <T>(request: () => Promise<T>): Promise<T> => {
    try {
      return await request();
    } catch (error) {
      if (runner.HttpError.isInstance(error)) {
        throw new ServerApiError(error.status, error.code, error.message, { cause: error });
      }
      throw error;
    }
  };
  return {
    createRun: (request) => call(() => api.createBatchRun(request)),
    cancelRun: (runId) => call(() => api.cancelBatchRun(runId)),
    runSpend: (runId) => call(() => api.getBatchRunSpend(runId)),
    changesets: async (runId) => (await call(() => api.listBatchRunChangesets(runId))).changesets,
    follow: (runId, followOptions) => followEvents(api, runId, followOptions),
    dataDir,
    close,
  };
}

/**
 * Delivers the run's events from the feed the run stream serves, each as the stream's frame
 * carries it (JSON, read with the frame's schema), until `run_finished` or the signal.
 */
function followEvents(api: BatchRunApi, runId: string, options: FollowOptions): Promise<void> {
  return new Promise((resolveFollow, rejectFollow) => {
    let settled = false;
    const settle = (error?: unknown) => {
      if (settled) return;
      settled = true;
      subscription.close();
      options.signal?.removeEventListener("abort", abort);
      if (error === undefined) resolveFollow();
      else rejectFollow(error);
    };
    const abort = () => settle();
    const subscription = api.events.subscribe({
      key: runId,
      afterId: options.after ?? 0,
      deliver: (event: StoredBatchRunEvent) => {
        if (settled) return;
        const frame: BatchRunStreamFrame = BatchRunStreamFrameSchema.parse(
          JSON.parse(JSON.stringify({ type: "event", event })),
        );
        if (frame.type !== "event") return;
        try {
          options.onEvent(frame.event);
        } catch (error) {
          settle(error);
          return;
        }
        if (frame.event.event.type === "run_finished") settle();
      },
      onError: (error) =>
        settle(
          new RunStreamLostError(
            `lost the events of batch run ${runId} (${error instanceof Error ? error.message : String(error)})`,
          ),
        ),
    });
    if (options.signal?.aborted) settle();
    else options.signal?.addEventListener("abort", abort, { once: true });
  });
}
