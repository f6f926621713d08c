// `deckhand executor --server-url`: batch workspace jobs run on this machine, with everything the
// job reads and writes going through the server's executor API instead of the database. Each
// claimed job runs the same WorkspaceJob as on the database path, over a store (the port,
// workspace-job-store.ts) and a step cache that call the API with the job's lease. Leases are
// renewed for every held job at once; a heartbeat that says a job is no longer held stops it, one
// that says its workspace no longer runs cancels its steps.

import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { errorMessage } from "@deckhand/errors";
import { ServerApiError, type ServerClient } from "@deckhand/server-client";
import type { BatchRunEvent, BatchRunOptions, ExecutorJob, ExecutorLease } from "@deckhand/wire";
import { BatchesError } from "./batches-error.ts";
import { sweepCheckouts } from "./checkout-sweep.ts";
import type { ModelProviderAccess, ModelProviderJobLease } from "./coding-agent-step.ts";
import type { ExecutionEnvironment } from "./execution-environment.ts";
import {
  cachedStepFromWire,
  cachedStepToWire,
  storedJobFromWire,
  workspaceEndToWire,
} from "./executor-wire.ts";
import type { RepositorySource } from "./repository-source.ts";
import { type WorkspaceClaim, type WorkspaceEnd, workspaceJobId } from "./run-store.ts";
import type { CachedStepResult, StepCache } from "./step-cache.ts";
import { WorkspaceJob } from "./workspace-job.ts";
import type {
  JobProgress,
  JobWorkspaceRow,
  StoredJob,
  WorkspaceJobStore,
} from "./workspace-job-store.ts";

/**
 * What an executor calls of the server: the typed server client's executor operations
 * (`createServerClient` of @deckhand/server-client, with the executor token).
 */
export type ExecutorApiClient = Pick<
  ServerClient,
  | "claimExecutorJob"
  | "heartbeatExecutorJobs"
  | "appendExecutorJobEvents"
  | "completeExecutorJob"
  | "failExecutorJob"
  | "leaseExecutorModelToken"
  | "releaseExecutorModelToken"
  | "getExecutorCachedStep"
  | "putExecutorCachedStep"
  | "keptExecutorCheckouts"
>;

/** Most progress events sent in one request (the route takes up to 1,000). */
const EVENTS_PER_REQUEST = 500;

/** One claimed job while this executor runs it. */
interface HeldJob {
  job: ExecutorJob;
  controller: AbortController;
  /** What the last heartbeat said. */
  state: { holds: boolean; running: boolean };
  /** Whether its end was sent (the complete call settles the task with it). */
  finished: boolean;
  done: Promise<void>;
}

/** The port over the executor API, for one claimed job: its answers are the claim's. */
class HttpJobStore implements WorkspaceJobStore {
  readonly #client: ExecutorApiClient;
  readonly #held: HeldJob;

  constructor(client: ExecutorApiClient, held: HeldJob) {
    this.#client = client;
    this.#held = held;
  }

  get #lease(): ExecutorLease {
    return this.#held.job.lease;
  }

  async job(workspaceId: string): Promise<StoredJob | null> {
    return workspaceId === this.#lease.workspace_id ? storedJobFromWire(this.#held.job) : null;
  }

  /** The server claimed the workspace with the task: this is that claim. */
  async claim(row: JobWorkspaceRow, executor: string): Promise<WorkspaceClaim | null> {
    if (row.id !== this.#lease.workspace_id || executor !== this.#lease.executor) return null;
    return { executor, attempt: this.#lease.workspace_attempt };
  }

  /**
   * The server started the workspace (its run running, the previous attempt's step rows gone)
   * when it handed the job out, after checking the run's budget.
   */
  async start(): Promise<void> {}

  /** What the newest heartbeat said (heartbeats renew every held job's lease at once). */
  async claimState(): Promise<{ holds: boolean; running: boolean }> {
    return this.#held.state;
  }

  /** The fail call that follows gives the workspace back with its task, in one request. */
  async release(): Promise<void> {}

  progress(): JobProgress {
    const client = this.#client;
    const lease = this.#lease;
    const pending: BatchRunEvent[] = [];
    let sending: Promise<void> | null = null;
    // Group commit over HTTP: events that arrive while a request is out go in the next one, so a
    // chatty step costs one request at a time, not one per event.
    const drain = (): Promise<void> => {
      sending ??= (async () => {
        try {
          while (pending.length > 0) {
            const events = pending.splice(0, EVENTS_PER_REQUEST);
            await client.appendExecutorJobEvents({ body: { lease, events } });
          }
        } finally {
          sending = null;
        }
      })();
      return sending;
    };
    return {
      append: async (...events) => {
        pending.push(...events);
        await drain();
      },
      flush: drain,
    };
  }

  async finishWorkspace(
    _row: JobWorkspaceRow,
    _run: unknown,
    _options: BatchRunOptions,
    _claim: WorkspaceClaim,
    end: WorkspaceEnd,
  ): Promise<boolean> {
    // The progress the end carries goes first, as the job's other progress does (and, like it,
    // is lost when the server refuses it: a workspace cancelled meanwhile): the executor API's
    // end takes the events told after `workspace_finished` only.
    const progress = [...(end.progress ?? [])];
    try {
      while (progress.length > 0) {
        const events = progress.splice(0, EVENTS_PER_REQUEST);
        await this.#client.appendExecutorJobEvents({ body: { lease: this.#lease, events } });
      }
    } catch {}
    await this.#client.completeExecutorJob({
      body: { lease: this.#lease, ...workspaceEndToWire(end) },
    });
    this.#held.finished = true;
    return true;
  }
}

/** The step cache over the executor API: read by key, written under the job's lease. */
class HttpStepCache implements StepCache {
  readonly #client: ExecutorApiClient;
  readonly #lease: ExecutorLease;

  constructor(client: ExecutorApiClient, lease: ExecutorLease) {
    this.#client = client;
    this.#lease = lease;
  }

  async get(key: string): Promise<CachedStepResult | undefined> {
    const { result } = await this.#client.getExecutorCachedStep({ query: { key } });
    return result === null ? undefined : cachedStepFromWire(result);
  }

  async put(key: string, result: CachedStepResult): Promise<void> {
    await this.#client.putExecutorCachedStep({
      body: { lease: this.#lease, key, result: cachedStepToWire(result) },
    });
  }
}

export interface HttpExecutorOptions {
  client: ExecutorApiClient;
  /**
   * Steps run here: the execution environment of this machine, given the model-provider access
   * this executor has (tokens the server mints for the jobs it holds).
   */
  environment: (modelProvider: ModelProviderAccess) => ExecutionEnvironment;
  repositories: RepositorySource;
  /** Jobs run at once. */
  concurrency: number;
  /** This executor's name (`--id`); the server adds its token's id. */
  executorId?: string;
  /** How long a claimed job stays claimed without a heartbeat. Heartbeats come every third of it. */
  leaseMs: number;
  /** How long `stop()` lets running jobs finish before giving them back. */
  shutdownTimeoutMs: number;
  /** How long to wait before asking again when no job is due. Default 1 s. */
  pollIntervalMs?: number;
  /** Scrubs a failed job's error text before it is sent. */
  redact?: (text: string) => string;
  onError?: (error: unknown) => void;
  /**
   * The server refused this executor's token (revoked, say): running jobs are stopped, nothing
   * more is claimed.
   */
  onRefused?: (error: unknown) => void;
}

export interface HttpExecutor {
  readonly executorId: string;
  readonly activeCount: number;
  /** Resolves once the leftovers of a killed predecessor are gone and claiming begins. */
  readonly ready: Promise<void>;
  /** Resolves when the executor has stopped (by `stop()`, or refused by the server). */
  readonly stopped: Promise<void>;
  stop(): Promise<void>;
}

/** Whether an error is the server's refusal of the token (401): the executor cannot go on. */
function refused(error: unknown): boolean {
  return error instanceof ServerApiError && error.status === 401;
}

/** Whether an error is the server's refusal of a lease that no longer holds (409). */
function stale(error: unknown): boolean {
  return error instanceof ServerApiError && error.status === 409;
}

/**
 * The model-provider tokens of codingAgent steps, minted by the server for the held job whose
 * id it is; never by the executor.
 */
function serverModelProviderAccess(
  client: ExecutorApiClient,
  held: ReadonlyMap<number, HeldJob>,
): ModelProviderAccess {
  return {
    async lease(jobId: string): Promise<ModelProviderJobLease> {
      const job = [...held.values()].find(
        (candidate) => workspaceJobId(candidate.job.lease.workspace_id) === jobId,
      );
      if (job === undefined) {
        throw new BatchesError("coding_agent_unavailable", `this executor holds no job ${jobId}`);
      }
      const lease = job.job.lease;
      const minted = await client.leaseExecutorModelToken({ body: { lease } });
      return {
        baseUrl: minted.base_url,
        token: minted.token,
        release: async () => {
          await client.releaseExecutorModelToken({ body: { lease, token: minted.token } });
        },
      };
    },
  };
}

/** Starts claiming jobs from the server and running them, `concurrency` at a time. */
export function startHttpExecutor(options: HttpExecutorOptions): HttpExecutor {
  const { client } = options;
  const executorId =
    options.executorId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const held = new Map<number, HeldJob>();
  const environment = options.environment(serverModelProviderAccess(client, held));
  const pollIntervalMs = options.pollIntervalMs ?? 1_000;
  const onError = options.onError ?? (() => {});
  const redact = options.redact ?? ((text: string) => text);
  let state: "running" | "stopping" | "stopped" = "running";
  let wake: (() => void) | null = null;
  let markStopped: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    markStopped = resolve;
  });

  const refuse = (error: unknown) => {
    if (state !== "running") return;
    state = "stopping";
    for (const job of held.values()) job.controller.abort(error);
    options.onRefused?.(error);
    void Promise.all([...held.values()].map((job) => job.done)).then(() => {
      clearInterval(heartbeatTimer);
      state = "stopped";
      markStopped();
    });
  };

  const settle = async (job: HeldJob, failure: unknown) => {
    const lease = job.job.lease;
    try {
      if (failure === undefined && job.finished) return;
      // Handed back at once when this executor stops; otherwise retried after a backoff.
      await client.failExecutorJob({
        body: {
          lease,
          error: redact(
            failure === undefined
              ? "the job ended without reporting its end"
              : errorMessage(failure),
          ).slice(0, 16_000),
          release: state !== "running",
        },
      });
    } catch (error) {
      // A stale lease (taken over meanwhile) has nothing left to settle.
      if (refused(error)) refuse(error);
      else if (!stale(error)) onError(error);
    }
  };

  const run = (claimed: ExecutorJob) => {
    const controller = new AbortController();
    const job: HeldJob = {
      job: claimed,
      controller,
      state: { holds: true, running: true },
      finished: false,
      done: Promise.resolve(),
    };
    held.set(claimed.lease.task_id, job);
    const workspaceJob = new WorkspaceJob({
      store: new HttpJobStore(client, job),
      cache: new HttpStepCache(client, claimed.lease),
      environment,
      repositories: options.repositories,
    });
    job.done = (async () => {
      let failure: unknown;
      try {
        await workspaceJob.run(claimed.lease.workspace_id, {
          workerId: claimed.lease.executor,
          signal: controller.signal,
        });
      } catch (error) {
        failure = error;
      }
      await settle(job, failure);
      held.delete(claimed.lease.task_id);
      wake?.();
    })();
  };

  const heartbeat = async () => {
    const jobs = [...held.values()];
    if (jobs.length === 0) return;
    let answer: Awaited<ReturnType<ExecutorApiClient["heartbeatExecutorJobs"]>>;
    try {
      answer = await client.heartbeatExecutorJobs({
        body: { leases: jobs.map((job) => job.job.lease), lease_ms: options.leaseMs },
      });
    } catch (error) {
      if (refused(error)) refuse(error);
      else onError(error);
      return;
    }
    for (const reply of answer.jobs) {
      const job = held.get(reply.task_id);
      if (job === undefined) continue;
      job.state = { holds: reply.holds, running: reply.running };
      // Taken over by another executor: stop, as a worker whose lease was lost does.
      if (!reply.holds) {
        job.controller.abort(new BatchesError("interrupted", "the job's lease was lost"));
      }
    }
  };
  const heartbeatTimer = setInterval(() => void heartbeat(), Math.floor(options.leaseMs / 3));

  // What a killed predecessor in this data directory left on disk goes first, as the server
  // says which checkouts still run.
  const sweep = () =>
    sweepCheckouts(environment.directories.workDirectory, async (checkouts) => {
      const { kept } = await client.keptExecutorCheckouts({
        body: {
          checkouts: checkouts.map((checkout) => ({
            workspace_id: checkout.workspaceId,
            attempt: checkout.attempt,
          })),
        },
      });
      const keep = new Set(kept.map((checkout) => `${checkout.workspace_id}\n${checkout.attempt}`));
      return new Set(
        checkouts
          .filter((checkout) => keep.has(`${checkout.workspaceId}\n${checkout.attempt}`))
          .map((checkout) => checkout.name),
      );
    }).catch((error: unknown) => {
      if (refused(error)) refuse(error);
      else onError(error);
    });

  const swept = sweep().then(() => {});
  const claimLoop = async () => {
    await swept;
    while (state === "running") {
      if (held.size >= options.concurrency) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = null;
        continue;
      }
      let claimed: ExecutorJob | null = null;
      try {
        ({ job: claimed } = await client.claimExecutorJob({
          body: { executor_id: executorId, lease_ms: options.leaseMs },
        }));
      } catch (error) {
        if (refused(error)) {
          refuse(error);
          return;
        }
        onError(error);
      }
      if (state !== "running") {
        // Claimed while stopping: hand it straight back.
        if (claimed !== null) {
          await client
            .failExecutorJob({
              body: { lease: claimed.lease, error: "the executor is stopping", release: true },
            })
            .catch(onError);
        }
        return;
      }
      if (claimed !== null) {
        run(claimed);
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pollIntervalMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = null;
    }
  };
  const claiming = claimLoop();

  let stopping: Promise<void> | null = null;
  return {
    executorId,
    get activeCount() {
      return held.size;
    },
    ready: swept,
    stopped,
    stop() {
      stopping ??= (async () => {
        if (state === "running") state = "stopping";
        wake?.();
        await claiming;
        const finished = Promise.all([...held.values()].map((job) => job.done));
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, options.shutdownTimeoutMs);
        });
        await Promise.race([finished, timedOut]);
        clearTimeout(timer);
        for (const job of held.values()) {
          job.controller.abort(new BatchesError("interrupted", "the executor is shutting down"));
        }
        await Promise.all([...held.values()].map((job) => job.done));
        clearInterval(heartbeatTimer);
        state = "stopped";
        markStopped();
      })();
      return stopping;
    },
  };
}
