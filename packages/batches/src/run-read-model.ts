// What the public API reads back of batch runs: runs with their counts, batch changes with their
// latest run, workspaces with their steps, a step's logs and results, and a run's changesets with
// what applying it will do, all in the wire's shapes.
import { batchRuns, batchSpecs, stepResults, workspaceSteps, workspaces } from "@deckhand/db";
import type {
  BatchChangeSummary,
  BatchRun,
  BatchRunStats,
  BatchStepDetail,
  BatchWorkspace,
  BatchWorkspaceStep,
  StoredBatchChangeset,
} from "@deckhand/wire";
import { and, asc, desc, eq, inArray } from "drizzle-orm";
import { z } from "zod";
import { parseAgentTranscript } from "./agent-transcript.ts";
import { changesetsWithPlans } from "./publishing/apply-plan.ts";
import { emptyBatchChangeStats } from "./publishing/batch-change-read-model.ts";
import type { ChangesetPublisher } from "./publishing/changeset-publisher.ts";
import { iso } from "./publishing/stored-changeset.ts";
import { emptyStats, runStats } from "./run-stats.ts";
import {
  knownId,
  notFound,
  type RunRow,
  type RunStore,
  type WorkspaceRow,
  workspaceJobId,
} from "./run-store.ts";
import { type StoredStepKinds, StoredStepKindsSchema, stepLabel } from "./step-label.ts";
import {
  StoredRunOptionsSchema as StoredOptions,
  StoredWorkspaceDefinitionSchema,
} from "./stored-run.ts";

type StepRow = typeof workspaceSteps.$inferSelect;

/** Of a stored spec, only what tells a `codingAgent` step from a `run` step. */
function toStep(row: StepRow, spec?: StoredStepKinds): BatchWorkspaceStep {
  return {
    step_index: row.stepIndex,
    label: stepLabel(spec?.steps[row.stepIndex]),
    outcome: row.outcome,
    runtime:
      row.runtime === "local" || row.runtime === "container" || row.runtime === "kubernetes"
        ? row.runtime
        : null,
    image: row.image,
    sandbox: row.sandbox === "bubblewrap" || row.sandbox === "none" ? row.sandbox : null,
    shell: row.shell,
    exit_code: row.exitCode,
    duration_ms: row.durationMs,
    started_at: iso(row.startedAt),
    finished_at: iso(row.finishedAt),
  };
}

function toWorkspace(
  row: WorkspaceRow,
  steps: readonly StepRow[],
  spec: StoredStepKinds | undefined,
): BatchWorkspace {
  const definition = StoredWorkspaceDefinitionSchema.parse(row.definition);
  return {
    id: row.id,
    batch_run_id: row.batchRunId,
    repository: row.repository,
    branch: row.branch,
    revision: row.revision,
    path: row.path,
    state: row.status,
    error: row.error,
    step_indexes: definition.step_indexes,
    steps: steps
      .filter((step) => step.workspaceId === row.id)
      .sort((left, right) => left.stepIndex - right.stepIndex)
      .map((step) => toStep(step, spec)),
    attempts: row.attempts,
    executor: row.executor,
    takeover_session_id: row.takeoverSessionId,
    started_at: iso(row.startedAt),
    finished_at: iso(row.finishedAt),
  };
}

function toRun(run: RunRow, name: string, stats: BatchRunStats): BatchRun {
  return {
    id: run.id,
    batch_spec_id: run.batchSpecId,
    name,
    action: run.action,
    status: run.status,
    options: StoredOptions.parse(run.options),
    warnings: z.array(z.string()).parse(run.warnings),
    error: run.error,
    stats,
    created_at: run.createdAt.toISOString(),
    started_at: iso(run.startedAt),
    finished_at: iso(run.finishedAt),
  };
}

export class RunReadModel {
  readonly #store: RunStore;
  readonly #publishing: ChangesetPublisher | undefined;

  constructor(store: RunStore, publishing: ChangesetPublisher | undefined) {
    this.#store = store;
    this.#publishing = publishing;
  }

  get #db() {
    return this.#store.database.db;
  }

  async listRuns(query: { name?: string; limit?: number } = {}): Promise<BatchRun[]> {
    const rows = await this.#db
      .select({ run: batchRuns, name: batchSpecs.name })
      .from(batchRuns)
      .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
      .where(query.name === undefined ? undefined : eq(batchSpecs.name, query.name))
      .orderBy(desc(batchRuns.createdAt))
      .limit(query.limit ?? 100);
    const stats = await runStats(
      this.#db,
      rows.map(({ run }) => run.id),
    );
    return rows.map(({ run, name }) => toRun(run, name, stats.get(run.id) ?? emptyStats()));
  }

  /**
   * Every batch change (spec name) with its latest run, counts per state and burndown, the
   * most recently run first (of the newest 500 runs).
   */
  async listBatchChanges(): Promise<BatchChangeSummary[]> {
    const latest = new Map<string, BatchRun>();
    for (const run of await this.listRuns({ limit: 500 }))
      if (!latest.has(run.name)) latest.set(run.name, run);
    return Promise.all(
      [...latest.values()].map(async (run) => ({
        name: run.name,
        latest_run: run,
        ...((await this.#publishing?.summary(run.name)) ?? {
          stats: emptyBatchChangeStats(),
          burndown: [],
        }),
      })),
    );
  }

  async getRun(runId: string): Promise<BatchRun> {
    knownId(runId, "batch run");
    const [row] = await this.#db
      .select({ run: batchRuns, name: batchSpecs.name })
      .from(batchRuns)
      .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
      .where(eq(batchRuns.id, runId));
    if (row === undefined) throw notFound("batch run", runId);
    const stats = await runStats(this.#db, [runId]);
    return toRun(row.run, row.name, stats.get(runId) ?? emptyStats());
  }

  async listWorkspaces(runId: string): Promise<BatchWorkspace[]> {
    await this.getRun(runId);
    const rows = await this.#db
      .select()
      .from(workspaces)
      .where(eq(workspaces.batchRunId, runId))
      .orderBy(asc(workspaces.position));
    const steps =
      rows.length === 0
        ? []
        : await this.#db
            .select()
            .from(workspaceSteps)
            .where(
              inArray(
                workspaceSteps.workspaceId,
                rows.map((row) => row.id),
              ),
            );
    const spec = await this.#stepKinds(runId);
    return rows.map((row) => toWorkspace(row, steps, spec));
  }

  async getWorkspace(workspaceId: string): Promise<BatchWorkspace> {
    const row = await this.#store.workspaceRow(workspaceId);
    const steps = await this.#db
      .select()
      .from(workspaceSteps)
      .where(eq(workspaceSteps.workspaceId, workspaceId));
    return toWorkspace(row, steps, await this.#stepKinds(row.batchRunId));
  }

  /** The run's steps as its spec wrote them: what each runs, for their labels. */
  async #stepKinds(runId: string): Promise<StoredStepKinds | undefined> {
    const [found] = await this.#db
      .select({ spec: batchSpecs.spec })
      .from(batchRuns)
      .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
      .where(eq(batchRuns.id, runId));
    return StoredStepKindsSchema.safeParse(found?.spec).data;
  }

  async getStep(workspaceId: string, stepIndex: number): Promise<BatchStepDetail> {
    const workspace = await this.#store.workspaceRow(workspaceId);
    const [step] = await this.#db
      .select()
      .from(workspaceSteps)
      .where(
        and(eq(workspaceSteps.workspaceId, workspaceId), eq(workspaceSteps.stepIndex, stepIndex)),
      );
    if (step === undefined) throw notFound(`step ${stepIndex} of workspace`, workspaceId);
    const [result] =
      step.cacheKey === null
        ? []
        : await this.#db.select().from(stepResults).where(eq(stepResults.cacheKey, step.cacheKey));
    // A cached step did not run here: its logs are the run's that produced the result.
    const stdout = step.outcome === "cached" ? (result?.stdout ?? "") : step.stdout;
    const spec = await this.#stepKinds(workspace.batchRunId);
    const agentType = spec?.steps[stepIndex]?.codingAgent?.type;
    return {
      step: toStep(step, spec),
      command: step.command,
      env: step.env,
      job_id: workspaceJobId(workspaceId),
      agent: agentType === undefined ? null : parseAgentTranscript(agentType, stdout),
      stdout,
      stderr: step.outcome === "cached" ? (result?.stderr ?? "") : step.stderr,
      outputs: z.record(z.string(), z.unknown()).parse(result?.outputs ?? {}),
      diff: result?.diff ?? "",
    };
  }

  /** A run's changesets, each with what applying the run will do with it. */
  async listChangesets(runId: string): Promise<StoredBatchChangeset[]> {
    return (await this.listChangesetsWithDropped(runId)).changesets;
  }

  /** A run's changesets, and the open pull requests applying it closes (it no longer makes them). */
  async listChangesetsWithDropped(
    runId: string,
  ): Promise<{ changesets: StoredBatchChangeset[]; dropped: StoredBatchChangeset[] }> {
    await this.getRun(runId);
    return changesetsWithPlans(this.#store.database, runId, this.#publishing?.access);
  }
}
