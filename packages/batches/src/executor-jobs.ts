// The server's side of the executor API: batch workspace jobs handed to executors that reach the
// server over HTTP and hold no database connection. A claim takes the queue task and the
// workspace at once, with the same lease statements a TaskWorker runs (@deckhand/db) and the
// same workspace claim the job takes on the database path (RunStore), so executors of both kinds
// share one queue. Everything an executor writes afterwards names its lease and is fenced by it:
// a lease that was taken over, cancelled or settled changes nothing, and is refused.
import {
  type ClaimedTask,
  claimTasks,
  completeTask,
  type DbHandle,
  failExhaustedLeases,
  failTask,
  releaseTasks,
  renewLeases,
  retryDelayMs,
  type TaskLease,
  tasks,
} from "@deckhand/db";
import type {
  BatchRunEvent,
  CompleteExecutorJobRequest,
  ExecutorCachedStep,
  ExecutorJob,
  ExecutorLease,
  HeartbeatExecutorJobsResponse,
} from "@deckhand/wire";
import { eq } from "drizzle-orm";
import { BatchesError } from "./batches-error.ts";
import type { CheckoutName } from "./checkout-sweep.ts";
import { DatabaseStepCache } from "./database-step-cache.ts";
import { cachedStepFromWire, cachedStepToWire, workspaceEndFromWire } from "./executor-wire.ts";
import { keptCheckouts } from "./run-recovery.ts";
import {
  BATCH_WORKSPACE_TASK,
  RunStore,
  type WorkspaceClaim,
  WorkspaceTaskPayloadSchema,
} from "./run-store.ts";
import { StoredRunOptionsSchema } from "./stored-run.ts";
import { notStarted, type RunBudgets } from "./workspace-job.ts";

/** Tasks a claim may skip (ended workspaces, bad payloads) before it answers "none due". */
const CLAIM_ATTEMPTS = 10;
/** How often claims look for jobs the queue gave up on, at most. */
const RECOVERY_INTERVAL_MS = 30_000;

export interface ExecutorJobsOptions {
  database: DbHandle;
  /** Model spend budgets: a job of a run whose budget is spent is not handed out but ended. */
  budgets?: RunBudgets | undefined;
  /** Ends runs and workspaces the queue gave up on (the batch service's recoverAbandonedJobs). */
  recover?: () => Promise<unknown>;
  /** Retry backoff of failed attempts, as a TaskWorker's: 1 s doubling to 5 min, 25 % jitter. */
  backoff?: { baseMs: number; maxMs: number; jitter: number };
  onError?: (error: unknown) => void;
}

/**
 * How the queue and the workspace record an executor of a token: its own id and the first 13
 * characters of its token's id (48 random bits), so two tokens' executors never share a name and
 * a token's leases are recognisable as its own.
 */
export function executorName(executorId: string, tokenId: string): string {
  return `${executorId}@${tokenId.slice(0, 13)}`;
}

function staleLease(lease: ExecutorLease, why: string): BatchesError {
  return new BatchesError(
    "conflict",
    `the lease of task ${lease.task_id} (workspace ${lease.workspace_id}, attempt ${lease.workspace_attempt}) ${why}; drop the job`,
  );
}

function claimOf(lease: ExecutorLease): WorkspaceClaim {
  return { executor: lease.executor, attempt: lease.workspace_attempt };
}

function taskLeaseOf(lease: ExecutorLease): TaskLease {
  return { id: lease.task_id, workerId: lease.executor, attempt: lease.task_attempt };
}

export class ExecutorJobs {
  readonly #database: DbHandle;
  readonly #store: RunStore;
  readonly #cache: DatabaseStepCache;
  readonly #options: ExecutorJobsOptions;
  #recoveredAt = 0;

  constructor(options: ExecutorJobsOptions) {
    this.#options = options;
    this.#database = options.database;
    this.#store = new RunStore(options.database);
    this.#cache = new DatabaseStepCache(options.database.db);
  }

  /**
   * Throws unless the lease names an executor of `tokenId`: a token's executors act on their own
   * jobs only.
   */
  checkOwner(lease: ExecutorLease, tokenId: string): void {
    if (!lease.executor.endsWith(`@${tokenId.slice(0, 13)}`)) {
      throw staleLease(lease, "belongs to an executor of another executor token");
    }
  }

  /**
   * Claims the next due workspace job for `executor`: its queue task with a lease of `leaseMs`,
   * and its workspace for one attempt. Null when none is due.
   */
  async claim(executor: string, leaseMs: number): Promise<ExecutorJob | null> {
    this.#recoverNow();
    await failExhaustedLeases(this.#database, [BATCH_WORKSPACE_TASK]);
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt += 1) {
      const [task] = await claimTasks(this.#database, {
        types: [BATCH_WORKSPACE_TASK],
        limit: 1,
        workerId: executor,
        leaseMs,
      });
      if (task === undefined) return null;
      const job = await this.#claimWorkspace(task, executor);
      if (job !== null) return job;
    }
    return null;
  }

  async #claimWorkspace(task: ClaimedTask, executor: string): Promise<ExecutorJob | null> {
    const lease = { id: task.id, workerId: executor, attempt: task.attempts };
    const payload = WorkspaceTaskPayloadSchema.safeParse(task.payload);
    if (!payload.success) {
      await failTask(
        this.#database,
        lease,
        task,
        `invalid payload: ${payload.error.message}`,
        null,
      );
      return null;
    }
    // A workspace that ended (an earlier delivery of the task, a cancel) has nothing to do: its
    // task is done, as a worker's handler that returns at once settles it.
    const found = await this.#store.job(payload.data.workspace_id);
    const claim = found === null ? null : await this.#store.claim(found.row, executor);
    if (found === null || claim === null) {
      await completeTask(this.#database, lease, task);
      return null;
    }
    // A run whose budget is spent dispatches no further workspace, as on the database path.
    const spent = await this.#options.budgets?.runBudgetReached(found.run.id);
    if (spent) {
      const options = StoredRunOptionsSchema.parse(found.run.options);
      await this.#store.finishWorkspace(found.row, found.run, options, claim, notStarted(spent));
      await completeTask(this.#database, lease, task);
      return null;
    }
    await this.#store.start(found.row);
    return {
      lease: {
        task_id: task.id,
        task_attempt: task.attempts,
        workspace_id: found.row.id,
        workspace_attempt: claim.attempt,
        executor,
      },
      workspace: {
        id: found.row.id,
        batch_run_id: found.row.batchRunId,
        repository: found.row.repository,
        branch: found.row.branch,
        revision: found.row.revision,
        path: found.row.path,
        definition: found.row.definition as Record<string, unknown>,
      },
      run: { id: found.run.id, options: found.run.options as Record<string, unknown> },
      spec: {
        source: found.spec.source,
        file: found.spec.file,
        spec_directory: found.spec.specDirectory,
      },
    };
  }

  /** Ends abandoned jobs now and then: no batch worker may run on the server to do it. */
  #recoverNow(): void {
    const recover = this.#options.recover;
    if (recover === undefined || Date.now() - this.#recoveredAt < RECOVERY_INTERVAL_MS) return;
    this.#recoveredAt = Date.now();
    void recover().catch((error: unknown) => this.#options.onError?.(error));
  }

  /**
   * Renews the leases; per lease, whether the executor still holds the job and whether its
   * workspace still runs (false is the cancel notice).
   */
  async heartbeat(
    leases: readonly ExecutorLease[],
    leaseMs: number,
  ): Promise<HeartbeatExecutorJobsResponse> {
    const byExecutor = new Map<string, number[]>();
    for (const lease of leases) {
      byExecutor.set(lease.executor, [...(byExecutor.get(lease.executor) ?? []), lease.task_id]);
    }
    const renewed = new Set<string>();
    for (const [executor, ids] of byExecutor) {
      for (const id of await renewLeases(this.#database, ids, executor, leaseMs)) {
        renewed.add(`${executor}\n${id}`);
      }
    }
    const jobs: HeartbeatExecutorJobsResponse["jobs"] = [];
    for (const lease of leases) {
      const state = await this.#store.claimState(lease.workspace_id, claimOf(lease));
      jobs.push({
        task_id: lease.task_id,
        holds: state.holds && renewed.has(`${lease.executor}\n${lease.task_id}`),
        running: state.running,
      });
    }
    return { jobs };
  }

  /** Throws unless the lease still holds its workspace, which still runs. */
  async checkHeld(lease: ExecutorLease): Promise<void> {
    const state = await this.#store.claimState(lease.workspace_id, claimOf(lease));
    if (!state.holds) throw staleLease(lease, "no longer holds its workspace");
    if (!state.running) throw staleLease(lease, "names a workspace that no longer runs");
  }

  /** Appends a held job's progress to its run's log (and its step rows). */
  async appendEvents(lease: ExecutorLease, events: readonly BatchRunEvent[]): Promise<void> {
    await this.checkHeld(lease);
    const row = await this.#store.workspaceRow(lease.workspace_id);
    const progress = this.#store.progress(row.batchRunId, row.id);
    // One transaction for the request's events (the route takes at most 1,000 of them).
    await progress.append(...events);
    await progress.flush();
  }

  /**
   * Writes a held job's end once and settles its task. Refused when neither the workspace claim
   * nor the task's lease holds; a workspace cancelled meanwhile keeps its end, and the task is
   * settled all the same.
   */
  async complete(
    lease: ExecutorLease,
    end: Omit<CompleteExecutorJobRequest, "lease">,
  ): Promise<void> {
    const found = await this.#store.job(lease.workspace_id);
    const written =
      found !== null &&
      (await this.#store.finishWorkspace(
        found.row,
        found.run,
        StoredRunOptionsSchema.parse(found.run.options),
        claimOf(lease),
        workspaceEndFromWire(end),
      ));
    const task = await this.#task(lease);
    const settled = task !== null && (await completeTask(this.#database, taskLeaseOf(lease), task));
    if (!written && !settled) throw staleLease(lease, "holds neither its workspace nor its task");
  }

  /**
   * Gives a held job back: its workspace to pending, and its task to the queue, at once without
   * spending an attempt when `release` (the executor stops), else after a backoff (failed for
   * good on its last attempt).
   */
  async fail(lease: ExecutorLease, error: string, release: boolean): Promise<void> {
    await this.#store.release(lease.workspace_id, claimOf(lease));
    const task = await this.#task(lease);
    if (task === null) throw staleLease(lease, "names no task");
    if (release) {
      await releaseTasks(this.#database, [lease.task_id], lease.executor);
      return;
    }
    const backoff = this.#options.backoff ?? { baseMs: 1_000, maxMs: 5 * 60_000, jitter: 0.25 };
    const retryInMs =
      lease.task_attempt >= task.maxAttempts ? null : retryDelayMs(lease.task_attempt, backoff);
    const failed = await failTask(this.#database, taskLeaseOf(lease), task, error, retryInMs);
    if (!failed) throw staleLease(lease, "no longer holds its task");
  }

  async #task(lease: ExecutorLease) {
    const [task] = await this.#database.db
      .select({ type: tasks.type, serialKey: tasks.serialKey, maxAttempts: tasks.maxAttempts })
      .from(tasks)
      .where(eq(tasks.id, lease.task_id));
    return task ?? null;
  }

  /** Which of an executor's checkouts stay, by the rule the database path sweeps with. */
  async keptCheckouts(
    checkouts: readonly { workspace_id: string; attempt: number }[],
  ): Promise<{ workspace_id: string; attempt: number }[]> {
    const named: CheckoutName[] = checkouts.map((checkout) => ({
      name: `${checkout.workspace_id}.${checkout.attempt}`,
      workspaceId: checkout.workspace_id,
      attempt: checkout.attempt,
    }));
    const kept = await keptCheckouts(this.#store, named);
    return checkouts.filter((checkout) => kept.has(`${checkout.workspace_id}.${checkout.attempt}`));
  }

  async cachedStep(key: string): Promise<ExecutorCachedStep | null> {
    const result = await this.#cache.get(key);
    return result === undefined ? null : cachedStepToWire(result);
  }

  /** Caches a step's result, for an executor that holds a job. */
  async cacheStep(lease: ExecutorLease, key: string, result: ExecutorCachedStep): Promise<void> {
    await this.checkHeld(lease);
    await this.#cache.put(key, cachedStepFromWire(result));
  }
}
