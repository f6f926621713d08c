import { eq, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { tasks } from "../schema/tasks.ts";

/** The NOTIFY channel that wakes workers when a task is enqueued; the payload is the task type. */
export const TASK_CHANNEL = "deckhand_tasks";

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
  const inserted = await executor
    .insert(tasks)
    .values({
      type: options.type,
      payload: options.payload ?? {},
      idempotencyKey: options.idempotencyKey,
      runAt: options.runAt,
      maxAttempts: options.maxAttempts,
      serialKey: options.serialKey,
    })
    .onConflictDoNothing({ target: tasks.idempotencyKey })
    .returning({ id: tasks.id });
  const row = inserted[0];
  if (row) {
    await executor.execute(sql`select pg_notify(${TASK_CHANNEL}, ${options.type})`);
    return { id: Number(row.id), created: true };
  }
  // Only an idempotency-key conflict skips the insert, so the key is present here.
  const existing = await executor
    .select({ id: tasks.id })
    .from(tasks)
    .where(eq(tasks.idempotencyKey, options.idempotencyKey ?? ""));
  return { id: Number(existing[0]!.id), created: false };
}
