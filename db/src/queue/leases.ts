// The queue's lease statements: claiming due tasks for a worker, renewing, settling and releasing
// its leases, and failing tasks whose last attempt lost its lease. A TaskWorker runs them for the
// handlers of its process; the server's executor API runs them for executors that reach the queue
// over HTTP and hold no database connection. Every settle statement is fenced by worker and
// attempt: once a lease expired and another worker claimed the task, a late result changes nothing.
import type { DbHandle } from "../client.ts";
import { TASK_CHANNEL, taskNotice } from "./enqueue.ts";

/** A task as a claim hands it out. */
export interface ClaimedTask {
  id: number;
  type: string;
  payload: unknown;
  /** This claim's attempt: 1 on the first run. */
  attempts: number;
  maxAttempts: number;
  serialKey: string | null;
}

/** Which attempt of which worker holds a task: what its settle statements are fenced by. */
export interface TaskLease {
  id: number;
  workerId: string;
  attempt: number;
}

interface ClaimedRow {
  id: string | number;
  type: string;
  payload: unknown;
  attempts: number;
  max_attempts: number;
  serial_key: string | null;
}

const CANDIDATES = `
       select id from tasks
       where type = any($1::text[])
         and ((status = 'pending' and run_at <= now())
           or (status = 'running' and locked_until < now() and attempts < max_attempts))
         and id <> all($5::bigint[])
         -- A serial key's tasks run one at a time, oldest first: no earlier one may be
         -- waiting or running. Seen by another claim before it commits, an earlier task is
         -- still pending, so two tasks of one key are never claimed at once.
         and (serial_key is null or not exists (
           select 1 from tasks earlier
           where earlier.serial_key = tasks.serial_key and earlier.id <> tasks.id
             and earlier.status in ('pending', 'running')
             and (earlier.status = 'running' or earlier.id < tasks.id)))
       order by run_at, id
       limit $2
       for update skip locked`;

const CLAIM = `
     update tasks set status = 'running', locked_by = $3,
       locked_until = now() + $4 * interval '1 millisecond',
       attempts = tasks.attempts + 1, updated_at = now()
     from candidates where tasks.id = candidates.id`;

/** Fails a task whose last allowed attempt lost its lease; `$2` are the ids left alone. */
const FAIL_EXHAUSTED = `
    update tasks set status = 'failed', locked_by = null, locked_until = null,
       completed_at = now(), updated_at = now(),
       last_error = 'lease expired on the last attempt (worker ' || locked_by || ' stopped heartbeating)'
     where status = 'running' and locked_until < now() and attempts >= max_attempts
       and type = any($1::text[]) and id <> all($2::bigint[])`;

function claimedTask(row: ClaimedRow): ClaimedTask {
  return {
    id: Number(row.id),
    type: row.type,
    payload: row.payload,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    serialKey: row.serial_key,
  };
}

/**
 * Claims up to `limit` due tasks of `types` for `workerId`, for `leaseMs`: pending ones whose time
 * has come, and running ones whose lease expired with attempts left (their worker died). Tasks in
 * `exclude` are skipped (ones the worker still runs).
 */
export async function claimTasks(
  database: DbHandle,
  options: {
    types: readonly string[];
    limit: number;
    workerId: string;
    leaseMs: number;
    exclude?: readonly number[];
  },
): Promise<ClaimedTask[]> {
  const claimed = await database.query<ClaimedRow>(
    `with candidates as (${CANDIDATES})
     ${CLAIM}
     returning tasks.id, tasks.type, tasks.payload, tasks.attempts, tasks.max_attempts,
       tasks.serial_key`,
    [options.types, options.limit, options.workerId, options.leaseMs, options.exclude ?? []],
  );
  return claimed.rows.map(claimedTask);
}

/** What a worker's claim cycle found. */
export interface ClaimCycle {
  claimed: ClaimedTask[];
  /** How long until the next delayed task of `types` is due; null when none is waiting. */
  dueInMs: number | null;
  /** Whether a task was failed because its last attempt lost its lease (its key is free now). */
  failedExhausted: boolean;
}

/**
 * A worker's claim cycle in one statement: fails the tasks whose last attempt lost its lease
 * (`failExhaustedLeases`, tasks in `exclude` left alone), claims due tasks (`claimTasks`) and
 * reads when the next delayed task is due. All three see the database as it was before the
 * statement: a serial key freed by a task failed here is seen by the next cycle.
 */
export async function claimCycle(
  database: DbHandle,
  options: Parameters<typeof claimTasks>[1],
): Promise<ClaimCycle> {
  const result = await database.query<{
    claimed: ClaimedRow[] | string;
    due_in_ms: number | string | null;
    failed_exhausted: boolean;
  }>(
    `with exhausted as (${FAIL_EXHAUSTED.replaceAll("$2::bigint[]", "$5::bigint[]")} returning id),
     candidates as (${CANDIDATES}),
     claimed as (${CLAIM}
       returning tasks.id, tasks.type, tasks.payload, tasks.attempts, tasks.max_attempts,
         tasks.serial_key)
     select
       (select coalesce(json_agg(claimed), '[]'::json) from claimed) as claimed,
       (select extract(epoch from (min(run_at) - now())) * 1000 from tasks
        where status = 'pending' and run_at > now() and type = any($1::text[])) as due_in_ms,
       exists (select 1 from exhausted) as failed_exhausted`,
    [options.types, options.limit, options.workerId, options.leaseMs, options.exclude ?? []],
  );
  const row = result.rows[0]!;
  const claimed = typeof row.claimed === "string" ? JSON.parse(row.claimed) : row.claimed;
  return {
    claimed: (claimed as ClaimedRow[]).map(claimedTask),
    dueInMs: row.due_in_ms === null ? null : Number(row.due_in_ms),
    failedExhausted: row.failed_exhausted,
  };
}

/** Renews the leases of `workerId` on `ids`; answers the ids it still holds. */
export async function renewLeases(
  database: DbHandle,
  ids: readonly number[],
  workerId: string,
  leaseMs: number,
): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const renewed = await database.query<{ id: string | number }>(
    `update tasks set locked_until = now() + $3 * interval '1 millisecond'
     where id = any($1::bigint[]) and locked_by = $2 and status = 'running'
     returning id`,
    [ids, workerId, leaseMs],
  );
  return new Set(renewed.rows.map((row) => Number(row.id)));
}

/**
 * Runs a settle statement (an update fenced by the lease, `returning id`) and answers whether it
 * matched. A task with a serial key lets the key's next task be claimed: the same statement then
 * wakes every worker, not only this one, so a worker elsewhere does not wait for its poll. The
 * notice names the settling worker, which skips it: it looks for work after settling anyway.
 */
async function settle(
  database: DbHandle,
  update: string,
  parameters: unknown[],
  lease: TaskLease,
  task: { type: string; serialKey: string | null },
): Promise<boolean> {
  if (task.serialKey === null) {
    const settled = await database.query(update, parameters);
    return settled.rows.length > 0;
  }
  const notice = parameters.length + 1;
  const settled = await database.query<{ id: string | number | null }>(
    `with settled as (${update})
     select (select id from settled) as id, pg_notify($${notice}, $${notice + 1})`,
    [...parameters, TASK_CHANNEL, taskNotice(task.type, lease.workerId)],
  );
  return settled.rows[0]?.id !== null && settled.rows[0]?.id !== undefined;
}

/** Marks a held task succeeded; false when the lease was no longer held. */
export async function completeTask(
  database: DbHandle,
  lease: TaskLease,
  task: { type: string; serialKey: string | null },
): Promise<boolean> {
  return await settle(
    database,
    `update tasks set status = 'succeeded', locked_by = null, locked_until = null,
       last_error = null, completed_at = now(), updated_at = now()
     where id = $1 and locked_by = $2 and attempts = $3 and status = 'running'
     returning id`,
    [lease.id, lease.workerId, lease.attempt],
    lease,
    task,
  );
}

/**
 * Settles a held task's failed attempt: `retryInMs` queues it again after that delay (keeping
 * `reason` as its last error); null fails it for good. False when the lease was no longer held.
 */
export async function failTask(
  database: DbHandle,
  lease: TaskLease,
  task: { type: string; serialKey: string | null },
  reason: string,
  retryInMs: number | null,
): Promise<boolean> {
  if (retryInMs === null) {
    return await settle(
      database,
      `update tasks set status = 'failed', locked_by = null, locked_until = null,
         last_error = $4, completed_at = now(), updated_at = now()
       where id = $1 and locked_by = $2 and attempts = $3 and status = 'running'
       returning id`,
      [lease.id, lease.workerId, lease.attempt, reason],
      lease,
      task,
    );
  }
  const retried = await database.query(
    `update tasks set status = 'pending', locked_by = null, locked_until = null,
       last_error = $4, run_at = now() + $5 * interval '1 millisecond', updated_at = now()
     where id = $1 and locked_by = $2 and attempts = $3 and status = 'running'
     returning id`,
    [lease.id, lease.workerId, lease.attempt, reason, retryInMs],
  );
  return retried.rows.length > 0;
}

/**
 * Gives tasks of `workerId` back to the queue at once without spending an attempt (the worker
 * stops before they finished): another worker claims them right away.
 */
export async function releaseTasks(
  database: DbHandle,
  ids: readonly number[],
  workerId: string,
): Promise<void> {
  if (ids.length === 0) return;
  await database.query(
    `update tasks set status = 'pending', run_at = now(), locked_by = null,
       locked_until = null, attempts = greatest(attempts - 1, 0), updated_at = now()
     where id = any($1::bigint[]) and locked_by = $2 and status = 'running'`,
    [ids, workerId],
  );
}

/**
 * A task whose last allowed attempt lost its lease fails instead of running again. Tasks in
 * `exclude` are left alone: their handler is alive, only the heartbeat lagged.
 */
export async function failExhaustedLeases(
  database: DbHandle,
  types: readonly string[],
  exclude: readonly number[] = [],
): Promise<void> {
  await database.query(FAIL_EXHAUSTED, [types, exclude]);
}

/** The delay before retry `attempt + 1`: exponential backoff with jitter. */
export function retryDelayMs(
  attempt: number,
  options: { baseMs: number; maxMs: number; jitter: number },
): number {
  const backoffMs = Math.min(options.maxMs, options.baseMs * 2 ** (attempt - 1));
  return Math.round(backoffMs * (1 + Math.random() * options.jitter));
}
