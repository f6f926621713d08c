// What keeps a batch deployment moving when executors die: jobs the queue gave up on end their
// workspace (or apply) as failed with the job's last error, so no run waits forever for an
// executor that is gone; and the checkouts a killed executor left in its work directory are
// removed once no attempt runs them. Every batch worker calls both (`startBatchWorker`); both are
// safe to run from many processes at once.
import { batchRuns, workspaces } from "@deckhand/db";
import type { BatchRunEvent } from "@deckhand/wire";
import { type AnyColumn, and, eq, inArray, type SQL, sql } from "drizzle-orm";
import { appendRunEvents } from "./batch-run-events.ts";
import { type CheckoutName, sweepCheckouts } from "./checkout-sweep.ts";
import { BATCH_APPLY_TASK, BATCH_WORKSPACE_TASK, type RunStore, rowRef } from "./run-store.ts";
import { StoredRunOptionsSchema as StoredOptions } from "./stored-run.ts";

/**
 * The queue tasks of `type` for one workspace or run (named by `key` in the payload) that are
 * still to run or running: while there is one, an executor will end the workspace or run.
 */
function liveTasks(type: string, key: string, id: AnyColumn) {
  return sql`select 1 from tasks t where t.type = ${type} and t.status in ('pending', 'running')
    and t.payload ->> ${key} = ${id}::text`;
}

/** A column of the newest queue task of `type` for one workspace or run. */
function lastTask(type: string, key: string, id: AnyColumn, column: SQL) {
  return sql`select ${column} from tasks t where t.type = ${type} and t.payload ->> ${key} = ${id}::text
    order by t.id desc limit 1`;
}

/**
 * Which of these checkouts stay: the ones whose workspace runs on that attempt, and the ones
 * whose run keeps logs once their workspace ended.
 */
export async function keptCheckouts(
  store: RunStore,
  checkouts: readonly CheckoutName[],
): Promise<ReadonlySet<string>> {
  if (checkouts.length === 0) return new Set();
  const rows = await store.database.db
    .select({
      id: workspaces.id,
      status: workspaces.status,
      attempts: workspaces.attempts,
      options: batchRuns.options,
    })
    .from(workspaces)
    .innerJoin(batchRuns, eq(batchRuns.id, workspaces.batchRunId))
    .where(
      inArray(
        workspaces.id,
        checkouts.map((checkout) => checkout.workspaceId),
      ),
    );
  const byId = new Map(rows.map((row) => [row.id, row]));
  const kept = new Set<string>();
  for (const checkout of checkouts) {
    const row = byId.get(checkout.workspaceId);
    const live = row?.status === "running" && row.attempts === checkout.attempt;
    const logs = row !== undefined && StoredOptions.parse(row.options).keep_logs === true;
    if (live || (logs && row.status !== "pending" && row.status !== "running")) {
      kept.add(checkout.name);
    }
  }
  return kept;
}

export interface RunRecoveryOptions {
  store: RunStore;
  /** This process's work directory, where workspace checkouts are made. */
  workDirectory: string;
}

export class RunRecovery {
  readonly #options: RunRecoveryOptions;

  constructor(options: RunRecoveryOptions) {
    this.#options = options;
  }

  get #db() {
    return this.#options.store.database.db;
  }

  /**
   * Removes the checkouts in this process's work directory that no attempt runs any more, with
   * their worktree registrations: what an executor killed mid-step left behind once its job was
   * taken over elsewhere or ended. A checkout stays while its workspace runs on that attempt
   * (another executor sharing the data directory, or a lease not expired yet) and when its run
   * keeps logs. Batch workers call this as they start (`startBatchWorker`).
   */
  async sweepCheckouts(): Promise<number> {
    return sweepCheckouts(this.#options.workDirectory, (checkouts) =>
      keptCheckouts(this.#options.store, checkouts),
    );
  }

  /**
   * Ends what the queue gave up on. A workspace job that failed for good without ending its
   * workspace (its executor died on every attempt, or its last attempt was interrupted) leaves
   * the workspace `pending` or `running` with no task left to run it: it is failed here with the
   * job's last error, and its run finishes when it was the last. Likewise a run whose apply job
   * failed for good fails. Every batch worker calls this now and then (`startBatchWorker`), so
   * no workspace waits forever for an executor that is gone; it is safe to call from many
   * processes at once.
   */
  async recoverAbandonedJobs(): Promise<{ workspaces: number; runs: number }> {
    return {
      workspaces: await this.#failAbandonedWorkspaces(),
      runs: await this.#failAbandonedApplies(),
    };
  }

  /** Fails the workspaces no task is left to run, with their jobs' last errors. */
  async #failAbandonedWorkspaces(): Promise<number> {
    // Only unfinished runs have unfinished workspaces: their index keeps this cheap.
    const abandoned = await this.#db
      .select({ id: workspaces.id, runId: workspaces.batchRunId })
      .from(workspaces)
      .innerJoin(batchRuns, eq(batchRuns.id, workspaces.batchRunId))
      .where(
        and(
          inArray(batchRuns.status, ["queued", "running"]),
          inArray(workspaces.status, ["pending", "running"]),
          sql`not exists (${liveTasks(BATCH_WORKSPACE_TASK, "workspace_id", workspaces.id)})`,
        ),
      );
    const byRun = new Map<string, string[]>();
    for (const row of abandoned) byRun.set(row.runId, [...(byRun.get(row.runId) ?? []), row.id]);
    let failedWorkspaces = 0;
    for (const [runId, ids] of byRun) {
      failedWorkspaces += await this.#db.transaction(async (transaction) => {
        // Checked again under the rows' locks: a retry or a cancel may have come in between.
        const locked = await transaction
          .select({
            row: workspaces,
            attempts: sql<
              number | null
            >`(${lastTask(BATCH_WORKSPACE_TASK, "workspace_id", workspaces.id, sql`t.attempts`)})`,
            lastError: sql<
              string | null
            >`(${lastTask(BATCH_WORKSPACE_TASK, "workspace_id", workspaces.id, sql`t.last_error`)})`,
          })
          .from(workspaces)
          .where(
            and(
              inArray(workspaces.id, ids),
              inArray(workspaces.status, ["pending", "running"]),
              sql`not exists (${liveTasks(BATCH_WORKSPACE_TASK, "workspace_id", workspaces.id)})`,
            ),
          )
          .for("update", { skipLocked: true });
        if (locked.length === 0) return 0;
        const events: BatchRunEvent[] = [];
        for (const { row, attempts, lastError } of locked) {
          const error = `the workspace's job was given up after ${attempts ?? row.attempts} attempt${(attempts ?? row.attempts) === 1 ? "" : "s"}: ${lastError ?? "no executor finished it"}; retry the workspace to run it again`;
          await transaction
            .update(workspaces)
            .set({ status: "failed", error, finishedAt: new Date(), updatedAt: new Date() })
            .where(eq(workspaces.id, row.id));
          events.push({
            type: "workspace_finished",
            workspace: rowRef(row),
            status: "failed",
            error,
          });
        }
        await appendRunEvents(transaction, runId, events);
        const [run] = await transaction
          .select({ options: batchRuns.options })
          .from(batchRuns)
          .where(eq(batchRuns.id, runId));
        if (run !== undefined) {
          await this.#options.store.finishRunIfDone(
            transaction,
            runId,
            StoredOptions.parse(run.options),
          );
        }
        return locked.length;
      });
    }
    return failedWorkspaces;
  }

  /** Fails the applying runs whose apply job the queue gave up on. */
  async #failAbandonedApplies(): Promise<number> {
    const stuck = await this.#db
      .select({ id: batchRuns.id })
      .from(batchRuns)
      .where(
        and(
          eq(batchRuns.status, "running"),
          eq(batchRuns.action, "apply"),
          sql`not exists (select 1 from ${workspaces} where ${workspaces.batchRunId} = ${batchRuns.id} and ${workspaces.status} in ('pending', 'running'))`,
          sql`not exists (${liveTasks(BATCH_APPLY_TASK, "batch_run_id", batchRuns.id)})`,
        ),
      );
    let failedRuns = 0;
    for (const { id } of stuck) {
      failedRuns += await this.#db.transaction(async (transaction) => {
        const [run] = await transaction
          .select({
            id: batchRuns.id,
            attempts: sql<
              number | null
            >`(${lastTask(BATCH_APPLY_TASK, "batch_run_id", batchRuns.id, sql`t.attempts`)})`,
            lastError: sql<
              string | null
            >`(${lastTask(BATCH_APPLY_TASK, "batch_run_id", batchRuns.id, sql`t.last_error`)})`,
          })
          .from(batchRuns)
          .where(
            and(
              eq(batchRuns.id, id),
              eq(batchRuns.status, "running"),
              eq(batchRuns.action, "apply"),
              sql`not exists (${liveTasks(BATCH_APPLY_TASK, "batch_run_id", batchRuns.id)})`,
            ),
          )
          .for("update", { skipLocked: true });
        if (run === undefined) return 0;
        const error = `applying the changesets was given up after ${run.attempts ?? 0} attempts: ${run.lastError ?? "no executor finished it"}; apply the run again`;
        await transaction
          .update(batchRuns)
          .set({ status: "failed", error, finishedAt: new Date() })
          .where(eq(batchRuns.id, id));
        await this.#options.store.appendFinished(transaction, id, "failed", error);
        return 1;
      });
    }
    return failedRuns;
  }
}
