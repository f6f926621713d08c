import { sql } from "drizzle-orm";
import { bigserial, check, index, integer, jsonb, pgTable, text } from "drizzle-orm/pg-core";
import { createdAt, oneOf, timestampColumn, updatedAt } from "./columns.ts";

export const taskStatuses = ["pending", "running", "succeeded", "failed"] as const;
export type TaskStatus = (typeof taskStatuses)[number];

/**
 * The durable queue. A task is a row, inserted in the same transaction as the change that
 * causes it; `lockedBy`/`lockedUntil` are the lease a worker holds while it runs the task.
 */
export const tasks = pgTable(
  "tasks",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    type: text("type").notNull(),
    payload: jsonb("payload").notNull().default(sql`'{}'::jsonb`),
    status: text("status").$type<TaskStatus>().notNull().default("pending"),
    // Nulls are distinct in a unique constraint, so tasks without a key never collide.
    idempotencyKey: text("idempotency_key").unique("tasks_idempotency_key_unique"),
    /**
     * Tasks with the same serial key run one at a time, in the order they were enqueued (a
     * session's agent turns share its worktree). Null: no ordering with any other task.
     */
    serialKey: text("serial_key"),
    attempts: integer("attempts").notNull().default(0),
    maxAttempts: integer("max_attempts").notNull().default(5),
    runAt: timestampColumn("run_at").notNull().defaultNow(),
    lockedBy: text("locked_by"),
    lockedUntil: timestampColumn("locked_until"),
    lastError: text("last_error"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    completedAt: timestampColumn("completed_at"),
  },
  (table) => [
    check("tasks_status_check", oneOf(table.status, taskStatuses)),
    check("tasks_max_attempts_check", sql`${table.maxAttempts} >= 1`),
    check("tasks_attempts_check", sql`${table.attempts} >= 0`),
    check(
      "tasks_lease_check",
      sql`${table.status} <> 'running' or (${table.lockedBy} is not null and ${table.lockedUntil} is not null)`,
    ),
    // The claim query: due pending tasks in run_at order.
    index("tasks_claim_idx").on(table.runAt).where(sql`${table.status} = 'pending'`),
    // The lease sweep: running tasks whose lease has expired.
    index("tasks_lease_idx").on(table.lockedUntil).where(sql`${table.status} = 'running'`),
    index("tasks_status_run_at_idx").on(table.status, table.runAt),
    // The retention sweep: succeeded tasks completed before the cut-off.
    index("tasks_succeeded_completed_idx")
      .on(table.completedAt)
      .where(sql`${table.status} = 'succeeded'`),
    index("tasks_type_status_idx").on(table.type, table.status),
    // The claim's serial check: a key's unfinished tasks.
    index("tasks_serial_key_idx")
      .on(table.serialKey, table.id)
      .where(sql`${table.status} in ('pending', 'running')`),
  ],
);
