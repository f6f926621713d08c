// The counts of batch runs (workspaces by state, changesets, steps run and answered from the
// cache): what the read model shows of each run and what a finished run's event sums up.
import {
  changesets,
  type Database,
  type Transaction,
  type WorkspaceStatus,
  workspaceSteps,
  workspaces,
} from "@deckhand/db";
import type { BatchRunStats, BatchRunSummary } from "@deckhand/wire";
import { eq, inArray, sql } from "drizzle-orm";

export function emptyStats(): BatchRunStats {
  return {
    workspaces: 0,
    pending: 0,
    running: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
    changesets: 0,
    steps_run: 0,
    steps_cached: 0,
  };
}

export function emptySummary(): BatchRunSummary {
  return { workspaces: 0, changesets: 0, steps_run: 0, steps_cached: 0, failed: 0 };
}

/**
 * The counts of each run (workspaces by state, changesets, steps run and cached): three grouped
 * queries for any number of runs, so listing runs costs the same for one run as for a hundred.
 */
export async function runStats(
  executor: Database | Transaction,
  runIds: readonly string[],
): Promise<Map<string, BatchRunStats>> {
  const stats = new Map<string, BatchRunStats>(runIds.map((id) => [id, emptyStats()]));
  if (runIds.length === 0) return stats;
  const ids = [...runIds];
  const [workspaceCounts, stepCounts, changesetCounts] = await Promise.all([
    executor
      .select({
        runId: workspaces.batchRunId,
        status: workspaces.status,
        count: sql<number>`count(*)::int`,
      })
      .from(workspaces)
      .where(inArray(workspaces.batchRunId, ids))
      .groupBy(workspaces.batchRunId, workspaces.status),
    executor
      .select({
        runId: workspaces.batchRunId,
        // A step that started and failed ran too; one that failed before it started did not.
        run: sql<number>`count(*) filter (where ${workspaceSteps.outcome} = 'run' or (${workspaceSteps.outcome} = 'failed' and ${workspaceSteps.startedAt} is not null))::int`,
        cached: sql<number>`count(*) filter (where ${workspaceSteps.outcome} = 'cached')::int`,
      })
      .from(workspaceSteps)
      .innerJoin(workspaces, eq(workspaces.id, workspaceSteps.workspaceId))
      .where(inArray(workspaces.batchRunId, ids))
      .groupBy(workspaces.batchRunId),
    executor
      .select({ runId: changesets.batchRunId, count: sql<number>`count(*)::int` })
      .from(changesets)
      .where(inArray(changesets.batchRunId, ids))
      .groupBy(changesets.batchRunId),
  ]);
  const bucket: Record<
    WorkspaceStatus,
    "pending" | "running" | "completed" | "failed" | "cancelled"
  > = {
    pending: "pending",
    running: "running",
    completed: "completed",
    skipped: "completed",
    failed: "failed",
    timed_out: "failed",
    cancelled: "cancelled",
  };
  for (const entry of workspaceCounts) {
    const run = stats.get(entry.runId);
    if (run === undefined) continue;
    const count = Number(entry.count);
    run.workspaces += count;
    run[bucket[entry.status]] += count;
  }
  for (const entry of stepCounts) {
    const run = stats.get(entry.runId);
    if (run === undefined) continue;
    run.steps_run = Number(entry.run);
    run.steps_cached = Number(entry.cached);
  }
  for (const entry of changesetCounts) {
    const run = stats.get(entry.runId ?? "");
    if (run !== undefined) run.changesets = Number(entry.count);
  }
  return stats;
}

/** The summary a finished run's event carries: its stats, failures counted with cancellations. */
export async function summaryOf(transaction: Transaction, runId: string): Promise<BatchRunSummary> {
  const stats = (await runStats(transaction, [runId])).get(runId) ?? emptyStats();
  return {
    workspaces: stats.workspaces,
    changesets: stats.changesets,
    steps_run: stats.steps_run,
    steps_cached: stats.steps_cached,
    failed: stats.failed + stats.cancelled,
  };
}
