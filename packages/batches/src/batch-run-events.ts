// A batch run's progress log: every event of every workspace, stored in `batch_run_events` in
// the order it happened, so the CLI and WebSocket clients of any server replica replay and follow
// a run from any event id, and an executor on another machine reports through the database.
import {
  batchRunEvents,
  type DbHandle,
  EventFeedHub,
  type Executor,
  GroupCommitWriter,
  type Transaction,
  workspaceSteps,
} from "@deckhand/db";
import { redactValue } from "@deckhand/secrets";
import type { BatchRunEvent, StoredBatchRunEvent } from "@deckhand/wire";
import { and, asc, eq, gt, sql } from "drizzle-orm";

/** NOTIFY channel announcing new events of a run; the payload is the run id. */
export const BATCH_RUN_EVENTS_CHANNEL = "deckhand_batch_run_events";

type EventRow = typeof batchRunEvents.$inferSelect;

function toStoredEvent(row: EventRow): StoredBatchRunEvent {
  return {
    id: row.id,
    batch_run_id: row.batchRunId,
    created_at: row.createdAt.toISOString(),
    // Written only by appendRunEvents from typed events.
    event: row.payload as BatchRunEvent,
  };
}

/**
 * Appends events to one run's log in one statement, in order, inside the caller's transaction.
 * A per-run advisory lock makes appends to one run commit in id order, so a reader that has seen
 * id N never later finds a smaller id committed behind it.
 */
export async function appendRunEvents(
  transaction: Transaction,
  runId: string,
  events: readonly BatchRunEvent[],
): Promise<void> {
  if (events.length === 0) return;
  await transaction.execute(sql`select pg_advisory_xact_lock(hashtextextended(${runId}, 1))`);
  await transaction.insert(batchRunEvents).values(
    events.map((event) => ({
      batchRunId: runId,
      type: event.type,
      // Step output is redacted where it is produced; this is the backstop for everything else.
      payload: redactValue(event),
    })),
  );
  await transaction.execute(sql`select pg_notify(${BATCH_RUN_EVENTS_CHANNEL}, ${runId})`);
}

/** Events of a run after `afterId`, oldest first. */
export async function readRunEvents(
  executor: Executor,
  runId: string,
  afterId: number,
  limit = 1_000,
): Promise<StoredBatchRunEvent[]> {
  const rows = await executor
    .select()
    .from(batchRunEvents)
    .where(and(eq(batchRunEvents.batchRunId, runId), gt(batchRunEvents.id, afterId)))
    .orderBy(asc(batchRunEvents.id))
    .limit(limit);
  return rows.map(toStoredEvent);
}

/** Fans a run's stored events out to stream subscribers, on every server replica. */
export function createRunEventHub(
  handle: DbHandle,
  options: { pollIntervalMs?: number } = {},
): EventFeedHub<StoredBatchRunEvent> {
  return new EventFeedHub(handle, {
    channel: BATCH_RUN_EVENTS_CHANNEL,
    read: readRunEvents,
    ...options,
  });
}

/**
 * A run's events from one workspace job, written with group commit (step output is chatty). A
 * step's start and end also update its row in `workspace_steps`, in the same transaction as the
 * events that tell of them, so the timeline and the log never disagree.
 */
export function runEventWriter(
  handle: DbHandle,
  runId: string,
  workspaceId: string,
): GroupCommitWriter<BatchRunEvent> {
  return new GroupCommitWriter(handle.db, async (transaction, batch) => {
    await appendRunEvents(transaction, runId, batch);
    await writeEventStepRows(transaction, workspaceId, batch);
  });
}

/**
 * The step rows the events tell of: a `step_started` makes its step's row running, a
 * `step_finished` records its outcome. Steps in `written` are left alone: the caller writes
 * their whole rows in the same transaction (a workspace's end does).
 */
export async function writeEventStepRows(
  transaction: Transaction,
  workspaceId: string,
  events: readonly BatchRunEvent[],
  written: ReadonlySet<number> = new Set(),
): Promise<void> {
  for (const event of events) {
    if (event.type === "step_started") {
      const values = {
        outcome: "running" as const,
        runtime: event.runtime,
        image: event.image,
        sandbox: event.sandbox ?? null,
        shell: event.shell ?? null,
        command: event.command ?? null,
        env: event.env ?? null,
        startedAt: new Date(),
      };
      await transaction
        .insert(workspaceSteps)
        .values({ workspaceId, stepIndex: event.step_index, ...values })
        .onConflictDoUpdate({
          target: [workspaceSteps.workspaceId, workspaceSteps.stepIndex],
          set: values,
        });
    } else if (event.type === "step_finished" && !written.has(event.step_index)) {
      const values = {
        outcome: event.outcome,
        exitCode: event.exit_code,
        durationMs: Math.round(event.duration_ms),
        finishedAt: new Date(),
      };
      await transaction
        .insert(workspaceSteps)
        .values({ workspaceId, stepIndex: event.step_index, ...values })
        .onConflictDoUpdate({
          target: [workspaceSteps.workspaceId, workspaceSteps.stepIndex],
          set: values,
        });
    }
  }
}
