import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { DbHandle } from "../client.ts";
import { DbError } from "../errors.ts";
import { readTaskNotice, TASK_CHANNEL } from "./enqueue.ts";
import {
  type ClaimedTask,
  claimCycle,
  completeTask,
  failExhaustedLeases,
  failTask,
  releaseTasks,
  renewLeases,
  retryDelayMs,
} from "./leases.ts";
import type { TaskRegistry } from "./registry.ts";

export interface WorkerOptions {
  database: DbHandle;
  registry: TaskRegistry;
  /** Names this worker in `tasks.locked_by`. Defaults to host, pid and a random suffix. */
  workerId?: string;
  /** Tasks run at once. Defaults to 1. */
  concurrency?: number;
  /** How long a claim lasts without a heartbeat. Defaults to 30 s. */
  leaseMs?: number;
  /** How often held leases are renewed. Defaults to a third of the lease. */
  heartbeatMs?: number;
  /** The fallback when a NOTIFY is missed, and how delayed tasks are found. Defaults to 1 s. */
  pollIntervalMs?: number;
  /** Wake on NOTIFY. Defaults to true; false leaves polling alone (benchmarks compare the two). */
  listen?: boolean;
  /** Delay before retry n is `min(backoffMaxMs, backoffBaseMs * 2^(n-1))`. Defaults: 1 s, 5 min. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /**
   * Each retry waits up to this fraction longer than its backoff, at random, so tasks that
   * failed together (an upstream outage) do not all retry in the same instant. Defaults to 0.25.
   */
  backoffJitter?: number;
  /**
   * Succeeded tasks of this worker's types are deleted this long after they completed, so the
   * table does not grow forever. Failed tasks are kept for diagnosis. Defaults to 7 days;
   * `Infinity` keeps them for good. A deleted task's idempotency key can be used again: an
   * enqueue with that key then adds a new task.
   */
  retainSucceededMs?: number;
  /** How often the worker looks for succeeded tasks to delete. Defaults to 10 minutes. */
  cleanupIntervalMs?: number;
  /** How long `stop()` waits for running tasks before releasing them. Defaults to 10 s. */
  shutdownTimeoutMs?: number;
  /** Queue errors (the database unreachable, say) that the worker survives by retrying. */
  onError?: (error: unknown) => void;
  /**
   * Scrubs a failed task's error text before it is stored in `last_error` (secrets a handler
   * put in an error message must not reach a database row).
   */
  redact?: (text: string) => string;
  /** Told about every failed attempt, after its error text is stored (for the server log). */
  onTaskFailed?: (task: { id: number; type: string; attempt: number; error: string }) => void;
}

interface HeldTask {
  id: number;
  attempt: number;
  controller: AbortController;
  done: Promise<void>;
}

/**
 * Claims tasks of the registered types and runs their handlers. Delivery is at least once: a
 * task whose worker dies is claimed again once its lease expires, so handlers must be
 * idempotent. While a lease is held and renewed, no other worker runs the task. One worker
 * never runs a task twice at once: a task whose handler it is still running (its lease lapsed
 * while heartbeats failed, or it was given up but the handler ignored the abort) is skipped by
 * its claims until that handler returns.
 */
export class TaskWorker {
  readonly workerId: string;
  readonly #database: DbHandle;
  readonly #registry: TaskRegistry;
  readonly #types: string[];
  readonly #concurrency: number;
  readonly #leaseMs: number;
  readonly #heartbeatMs: number;
  readonly #pollIntervalMs: number;
  readonly #listen: boolean;
  readonly #backoffBaseMs: number;
  readonly #backoffMaxMs: number;
  readonly #backoffJitter: number;
  readonly #retainSucceededMs: number;
  readonly #cleanupIntervalMs: number;
  #lastCleanupAt = 0;
  readonly #shutdownTimeoutMs: number;
  readonly #onError: (error: unknown) => void;
  readonly #redact: (text: string) => string;
  readonly #onTaskFailed: WorkerOptions["onTaskFailed"];
  readonly #held = new Map<number, HeldTask>();
  /**
   * Tasks whose handler (or its settle statement) has not returned yet, including ones given up
   * after a lost lease or at shutdown whose handler ignores the abort. A worker never claims one
   * of these: it would run the same task twice at once in this process.
   */
  readonly #inFlight = new Set<number>();
  #state: "idle" | "running" | "stopping" | "stopped" = "idle";
  #unlisten: (() => Promise<void>) | undefined;
  #pollTimer: NodeJS.Timeout | undefined;
  #heartbeatTimer: NodeJS.Timeout | undefined;
  #cycle: Promise<void> | undefined;
  #wakeAgain = false;

  constructor(options: WorkerOptions) {
    this.#database = options.database;
    this.#registry = options.registry;
    this.#types = options.registry.types();
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.#concurrency = options.concurrency ?? 1;
    this.#leaseMs = options.leaseMs ?? 30_000;
    this.#heartbeatMs = options.heartbeatMs ?? Math.floor(this.#leaseMs / 3);
    this.#pollIntervalMs = options.pollIntervalMs ?? 1_000;
    this.#listen = options.listen ?? true;
    this.#backoffBaseMs = options.backoffBaseMs ?? 1_000;
    this.#backoffMaxMs = options.backoffMaxMs ?? 5 * 60_000;
    this.#shutdownTimeoutMs = options.shutdownTimeoutMs ?? 10_000;
    this.#backoffJitter = options.backoffJitter ?? 0.25;
    this.#retainSucceededMs = options.retainSucceededMs ?? 7 * 24 * 60 * 60 * 1000;
    this.#cleanupIntervalMs = options.cleanupIntervalMs ?? 10 * 60 * 1000;
    this.#onError = options.onError ?? (() => {});
    this.#redact = options.redact ?? ((text) => text);
    this.#onTaskFailed = options.onTaskFailed;
    if (this.#concurrency < 1 || this.#leaseMs <= 0 || this.#heartbeatMs >= this.#leaseMs) {
      throw new DbError(
        "invalid_options",
        "Worker needs concurrency ≥ 1, a positive lease, and a heartbeat shorter than the lease.",
      );
    }
    if (!(this.#retainSucceededMs >= 0)) {
      throw new DbError(
        "invalid_options",
        "Worker needs a retention for succeeded tasks of 0 ms or more (Infinity keeps them).",
      );
    }
  }

  /** Tasks this worker is running now. */
  get activeCount(): number {
    return this.#held.size;
  }

  async start(): Promise<void> {
    if (this.#state !== "idle") {
      throw new DbError("worker_stopped", "A worker can be started only once.");
    }
    this.#state = "running";
    if (this.#listen) {
      this.#unlisten = await this.#database.listen(TASK_CHANNEL, (payload) => {
        const notice = readTaskNotice(payload);
        // Its own settle statement's notice: the worker looked for work after settling already.
        if (notice.fromWorker === this.workerId) return;
        if (this.#types.includes(notice.type)) this.#wake();
      });
    }
    this.#heartbeatTimer = setInterval(() => {
      this.#heartbeat().catch(this.#onError);
    }, this.#heartbeatMs);
    this.#wake();
  }

  /**
   * Stops claiming, waits up to the shutdown timeout for running tasks, then aborts and
   * releases the rest so another worker picks them up at once (without spending an attempt).
   */
  async stop(): Promise<void> {
    if (this.#state === "stopped" || this.#state === "stopping") return;
    const wasRunning = this.#state === "running";
    this.#state = "stopping";
    clearTimeout(this.#pollTimer);
    if (!wasRunning) {
      this.#state = "stopped";
      return;
    }
    await this.#unlisten?.().catch(this.#onError);
    await this.#cycle;
    const finished = Promise.all([...this.#held.values()].map((task) => task.done));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.#shutdownTimeoutMs);
    });
    await Promise.race([finished, timedOut]);
    clearTimeout(timer);
    const unfinished = [...this.#held.values()];
    for (const task of unfinished) {
      this.#held.delete(task.id);
      task.controller.abort(new DbError("worker_stopped", "The worker is shutting down."));
    }
    clearInterval(this.#heartbeatTimer);
    await releaseTasks(
      this.#database,
      unfinished.map((task) => task.id),
      this.workerId,
    ).catch(this.#onError);
    this.#state = "stopped";
  }

  /** Starts a claim cycle now, or right after the current one. */
  #wake(): void {
    if (this.#state !== "running") return;
    if (this.#cycle) {
      this.#wakeAgain = true;
      return;
    }
    clearTimeout(this.#pollTimer);
    this.#cycle = this.#claimCycle()
      .catch((error: unknown) => {
        this.#onError(error);
        return this.#pollIntervalMs;
      })
      .then((nextPollMs) => {
        this.#cycle = undefined;
        if (this.#state !== "running") return;
        if (this.#wakeAgain) {
          this.#wakeAgain = false;
          this.#wake();
          return;
        }
        this.#pollTimer = setTimeout(() => this.#wake(), nextPollMs);
      });
  }

  /** Claims as many tasks as there are free slots; returns how long to wait before polling. */
  async #claimCycle(): Promise<number> {
    await this.#deleteOldSucceeded();
    const free = this.#concurrency - this.#held.size;
    // Every slot busy: a handler that returns wakes the worker, so there is nothing to look for
    // until then (the poll below would find the waiting tasks due and spin on them). Tasks whose
    // last attempt lost its lease are still failed now.
    if (free === 0) {
      await failExhaustedLeases(this.#database, this.#types, [...this.#inFlight]);
      return this.#pollIntervalMs;
    }
    // One statement (leases.ts, claimCycle) fails tasks whose last allowed attempt lost its
    // lease, claims, and reads when the next delayed task is due. A lease of ours can expire
    // while its handler still runs (heartbeats failing for a whole lease, say). Such a task is
    // skipped here, neither failed nor claimed again: its first run continues, and the next
    // heartbeat that gets through renews the lease if no other worker took it.
    const cycle = await claimCycle(this.#database, {
      types: this.#types,
      limit: free,
      workerId: this.workerId,
      leaseMs: this.#leaseMs,
      exclude: [...this.#inFlight],
    });
    for (const task of cycle.claimed) this.#run(task);
    // A full batch may mean more are waiting: look again as soon as a slot frees up. A task
    // failed for good here may have freed its serial key's next task: look again at once.
    if (cycle.claimed.length === free) return this.#pollIntervalMs;
    if (cycle.failedExhausted) return 0;
    // Sleep until the next delayed task (a retry, say) is due, or the poll interval. A task due
    // now that the claim left is waiting for an earlier task of its serial key (whose end
    // NOTIFYs every worker) or is being claimed by another worker: it is no reason to look again
    // at once, which would poll without pause until it can be claimed.
    if (cycle.dueInMs === null) return this.#pollIntervalMs;
    return Math.min(this.#pollIntervalMs, Math.max(0, Math.ceil(cycle.dueInMs)));
  }

  /** Deletes old succeeded tasks, a bounded batch at most once per cleanup interval. */
  async #deleteOldSucceeded(): Promise<void> {
    if (this.#retainSucceededMs === Number.POSITIVE_INFINITY) return;
    const now = Date.now();
    if (now - this.#lastCleanupAt < this.#cleanupIntervalMs) return;
    this.#lastCleanupAt = now;
    await this.#database.query(
      `delete from tasks where id in (
         select id from tasks
         where status = 'succeeded' and type = any($1::text[])
           and completed_at < now() - $2 * interval '1 millisecond'
         limit 1000)`,
      [this.#types, this.#retainSucceededMs],
    );
  }

  #run(row: ClaimedTask): void {
    const id = Number(row.id);
    const controller = new AbortController();
    const task: HeldTask = { id, attempt: row.attempts, controller, done: Promise.resolve() };
    this.#held.set(id, task);
    this.#inFlight.add(id);
    task.done = (async () => {
      let failure: unknown;
      try {
        await this.#registry.run(row.type, row.payload, {
          id,
          type: row.type,
          attempt: row.attempts,
          maxAttempts: row.maxAttempts,
          workerId: this.workerId,
          signal: controller.signal,
        });
      } catch (error) {
        failure = error;
      }
      // A task released at shutdown or lost to another worker is no longer ours to settle.
      if (this.#held.get(id) !== task) {
        this.#inFlight.delete(id);
        return;
      }
      try {
        if (failure === undefined) await this.#complete(task, row);
        else await this.#fail(task, row, failure);
      } catch (error) {
        this.#onError(error);
      } finally {
        this.#held.delete(id);
        this.#inFlight.delete(id);
        this.#wake();
      }
    })();
  }

  // Every settle statement is fenced by worker and attempt (leases.ts): after a lease expired
  // and another worker claimed the task, this worker's late result changes nothing.
  async #complete(task: HeldTask, row: ClaimedTask): Promise<void> {
    await completeTask(this.#database, this.#lease(task), row);
  }

  #lease(task: HeldTask) {
    return { id: task.id, workerId: this.workerId, attempt: task.attempt };
  }

  async #fail(task: HeldTask, row: ClaimedTask, failure: unknown): Promise<void> {
    const reason = this.#redact(describeFailure(failure));
    this.#onTaskFailed?.({ id: task.id, type: row.type, attempt: task.attempt, error: reason });
    const permanent = failure instanceof DbError && failure.code === "task_payload_invalid";
    const retryInMs =
      permanent || task.attempt >= row.maxAttempts
        ? null
        : retryDelayMs(task.attempt, {
            baseMs: this.#backoffBaseMs,
            maxMs: this.#backoffMaxMs,
            jitter: this.#backoffJitter,
          });
    await failTask(this.#database, this.#lease(task), row, reason, retryInMs);
  }

  /** Renews every held lease; a task whose lease was taken over is aborted here. */
  async #heartbeat(): Promise<void> {
    const held = [...this.#held.values()];
    if (held.length === 0) return;
    const still = await renewLeases(
      this.#database,
      held.map((task) => task.id),
      this.workerId,
      this.#leaseMs,
    );
    for (const task of held) {
      if (still.has(task.id) || this.#held.get(task.id) !== task) continue;
      this.#held.delete(task.id);
      task.controller.abort(new DbError("worker_stopped", "The task's lease was lost."));
    }
  }
}

function describeFailure(failure: unknown): string {
  const text = failure instanceof Error ? `${failure.name}: ${failure.message}` : String(failure);
  // Keep rows small; the first few kilobytes say what went wrong.
  return text.length > 4_000 ? `${text.slice(0, 4_000)}…` : text;
}
