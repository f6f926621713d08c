import { eq, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { tasks } from "../schema/tasks.ts";

/**
 * The NOTIFY channel that wakes workers when a task is enqueued or a serial key is released; the
 * payload is a task notice (`taskNotice`).
 */
export const TASK_CHANNEL = "deckhand_tasks";

/**
 * A notice's payload: the task type, and after a newline the worker whose settle statement sent
 * it (absent for an enqueue). That worker looks for work once its task is settled anyway, so it
 * skips its own notice instead of running a second claim cycle for it.
 */
export function taskNotice(type: string, fromWorker?: string): string {
  return fromWorker === undefined ? type : `${type}\n${fromWorker}`;
}

/** Reads a payload `taskNotice` wrote. */
export function readTaskNotice(payload: string): { type: string; fromWorker: string | null } {
  const newline = payload.indexOf("\n");
  if (newline < 0) return { type: payload, fromWorker: null };
  return { type: payload.slice(0, newline), fromWorker: payload.slice(newline + 1) };
}

export interface EnqueueOptions {
  type: string;
  payload?: unknown;
  /** A second enqueue with the same key returns the first task instead of adding another. */
  idempotencyKey?: string;
  /** Not before this time. Defaults to now. */
  runAt?: Date;
  /** Runs before the task fails for good. Defaults to 5. */
  maxAttempts?: number;
  /**
   * Tasks sharing a serial key run one at a time, in enqueue order, across every worker: a task
   * is claimed only once each earlier task with its key has succeeded or failed for good.
   */
  serialKey?: string;
}

export interface EnqueueResult {
  id: number;
  /** False when a task with the same idempotency key already existed. */
  created: boolean;
}

/**
 * Adds a task. Pass the transaction that makes the change causing the task, so both commit or
 * neither does; the NOTIFY is sent in that transaction too, which PostgreSQL delivers only
 * on commit, so a worker never wakes for a task it cannot see yet.
 */
export async function enqueue(executor: Executor, options: EnqueueOptions): Promise<EnqueueResult> {
  const insert = executor
    .insert(tasks)
    .values(taskRow(options))
    .onConflictDoNothing({ target: tasks.idempotencyKey })
    .returning({ id: tasks.id });
  // The insert and its NOTIFY (sent only for a new task) are one statement.
  const inserted = (await executor.execute(sql`
    with inserted as (${insert.getSQL()}),
    notified as materialized (
      select pg_notify(${TASK_CHANNEL}, ${taskNotice(options.type)}) from inserted
    )
    select inserted.id from inserted, notified
  `)) as unknown as { rows: { id: number | string }[] };
  const row = inserted.rows[0];
  if (row) return { id: Number(row.id), created: true };
  // Only an idempotency-key conflict skips the insert, so the key is present here.
  const existing = await executor
    .select({ id: tasks.id })
    .from(tasks)
    .where(eq(tasks.idempotencyKey, options.idempotencyKey ?? ""));
  return { id: Number(existing[0]!.id), created: false };
}

/**
 * Adds tasks in one statement, with one NOTIFY per task type (a run's workspaces), in the order
 * given: their ids ascend in that order, so tasks sharing a serial key run in it. Tasks whose
 * idempotency key exists already are not added again. Returns how many were added.
 */
export async function enqueueAll(
  executor: Executor,
  options: readonly EnqueueOptions[],
): Promise<number> {
  if (options.length === 0) return 0;
  const insert = executor
    .insert(tasks)
    .values(options.map(taskRow))
    .onConflictDoNothing({ target: tasks.idempotencyKey })
    .returning({ type: tasks.type });
  // As in `enqueue`: the insert and its notices are one statement, delivered on commit. An
  // enqueue's notice is its bare type (`taskNotice(type)`).
  const result = (await executor.execute(sql`
    with inserted as (${insert.getSQL()}),
    notified as materialized (
      select pg_notify(${TASK_CHANNEL}, type) from (select distinct type from inserted) types
    )
    select (select count(*) from inserted)::int as added, (select count(*) from notified) as sent
  `)) as unknown as { rows: { added: number | string }[] };
  return Number(result.rows[0]?.added ?? 0);
}

/** A task's row as both enqueues insert it. */
function taskRow(options: EnqueueOptions) {
  return {
    type: options.type,
    payload: options.payload ?? {},
    idempotencyKey: options.idempotencyKey,
    runAt: options.runAt,
    maxAttempts: options.maxAttempts,
    serialKey: options.serialKey,
  };
}
