// The state of batch runs in the database, and the changes of it the jobs and the public API make:
// a run stored with its workspaces and their queue tasks at once; a workspace claimed by one
// attempt of one executor, whose writes are fenced by that claim; a workspace's end written
// once, with its step rows, changesets and events, and the run's end when it was the last;
// cancels, retries and applies. What the API reads back is the read model's
// (run-read-model.ts); what recovery and the apply job query for themselves is theirs.
import { randomUUID } from "node:crypto";
import { resolve } from "node:path";
import type { BatchSpec } from "@deckhand/batch-spec";
import {
  batchRuns,
  batchSpecs,
  changesets,
  type DbHandle,
  type EnqueueOptions,
  enqueue,
  enqueueAll,
  type Transaction,
  type WorkspaceStatus,
  workspaceSteps,
  workspaces,
} from "@deckhand/db";
import type {
  BatchChangeset,
  BatchRunErrorCode,
  BatchRunEvent,
  BatchRunOptions,
  BatchRunStatus,
  BatchWorkspaceStatus,
  CreateBatchRunRequest,
} from "@deckhand/wire";
import { UsageJobId } from "@deckhand/wire";
import { and, eq, inArray, sql } from "drizzle-orm";
import { z } from "zod";
import { appendRunEvents, runEventWriter, writeEventStepRows } from "./batch-run-events.ts";
import { BatchesError } from "./batches-error.ts";
import type { Workspace } from "./resolve-workspaces.ts";
import { emptySummary, summaryOf } from "./run-stats.ts";
import { type StoredTakeover, storeWorkspaceDefinition } from "./stored-run.ts";
import type { JobProgress, JobWorkspaceRow, WorkspaceJobStore } from "./workspace-job-store.ts";
import type { StepRecord } from "./workspace-run-report.ts";
import { continuationKey } from "./workspace-takeover.ts";

/** The queue task type of one workspace job. */
export const BATCH_WORKSPACE_TASK = "batch_workspace";
/** The payload of a workspace job's queue task. */
export const WorkspaceTaskPayloadSchema = z.object({ workspace_id: z.uuid() });

/** The queue task type that writes a finished run's changesets as branches. */
export const BATCH_APPLY_TASK = "batch_apply";

/** A workspace job is retried this often after its executor died or its lease was lost. */
const WORKSPACE_TASK_ATTEMPTS = 5;

/** The states a workspace ends in: a job delivered again for one has nothing to do. */
export const TERMINAL_WORKSPACE_STATES: readonly WorkspaceStatus[] = [
  "completed",
  "failed",
  "timed_out",
  "skipped",
  "cancelled",
];

export type RunRow = typeof batchRuns.$inferSelect;
export type WorkspaceRow = typeof workspaces.$inferSelect;
export type SpecRow = typeof batchSpecs.$inferSelect;

/** The job id a workspace's model usage is recorded under. */
export function workspaceJobId(workspaceId: string): string {
  return UsageJobId.batchWorkspace(workspaceId);
}

/** How events name a stored workspace. */
export function rowRef(row: Pick<WorkspaceRow, "repository" | "branch" | "path" | "revision">) {
  return { repository: row.repository, branch: row.branch, path: row.path, revision: row.revision };
}

/**
 * Run and workspace ids are UUIDs: anything else names none, and is `not_found` here rather than
 * a database error for whoever asked (a route, a stream, an executor).
 */
export function knownId(id: string, what: string): string {
  if (!z.uuid().safeParse(id).success) throw notFound(what, id);
  return id;
}

export function notFound(what: string, id: string): BatchesError {
  return new BatchesError("not_found", `no ${what} with id ${JSON.stringify(id)}`);
}

/** Which attempt of which executor runs a workspace: what its writes are fenced by. */
export interface WorkspaceClaim {
  executor: string;
  attempt: number;
}

/** The workspace, while it is running under this claim. */
function claimedBy(workspaceId: string, claim: WorkspaceClaim) {
  return and(
    eq(workspaces.id, workspaceId),
    eq(workspaces.status, "running"),
    eq(workspaces.executor, claim.executor),
    eq(workspaces.attempts, claim.attempt),
  );
}

/** How a workspace's job ended, as `finishWorkspace` writes it. */
export interface WorkspaceEnd {
  status: BatchWorkspaceStatus;
  error: string | null;
  diff: string | null;
  steps: readonly StepRecord[];
  changesets: readonly BatchChangeset[];
  /** Told after `workspace_finished` (the changesets' events). */
  events: readonly BatchRunEvent[];
  /**
   * The job's progress not written yet (its last step's end, say), told before
   * `workspace_finished` in the same transaction.
   */
  progress?: readonly BatchRunEvent[];
}

/** A run to store: its spec as requested, and the workspaces it resolved to. */
export interface NewRun {
  request: CreateBatchRunRequest;
  spec: BatchSpec;
  options: BatchRunOptions;
  warnings: readonly string[];
  workspaces: readonly Workspace[];
  /** The sessions workspaces continue, by `continuationKey`. */
  takeovers: ReadonlyMap<string, StoredTakeover>;
  /**
   * An apply that produces nothing still runs its apply job when publishing is set up: it
   * closes the pull requests of the batch change the spec no longer produces.
   */
  applyEmpty: boolean;
  /**
   * Per workspace (by position), its end when it is complete already (its last step's result is
   * cached: cached-workspace-ends.ts), written as its job would write it; null when its job runs.
   */
  ends?: readonly (WorkspaceEnd | null)[];
}

export type { StoredJob } from "./workspace-job-store.ts";

function requeued() {
  return {
    status: "pending" as const,
    error: null,
    diff: null,
    finishedAt: null,
    updatedAt: new Date(),
  };
}

/** The columns a workspace's end writes of each step, taken from the row the insert proposed. */
const finishedStepColumns = Object.fromEntries(
  (
    [
      "outcome",
      "runtime",
      "shell",
      "exitCode",
      "durationMs",
      "cacheKey",
      "stdout",
      "stderr",
      "finishedAt",
    ] as const
  ).map((field) => [field, sql.raw(`excluded.${workspaceSteps[field].name}`)]),
);

/**
 * Workspaces' step rows as their ends have them, in one statement whatever their number.
 */
async function writeSteps(
  transaction: Transaction,
  ends: readonly { workspaceId: string; steps: readonly StepRecord[] }[],
): Promise<void> {
  // One row per step: a step recorded twice keeps its last record, as writing them in turn did.
  const rows = ends.flatMap(({ workspaceId, steps }) =>
    [...new Map(steps.map((step) => [step.stepIndex, step])).values()].map((step) => ({
      workspaceId,
      step,
    })),
  );
  if (rows.length === 0) return;
  const finishedAt = new Date();
  await transaction
    .insert(workspaceSteps)
    .values(
      rows.map(({ workspaceId, step }) => ({
        workspaceId,
        stepIndex: step.stepIndex,
        outcome: step.outcome,
        runtime: step.runtime,
        shell: step.shell,
        exitCode: step.exitCode,
        durationMs: Math.round(step.durationMs),
        cacheKey: step.cacheKey,
        stdout: step.stdout,
        stderr: step.stderr,
        finishedAt,
      })),
    )
    .onConflictDoUpdate({
      target: [workspaceSteps.workspaceId, workspaceSteps.stepIndex],
      set: finishedStepColumns,
    });
}

/** Workspaces' changesets, in one statement whatever their number. */
async function writeChangesets(
  transaction: Transaction,
  runId: string,
  built: readonly { workspaceId: string; changesets: readonly BatchChangeset[] }[],
): Promise<void> {
  const rows = built.flatMap(({ workspaceId, changesets }) =>
    changesets.map((changeset) => ({ workspaceId, changeset })),
  );
  if (rows.length === 0) return;
  await transaction.insert(changesets).values(
    rows.map(({ workspaceId, changeset }) => ({
      batchRunId: runId,
      workspaceId,
      repository: changeset.repository,
      baseBranch: changeset.base_branch,
      baseRevision: changeset.base_revision,
      path: changeset.path,
      branch: changeset.branch,
      title: changeset.title,
      body: changeset.body,
      commitMessage: changeset.commit_message,
      commitAuthor: changeset.commit_author,
      published: changeset.published,
      diff: changeset.diff,
      stats: changeset.stats,
    })),
  );
}

/** A workspace row's columns when it is complete at its run's creation (no attempt ran it). */
function completedAtCreation(end: WorkspaceEnd | null) {
  if (end === null) return {};
  return {
    status: end.status,
    error: end.error,
    diff: end.diff,
    startedAt: sql`now()`,
    finishedAt: sql`now()`,
  };
}

/**
 * What the jobs of workspaces complete at the run's creation would have written, in one
 * statement each for all of them: their events (each workspace's in the order its job tells
 * them), step rows and changesets.
 */
async function writeCompleted(
  transaction: Transaction,
  runId: string,
  rows: readonly (JobWorkspaceRowRef & { id: string; position: number })[],
  ends: readonly (WorkspaceEnd | null)[],
): Promise<void> {
  const completed = rows.flatMap((row) => {
    const end = ends[row.position] ?? null;
    return end === null ? [] : [{ row, end }];
  });
  if (completed.length === 0) return;
  await appendRunEvents(
    transaction,
    runId,
    completed.flatMap(({ row, end }) => [
      ...(end.progress ?? []),
      { type: "workspace_finished", workspace: rowRef(row), status: end.status, error: end.error },
      ...end.events,
    ]),
  );
  await writeSteps(
    transaction,
    completed.map(({ row, end }) => ({ workspaceId: row.id, steps: end.steps })),
  );
  await writeChangesets(
    transaction,
    runId,
    completed.map(({ row, end }) => ({ workspaceId: row.id, changesets: end.changesets })),
  );
}

type JobWorkspaceRowRef = Parameters<typeof rowRef>[0];

/** The queue task of one attempt at a workspace. */
function workspaceTask(
  runId: string,
  workspaceId: string,
  position: number,
  options: BatchRunOptions,
): EnqueueOptions {
  return {
    type: BATCH_WORKSPACE_TASK,
    payload: { workspace_id: workspaceId },
    idempotencyKey: `batch-workspace:${workspaceId}:${randomUUID()}`,
    maxAttempts: WORKSPACE_TASK_ATTEMPTS,
    // A run's parallelism, across every executor: its workspaces form that many lanes, and
    // the queue runs one task of a lane at a time.
    ...(options.parallelism !== undefined
      ? { serialKey: `batch-run:${runId}:${position % options.parallelism}` }
      : {}),
  };
}

export class RunStore implements WorkspaceJobStore {
  readonly database: DbHandle;

  constructor(database: DbHandle) {
    this.database = database;
  }

  get #db() {
    return this.database.db;
  }

  async workspaceRow(workspaceId: string): Promise<WorkspaceRow> {
    knownId(workspaceId, "workspace");
    const [row] = await this.#db.select().from(workspaces).where(eq(workspaces.id, workspaceId));
    if (row === undefined) throw notFound("workspace", workspaceId);
    return row;
  }

  /**
   * A workspace's job: its row, run and spec; null when the workspace is gone or ended (by an
   * earlier delivery of the same task: jobs run at least once).
   */
  async job(
    workspaceId: string,
  ): Promise<{ row: WorkspaceRow; run: RunRow; spec: SpecRow } | null> {
    const [found] = await this.#db
      .select({ row: workspaces, run: batchRuns, spec: batchSpecs })
      .from(workspaces)
      .innerJoin(batchRuns, eq(batchRuns.id, workspaces.batchRunId))
      .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
      .where(eq(workspaces.id, workspaceId));
    if (found === undefined || TERMINAL_WORKSPACE_STATES.includes(found.row.status)) return null;
    return found;
  }

  /**
   * Stores the spec, the run and its workspaces and queues one job each, all in one transaction:
   * a run is either queued whole or not at all. Answers the run's id.
   */
  async createRun(run: NewRun): Promise<string> {
    const ends = run.workspaces.map((_, position) => run.ends?.[position] ?? null);
    // A run with a workspace complete already has started, as its first job would have said.
    const started = ends.some((end) => end !== null);
    return this.#db.transaction(async (transaction) => {
      const [specRow] = await transaction
        .insert(batchSpecs)
        .values({
          name: run.spec.name,
          source: run.request.source,
          spec: run.spec,
          specDirectory:
            run.request.spec_directory === undefined ? null : resolve(run.request.spec_directory),
          file: run.request.file ?? null,
        })
        .returning({ id: batchSpecs.id });
      const [runRow] = await transaction
        .insert(batchRuns)
        .values({
          batchSpecId: specRow!.id,
          action: run.request.action ?? "preview",
          options: run.options,
          warnings: run.warnings,
          // An apply that produces nothing still runs its apply job when publishing is set
          // up: it closes the pull requests of the batch change the spec no longer produces.
          status:
            run.workspaces.length === 0
              ? run.applyEmpty
                ? "running"
                : "completed"
              : started
                ? "running"
                : "queued",
          startedAt: started ? sql`now()` : null,
          finishedAt: run.workspaces.length === 0 && !run.applyEmpty ? new Date() : null,
        })
        .returning({ id: batchRuns.id });
      const runId = runRow!.id;
      await appendRunEvents(transaction, runId, [
        { type: "run_started", workspaces: run.workspaces.length },
      ]);
      if (run.workspaces.length === 0 && run.applyEmpty) {
        await this.enqueueApply(transaction, runId);
        return runId;
      }
      if (run.workspaces.length === 0) {
        await appendRunEvents(transaction, runId, [
          { type: "run_finished", status: "completed", error: null, summary: emptySummary() },
        ]);
        return runId;
      }
      const rows = await transaction
        .insert(workspaces)
        .values(
          run.workspaces.map((workspace, position) => ({
            batchRunId: runId,
            position,
            repository: workspace.repository.name,
            branch: workspace.branch,
            revision: workspace.revision,
            path: workspace.path,
            definition: storeWorkspaceDefinition(
              workspace,
              run.takeovers.get(continuationKey(workspace)),
            ),
            takeoverSessionId: run.takeovers.get(continuationKey(workspace))?.session_id ?? null,
            ...completedAtCreation(ends[position]!),
          })),
        )
        .returning({
          id: workspaces.id,
          position: workspaces.position,
          repository: workspaces.repository,
          branch: workspaces.branch,
          path: workspaces.path,
          revision: workspaces.revision,
        });
      await writeCompleted(transaction, runId, rows, ends);
      const queued = rows.filter((row) => ends[row.position] === null);
      // One statement for the run's tasks, not two per workspace.
      await enqueueAll(
        transaction,
        queued.map((row) => workspaceTask(runId, row.id, row.position, run.options)),
      );
      if (queued.length === 0) await this.finishRunIfDone(transaction, runId, run.options);
      return runId;
    });
  }

  async enqueueWorkspace(
    transaction: Transaction,
    runId: string,
    workspaceId: string,
    position: number,
    options: BatchRunOptions,
  ): Promise<void> {
    await enqueue(transaction, workspaceTask(runId, workspaceId, position, options));
  }

  async enqueueApply(transaction: Transaction, runId: string): Promise<void> {
    await enqueue(transaction, {
      type: BATCH_APPLY_TASK,
      payload: { batch_run_id: runId },
      idempotencyKey: `batch-apply:${runId}:${randomUUID()}`,
      maxAttempts: WORKSPACE_TASK_ATTEMPTS,
    });
  }

  /**
   * Claims a pending or running workspace for one attempt of `executor`. Claiming a `running`
   * row is how a job is taken over from an executor that died (its lease expired and the queue
   * delivered the task again). The claim is this executor and the workspace's attempt count after
   * it: whatever this attempt writes is fenced by both, so an earlier attempt that is still alive
   * somewhere (its lease lapsed, say) changes nothing. Null when the workspace ended meanwhile.
   */
  async claim(row: JobWorkspaceRow, executor: string): Promise<WorkspaceClaim | null> {
    const [claimed] = await this.#db
      .update(workspaces)
      .set({
        status: "running",
        attempts: sql`${workspaces.attempts} + 1`,
        executor,
        startedAt: sql`coalesce(${workspaces.startedAt}, now())`,
        updatedAt: new Date(),
      })
      .where(and(eq(workspaces.id, row.id), inArray(workspaces.status, ["pending", "running"])))
      .returning({ attempts: workspaces.attempts });
    if (claimed === undefined) return null;
    return { executor, attempt: claimed.attempts };
  }

  /**
   * Starts a claimed workspace's steps: its run is running from now on, and a previous attempt's
   * step rows, which describe a run that did not finish, make way for this attempt's.
   */
  async start(row: JobWorkspaceRow): Promise<void> {
    // One statement for both: every workspace job sends it.
    await this.#db.execute(sql`
      with started as (
        update batch_runs set status = 'running', started_at = coalesce(started_at, now())
        where id = ${row.batchRunId} and status = 'queued'
      )
      delete from workspace_steps where workspace_id = ${row.id}`);
  }

  /**
   * Whether the claim still holds (no other attempt took the workspace over) and the workspace
   * still runs (no one cancelled it).
   */
  async claimState(
    workspaceId: string,
    claim: WorkspaceClaim,
  ): Promise<{ holds: boolean; running: boolean }> {
    const [current] = await this.#db
      .select({
        status: workspaces.status,
        executor: workspaces.executor,
        attempts: workspaces.attempts,
      })
      .from(workspaces)
      .where(eq(workspaces.id, workspaceId));
    return {
      holds:
        current !== undefined &&
        current.executor === claim.executor &&
        current.attempts === claim.attempt,
      running: current?.status === "running",
    };
  }

  /** Gives an interrupted attempt's workspace back: nobody runs it until its task comes again. */
  async release(workspaceId: string, claim: WorkspaceClaim): Promise<void> {
    await this.#db
      .update(workspaces)
      .set({ status: "pending", updatedAt: new Date() })
      .where(claimedBy(workspaceId, claim));
  }

  /**
   * Writes a workspace's end once, with its `workspace_finished` event and its changesets: only
   * while this attempt still holds the claim (a cancel, the executor that took the job over, or
   * an earlier delivery of the same job may have ended it), then finishes the run when it was
   * the last.
   */
  async finishWorkspace(
    row: JobWorkspaceRow,
    run: Pick<RunRow, "id">,
    options: BatchRunOptions,
    claim: WorkspaceClaim,
    end: WorkspaceEnd,
  ): Promise<boolean> {
    return this.#db.transaction(async (transaction) => {
      const [finished] = await transaction
        .update(workspaces)
        .set({
          status: end.status,
          error: end.error,
          diff: end.diff,
          finishedAt: new Date(),
          updatedAt: new Date(),
        })
        .where(claimedBy(row.id, claim))
        .returning({ id: workspaces.id });
      if (finished === undefined) return false;
      const progress = end.progress ?? [];
      await appendRunEvents(transaction, run.id, [
        ...progress,
        {
          type: "workspace_finished",
          workspace: rowRef(row),
          status: end.status,
          error: end.error,
        },
        ...end.events,
      ]);
      // The end's step rows below are whole: the progress writes only the rows they leave out.
      await writeEventStepRows(
        transaction,
        row.id,
        progress,
        new Set(end.steps.map((step) => step.stepIndex)),
      );
      await writeSteps(transaction, [{ workspaceId: row.id, steps: end.steps }]);
      await writeChangesets(transaction, run.id, [
        { workspaceId: row.id, changesets: end.changesets },
      ]);
      if (options.fail_fast === true && end.status !== "completed") {
        await this.cancelWorkspaces(
          transaction,
          run.id,
          `cancelled by --fail-fast: workspace ${row.repository}${row.path === "" ? "" : `/${row.path}`} failed`,
          row.id,
        );
      }
      await this.finishRunIfDone(transaction, run.id, options);
      return true;
    });
  }

  /** A job's progress goes to its run's event log (and its step rows), a group commit at a time. */
  progress(runId: string, workspaceId: string): JobProgress {
    return runEventWriter(this.database, runId, workspaceId);
  }

  /** Ends the run when no workspace is left to run: completed, or failed when any failed. */
  async finishRunIfDone(
    transaction: Transaction,
    runId: string,
    options: BatchRunOptions,
  ): Promise<void> {
    // One finisher per run, even when its last two workspaces end on two executors at once.
    await transaction.execute(sql`select pg_advisory_xact_lock(hashtextextended(${runId}, 2))`);
    const [open] = await transaction
      .select({ count: sql<number>`count(*)::int` })
      .from(workspaces)
      .where(
        and(eq(workspaces.batchRunId, runId), inArray(workspaces.status, ["pending", "running"])),
      );
    if (Number(open?.count ?? 0) > 0) return;
    const [failed] = await transaction
      .select({ count: sql<number>`count(*)::int` })
      .from(workspaces)
      .where(
        and(
          eq(workspaces.batchRunId, runId),
          inArray(workspaces.status, ["failed", "timed_out", "cancelled"]),
        ),
      );
    const failedCount = Number(failed?.count ?? 0);
    // With skip_errors a failed workspace is reported and the run still completes with the
    // changesets of the others (src-cli's -skip-errors); without it the run fails.
    const status = failedCount > 0 && options.skip_errors !== true ? "failed" : "completed";
    // Worded for the API (its `skip_errors` option); the error code lets the CLI name its flag.
    const error =
      status === "failed"
        ? `${failedCount} workspace${failedCount === 1 ? "" : "s"} failed; see each workspace's error, retry them, or run with skip_errors to keep the others' changesets`
        : null;
    const [run] = await transaction
      .select({ action: batchRuns.action, status: batchRuns.status })
      .from(batchRuns)
      .where(eq(batchRuns.id, runId));
    if (run === undefined || (run.status !== "queued" && run.status !== "running")) return;
    if (run.action === "apply" && status === "completed") {
      // The steps are done; the run ends when its changesets are written as branches.
      await this.enqueueApply(transaction, runId);
      return;
    }
    await transaction
      .update(batchRuns)
      .set({ status, finishedAt: new Date(), error })
      .where(eq(batchRuns.id, runId));
    await this.appendFinished(
      transaction,
      runId,
      status,
      error,
      error === null ? null : "workspaces_failed",
    );
  }

  async appendFinished(
    transaction: Transaction,
    runId: string,
    status: "completed" | "failed" | "cancelled",
    error: string | null,
    errorCode: BatchRunErrorCode | null = null,
  ): Promise<void> {
    await appendRunEvents(transaction, runId, [
      {
        type: "run_finished",
        status,
        error,
        error_code: errorCode,
        summary: await summaryOf(transaction, runId),
      },
    ]);
  }

  /** Marks every unfinished workspace of the run cancelled, with an event for each. */
  async cancelWorkspaces(
    transaction: Transaction,
    runId: string,
    reason: string,
    except?: string,
  ): Promise<void> {
    const cancelled = await transaction
      .update(workspaces)
      .set({ status: "cancelled", error: reason, finishedAt: new Date(), updatedAt: new Date() })
      .where(
        and(
          eq(workspaces.batchRunId, runId),
          inArray(workspaces.status, ["pending", "running"]),
          except === undefined ? undefined : sql`${workspaces.id} <> ${except}`,
        ),
      )
      .returning();
    await appendRunEvents(
      transaction,
      runId,
      cancelled.map((row) => ({
        type: "workspace_finished",
        workspace: rowRef(row),
        status: "cancelled",
        error: reason,
      })),
    );
  }

  /** Ends a queued or running run as cancelled, with its unfinished workspaces. */
  async cancelRun(runId: string): Promise<void> {
    await this.#db.transaction(async (transaction) => {
      const [run] = await transaction
        .update(batchRuns)
        .set({ status: "cancelled", finishedAt: new Date() })
        .where(and(eq(batchRuns.id, runId), inArray(batchRuns.status, ["queued", "running"])))
        .returning({ id: batchRuns.id });
      if (run === undefined) return;
      await this.cancelWorkspaces(transaction, runId, "the run was cancelled");
      await this.appendFinished(transaction, runId, "cancelled", null);
    });
  }

  /** Queues every failed, timed-out or cancelled workspace of a run again. */
  async requeueFailed(runId: string, options: BatchRunOptions): Promise<void> {
    await this.#db.transaction(async (transaction) => {
      const rows = await transaction
        .update(workspaces)
        .set(requeued())
        .where(
          and(
            eq(workspaces.batchRunId, runId),
            inArray(workspaces.status, ["failed", "timed_out", "cancelled"]),
          ),
        )
        .returning({ id: workspaces.id, position: workspaces.position });
      if (rows.length === 0) return;
      await transaction
        .update(batchRuns)
        .set({ status: "running", finishedAt: null, error: null })
        .where(eq(batchRuns.id, runId));
      for (const row of rows) {
        await this.enqueueWorkspace(transaction, runId, row.id, row.position, options);
      }
    });
  }

  /** Queues one finished workspace again, without the changesets it made. */
  async requeueWorkspace(row: WorkspaceRow, options: BatchRunOptions): Promise<void> {
    await this.#db.transaction(async (transaction) => {
      await transaction.update(workspaces).set(requeued()).where(eq(workspaces.id, row.id));
      await transaction.delete(changesets).where(eq(changesets.workspaceId, row.id));
      await transaction
        .update(batchRuns)
        .set({ status: "running", finishedAt: null, error: null })
        .where(eq(batchRuns.id, row.batchRunId));
      await this.enqueueWorkspace(transaction, row.batchRunId, row.id, row.position, options);
    });
  }

  /**
   * Turns a finished run into a running apply and queues its apply job, unless another request
   * changed its state since it was `from`; `options` replaces its options when given.
   */
  async startApply(
    runId: string,
    from: BatchRunStatus,
    options: BatchRunOptions | null,
  ): Promise<void> {
    await this.#db.transaction(async (transaction) => {
      const [updated] = await transaction
        .update(batchRuns)
        .set({
          action: "apply",
          status: "running",
          finishedAt: null,
          error: null,
          ...(options !== null ? { options } : {}),
        })
        .where(and(eq(batchRuns.id, runId), eq(batchRuns.status, from)))
        .returning({ id: batchRuns.id });
      if (updated === undefined) {
        throw new BatchesError("conflict", `batch run ${runId} is being applied already`);
      }
      await this.enqueueApply(transaction, runId);
    });
  }
}
