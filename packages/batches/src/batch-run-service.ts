// Batch runs as durable work: a spec is resolved into workspaces once, each workspace becomes a
// queue task that any executor (the server's own worker, `deckhand executor` on another machine,
// the CLI's embedded one) claims, runs with the shared step cache, and reports through the run's
// event log. A killed executor's task is claimed again after its lease and resumes after the
// newest cached step; completion is written once, guarded by the workspace's state.
import { randomUUID } from "node:crypto";
import { mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  type BatchSpec,
  formatDiagnostic,
  type InstallSource,
  parseBatchSpec,
} from "@deckhand/batch-spec";
import {
  type ContainerRuntime,
  type ContainerRuntimeDetection,
  type DetectContainerRuntimeOptions,
  detectContainerRuntime,
} from "@deckhand/container-runtime";
import {
  batchRuns,
  batchSpecs,
  changesets,
  type Database,
  type DbHandle,
  enqueue,
  stepResults,
  type TaskContext,
  type TaskRegistry,
  type Transaction,
  type WorkspaceStatus,
  workspaceSteps,
  workspaces,
} from "@deckhand/db";
import { errnoCode, errorMessage } from "@deckhand/errors";
import type { KubernetesRuntimeConfig } from "@deckhand/kubernetes-runtime/config";
import type { ProcessLauncher } from "@deckhand/sandbox";
import type { AgentEnvironmentPolicy } from "@deckhand/secrets";
import type {
  AcpStepPermissions,
  BatchChangeStats,
  BatchChangeSummary,
  BatchChangeset,
  BatchCodingAgentOptions,
  BatchRun,
  BatchRunErrorCode,
  BatchRunEvent,
  BatchRunOptions,
  BatchRunStats,
  BatchRunSummary,
  BatchStepDetail,
  BatchTakeoverResponse,
  BatchWorkspace,
  BatchWorkspaceStatus,
  BatchWorkspaceStep,
  CreateBatchRunRequest,
  ResolveBatchWorkspacesRequest,
  ResolvedBatchWorkspaces,
  StoredBatchChangeset,
} from "@deckhand/wire";
import { UsageJobId } from "@deckhand/wire";
import { type AnyColumn, and, asc, desc, eq, inArray, type SQL, sql } from "drizzle-orm";
import { z } from "zod";
import { type AcpAgentStepOptions, acpProviderCatalogue } from "./acp-agent-step.ts";
import { parseAgentTranscript } from "./agent-transcript.ts";
import { applyChangeset } from "./apply-changeset.ts";
import { appendRunEvents, runEventWriter } from "./batch-run-events.ts";
import { BatchesError } from "./batches-error.ts";
import { buildChangesets } from "./build-changesets.ts";
import { checkoutWorkspace } from "./checkout-workspace.ts";
import type { CodeHost } from "./code-host-config.ts";
import { codeHostGitEnvironment, type GitEnvironmentFor } from "./code-host-credentials.ts";
import type { CodingAgentOptions, ModelProviderAccess } from "./coding-agent-step.ts";
import { DatabaseStepCache } from "./database-step-cache.ts";
import { type KubernetesRunnerSource, kubernetesRunnerSource } from "./kubernetes-step.ts";
import { changesetsWithPlans } from "./publishing/apply-plan.ts";
import type { ChangesetPublisher } from "./publishing/changeset-publisher.ts";
import { iso, toStoredChangeset } from "./publishing/stored-changeset.ts";
import { loadRepositories, locateRepository } from "./repositories.ts";
import { mapLimited, repositoryGit } from "./repository-git.ts";
import { resolveWorkspaces, type Workspace } from "./resolve-workspaces.ts";
import { cachedStepCount, runWorkspace, type StepRecord } from "./run-workspace.ts";
import { type StoredStepKinds, StoredStepKindsSchema, stepLabel } from "./step-label.ts";
import {
  StoredRunOptionsSchema as StoredOptions,
  type StoredWorkspaceDefinition,
  StoredWorkspaceDefinitionSchema,
  storeWorkspaceDefinition,
} from "./stored-run.ts";
import {
  continuationKey,
  takenOverRun,
  type WorkspaceSessions,
  WorkspaceTakeovers,
} from "./workspace-takeover.ts";

/** The queue task type of one workspace job. */
export const BATCH_WORKSPACE_TASK = "batch_workspace";
/** The queue task type that writes a finished run's changesets as branches. */
export const BATCH_APPLY_TASK = "batch_apply";

const WorkspaceTaskPayloadSchema = z.object({ workspace_id: z.uuid() });
const ApplyTaskPayloadSchema = z.object({ batch_run_id: z.uuid() });

/** How often a running job checks whether its workspace was cancelled by someone else. */
const CANCEL_POLL_MS = 1_000;
/** A workspace job is retried this often after its executor died or its lease was lost. */
const WORKSPACE_TASK_ATTEMPTS = 5;

const TERMINAL: readonly WorkspaceStatus[] = [
  "completed",
  "failed",
  "timed_out",
  "skipped",
  "cancelled",
];

export interface BatchRunServiceOptions {
  database: DbHandle;
  /** The configured code hosts, read at each resolution (config.json may change). */
  codeHosts: () => readonly CodeHost[];
  /** Where git URL hosts are cloned (`<data-dir>/cache/repositories`). */
  cacheDirectory: string;
  /** Where workspace checkouts are made while their job runs. */
  workDirectory: string;
  /** What of the outer environment steps inherit (Deckhand's secrets never). */
  environmentPolicy?: AgentEnvironmentPolicy;
  outerEnvironment?: Readonly<Record<string, string | undefined>>;
  /** Starts local steps: the process's environment policy and sandbox (unconfined without one). */
  launcher?: ProcessLauncher;
  /**
   * The container runtime for container steps (null for none). When absent it is detected once,
   * at the first job that needs one, with `containerDetection` (e.g. `restrictedHost` for Podman
   * on hosts that need runc and fixed ulimits without a containers.conf).
   */
  containerRuntime?: ContainerRuntime | null;
  containerDetection?: DetectContainerRuntimeOptions;
  /** config.json's `kubernetes`: where the steps of `kubernetes` runs run as Jobs. */
  kubernetes?: KubernetesRuntimeConfig;
  /**
   * Lends each workspace job a model-provider token for its `codingAgent` steps (the server's
   * `leaseModelProvider`); without it such steps fail naming what is missing.
   */
  modelProvider?: ModelProviderAccess;
  /**
   * Agent versions, models and install source (config.json's `codingAgent`), per agent type,
   * unless a run's `coding_agent` says otherwise.
   */
  codingAgent?: BatchCodingAgentOptions;
  /**
   * Deckhand's providers, which `codingAgent` steps of type `acp` run: specs naming a provider
   * there is not are refused when they are previewed, and the steps start the provider's agent.
   */
  acpAgents?: AcpAgentStepOptions;
  /**
   * Where local `codingAgent` steps install agents, as `<directory>/<type>/<version>`: absolute,
   * or starting with `$HOME/`. The server passes `<data-dir>/agents`, so its installs stay in its
   * data directory; without it, `$HOME/.deckhand/agents` of the environment steps run in.
   */
  agentInstallDirectory?: string;
  /**
   * Publishes applied changesets to their code hosts at the end of the apply job, and gives git
   * the code host connections' tokens for cloning, fetching and pushing their repositories.
   */
  publishing?: ChangesetPublisher;
  /** Told about jobs that could not report (the database gone, say). */
  onError?: (error: unknown, context: { workspaceId: string }) => void;
  /**
   * Model spend budgets (budgets/batch-spend.ts): a workspace whose run's budget is spent is not
   * started, and says why.
   */
  budgets?: { runBudgetReached(runId: string): Promise<string | null> };
  /**
   * The interactive sessions workspaces are taken over with, and whose work later runs use
   * instead of the steps; without them taking over is refused, and a workspace that continues a
   * session runs its steps with a warning.
   */
  sessions?: WorkspaceSessions;
}

type RunRow = typeof batchRuns.$inferSelect;
type WorkspaceRow = typeof workspaces.$inferSelect;
type StepRow = typeof workspaceSteps.$inferSelect;

function specError(request: { file?: string | undefined }, diagnostics: string[]): BatchesError {
  return new BatchesError(
    "invalid_spec",
    `${request.file ?? "the batch spec"} is invalid:\n${diagnostics.join("\n")}`,
  );
}

/** The job id a workspace's model usage is recorded under. */
function workspaceJobId(workspaceId: string): string {
  return UsageJobId.batchWorkspace(workspaceId);
}

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

/**
 * The batch-run domain: create runs from specs, run their workspace jobs (register them on a
 * task registry), read runs, workspaces, steps and changesets back, cancel and retry.
 */
export class BatchRunService {
  readonly #options: BatchRunServiceOptions;
  readonly #cache: DatabaseStepCache;
  #containerDetection: Promise<ContainerRuntimeDetection> | undefined;
  readonly #containerShells = new Map<string, Promise<string>>();
  readonly #takeovers: WorkspaceTakeovers;
  readonly #kubernetes: KubernetesRunnerSource | undefined;

  constructor(options: BatchRunServiceOptions) {
    this.#options = options;
    this.#kubernetes =
      options.kubernetes === undefined
        ? undefined
        : kubernetesRunnerSource(options.kubernetes, options.outerEnvironment ?? process.env);
    this.#cache = new DatabaseStepCache(options.database.db);
    this.#takeovers = new WorkspaceTakeovers(options.database.db, options.sessions);
  }

  get #db() {
    return this.#options.database.db;
  }

  /** The publisher of applied changesets, when this service publishes (for its API routes). */
  get publishing(): ChangesetPublisher | undefined {
    return this.#options.publishing;
  }

  /**
   * Credentials for git commands that reach a code host: a git URL host's own password, else the
   * token of the code host connection the URL belongs to (none without publishing).
   */
  get #git(): { gitEnvironment: GitEnvironmentFor } {
    return {
      gitEnvironment: codeHostGitEnvironment(
        this.#options.codeHosts,
        this.#options.publishing?.access.gitEnvironment,
      ),
    };
  }

  /**
   * How the run's steps find their container runtime: the one given, or a detection made once
   * per process (`info` and a trial container take a while, and the answer does not change),
   * whose reasons a step that needs a runtime reports when none works. Nothing for a run that
   * needs no container.
   */
  #containers(
    spec: BatchSpec,
    options: BatchRunOptions,
  ):
    | { containerRuntime: ContainerRuntime | null }
    | { containerDetection: Promise<ContainerRuntimeDetection> }
    | Record<string, never> {
    if (this.#options.containerRuntime !== undefined) {
      return { containerRuntime: this.#options.containerRuntime };
    }
    const wantsContainer =
      (options.runtime === undefined ||
        options.runtime === "auto" ||
        options.runtime === "container") &&
      (spec.steps ?? []).some((step) => step.container !== undefined);
    if (!wantsContainer) return {};
    this.#containerDetection ??= detectContainerRuntime(this.#options.containerDetection);
    return { containerDetection: this.#containerDetection };
  }

  /**
   * Parses a request's spec; throws `invalid_spec` with every diagnostic, located. The providers
   * `acp` steps name are checked against this service's (a read of the providers config).
   */
  async #parse(request: ResolveBatchWorkspacesRequest): Promise<BatchSpec> {
    const file = request.file ?? "spec.yaml";
    const parsed = parseBatchSpec(request.source, {
      file,
      acpProviders: await acpProviderCatalogue(this.#options.acpAgents),
      ...(request.spec_directory !== undefined
        ? { specDirectory: resolve(request.spec_directory) }
        : {}),
    });
    if (parsed.spec === undefined) {
      throw specError(request, parsed.diagnostics.map(formatDiagnostic));
    }
    const mounts = (parsed.spec.steps ?? []).flatMap((step) => step.mount ?? []);
    if (mounts.length > 0 && request.spec_directory === undefined) {
      throw specError(request, [
        `${file}: steps mount files (${mounts[0]!.path}) but the request names no spec_directory they are relative to; send spec_directory`,
      ]);
    }
    return parsed.spec;
  }

  async #resolve(
    spec: BatchSpec,
    options: BatchRunOptions,
    signal?: AbortSignal,
  ): Promise<{ workspaces: Workspace[]; warnings: string[] }> {
    const repositories = await loadRepositories({
      codeHosts: this.#options.codeHosts(),
      extraDirectories: options.code_host_directories ?? [],
      cacheDirectory: this.#options.cacheDirectory,
      ...this.#git,
      ...(signal ? { signal } : {}),
    });
    const result = await resolveWorkspaces(spec, {
      repositories,
      forceOverrideIgnore: options.force_override_ignore ?? false,
      ...(signal ? { signal } : {}),
    });
    const excluded = new Set(options.exclude_repositories ?? []);
    return {
      workspaces: result.workspaces.filter((workspace) => !excluded.has(workspace.repository.name)),
      warnings: [
        ...result.warnings,
        ...[...excluded].map((name) => `repository ${name} is excluded from this run`),
      ],
    };
  }

  /** The workspaces a spec would run in, before anything runs. */
  async resolve(request: ResolveBatchWorkspacesRequest): Promise<ResolvedBatchWorkspaces> {
    const spec = await this.#parse(request);
    const options = request.options ?? {};
    const { workspaces: resolved, warnings } = await this.#resolve(spec, options);
    const cached = await mapLimited(resolved, 4, async (workspace) =>
      options.clear_cache === true
        ? 0
        : cachedStepCount({
            workspace,
            spec,
            cache: this.#cache,
            runtime: options.runtime ?? "auto",
            ...this.#containers(spec, options),
            ...(request.spec_directory !== undefined
              ? { specDirectory: resolve(request.spec_directory) }
              : {}),
            ...(this.#options.environmentPolicy
              ? { environmentPolicy: this.#options.environmentPolicy }
              : {}),
            ...(this.#options.outerEnvironment
              ? { outerEnvironment: this.#options.outerEnvironment }
              : {}),
            ...(this.#options.launcher ? { launcher: this.#options.launcher } : {}),
          }),
    );
    return {
      workspaces: resolved.map((workspace, index) => ({
        repository: workspace.repository.name,
        branch: workspace.branch,
        revision: workspace.revision,
        path: workspace.path,
        step_indexes: workspace.steps.map((step) => step.index),
        search_result_paths: workspace.searchResultPaths,
        cached_steps: cached[index]!,
      })),
      warnings,
    };
  }

  /**
   * Stores the spec and a run, resolves the workspaces and queues one job each, all in one
   * transaction: a run is either queued whole or not at all.
   */
  async createRun(request: CreateBatchRunRequest): Promise<BatchRun> {
    const spec = await this.#parse(request);
    const options = request.options ?? {};
    const { workspaces: resolved, warnings: resolveWarnings } = await this.#resolve(spec, options);
    // Workspaces whose latest earlier run was taken over take the session's work instead.
    const continued = await this.#takeovers.continuations(spec.name, resolved);
    const warnings = [...resolveWarnings, ...continued.warnings];
    const applyEmpty = request.action === "apply" && this.#options.publishing !== undefined;
    const runId = await this.#db.transaction(async (transaction) => {
      const [specRow] = await transaction
        .insert(batchSpecs)
        .values({
          name: spec.name,
          source: request.source,
          spec,
          specDirectory:
            request.spec_directory === undefined ? null : resolve(request.spec_directory),
          file: request.file ?? null,
        })
        .returning({ id: batchSpecs.id });
      const [runRow] = await transaction
        .insert(batchRuns)
        .values({
          batchSpecId: specRow!.id,
          action: request.action ?? "preview",
          options,
          warnings,
          // An apply that produces nothing still runs its apply job when publishing is set
          // up: it closes the pull requests of the batch change the spec no longer produces.
          status: resolved.length === 0 ? (applyEmpty ? "running" : "completed") : "queued",
          finishedAt: resolved.length === 0 && !applyEmpty ? new Date() : null,
        })
        .returning({ id: batchRuns.id });
      const run = runRow!.id;
      await appendRunEvents(transaction, run, [
        { type: "run_started", workspaces: resolved.length },
      ]);
      if (resolved.length === 0 && applyEmpty) {
        await this.#enqueueApply(transaction, run);
        return run;
      }
      if (resolved.length === 0) {
        await appendRunEvents(transaction, run, [
          { type: "run_finished", status: "completed", error: null, summary: emptySummary() },
        ]);
        return run;
      }
      const rows = await transaction
        .insert(workspaces)
        .values(
          resolved.map((workspace, position) => ({
            batchRunId: run,
            position,
            repository: workspace.repository.name,
            branch: workspace.branch,
            revision: workspace.revision,
            path: workspace.path,
            definition: storeWorkspaceDefinition(
              workspace,
              continued.takeovers.get(continuationKey(workspace)),
            ),
            takeoverSessionId:
              continued.takeovers.get(continuationKey(workspace))?.session_id ?? null,
          })),
        )
        .returning({ id: workspaces.id, position: workspaces.position });
      for (const row of rows) {
        await this.#enqueueWorkspace(transaction, run, row.id, row.position, options);
      }
      return run;
    });
    return this.getRun(runId);
  }

  async #enqueueWorkspace(
    transaction: Transaction,
    runId: string,
    workspaceId: string,
    position: number,
    options: BatchRunOptions,
  ): Promise<void> {
    await enqueue(transaction, {
      type: BATCH_WORKSPACE_TASK,
      payload: { workspace_id: workspaceId },
      idempotencyKey: `batch-workspace:${workspaceId}:${randomUUID()}`,
      maxAttempts: WORKSPACE_TASK_ATTEMPTS,
      // A run's parallelism, across every executor: its workspaces form that many lanes, and
      // the queue runs one task of a lane at a time.
      ...(options.parallelism !== undefined
        ? { serialKey: `batch-run:${runId}:${position % options.parallelism}` }
        : {}),
    });
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
        ...((await this.#options.publishing?.summary(run.name)) ?? {
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
    const row = await this.#workspaceRow(workspaceId);
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

  async #workspaceRow(workspaceId: string): Promise<WorkspaceRow> {
    knownId(workspaceId, "workspace");
    const [row] = await this.#db.select().from(workspaces).where(eq(workspaces.id, workspaceId));
    if (row === undefined) throw notFound("workspace", workspaceId);
    return row;
  }

  async getStep(workspaceId: string, stepIndex: number): Promise<BatchStepDetail> {
    const workspace = await this.#workspaceRow(workspaceId);
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
    return changesetsWithPlans(this.#options.database, runId, this.#options.publishing?.access);
  }

  /** Cancels waiting workspaces now; running ones notice within a second and stop. */
  async cancelRun(runId: string): Promise<BatchRun> {
    await this.getRun(runId);
    await this.#db.transaction(async (transaction) => {
      const [run] = await transaction
        .update(batchRuns)
        .set({ status: "cancelled", finishedAt: new Date() })
        .where(and(eq(batchRuns.id, runId), inArray(batchRuns.status, ["queued", "running"])))
        .returning({ id: batchRuns.id });
      if (run === undefined) return;
      await this.#cancelWorkspaces(transaction, runId, "the run was cancelled");
      await this.#appendFinished(transaction, runId, "cancelled", null);
    });
    return this.getRun(runId);
  }

  /** Marks every unfinished workspace of the run cancelled, with an event for each. */
  async #cancelWorkspaces(
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

  /** Runs every failed, timed-out or cancelled workspace of a finished run again. */
  async retryRun(runId: string): Promise<BatchRun> {
    const run = await this.getRun(runId);
    if (run.status === "queued" || run.status === "running") {
      throw new BatchesError(
        "conflict",
        `batch run ${runId} is still ${run.status}; retry it once it finished`,
      );
    }
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
        await this.#enqueueWorkspace(transaction, runId, row.id, row.position, run.options);
      }
    });
    return this.getRun(runId);
  }

  /** Runs one finished workspace again; its cached steps are not run again. */
  async retryWorkspace(workspaceId: string): Promise<BatchWorkspace> {
    const row = await this.#workspaceRow(workspaceId);
    if (row.status === "pending" || row.status === "running") {
      throw new BatchesError("conflict", `workspace ${workspaceId} is still ${row.status}`);
    }
    const run = await this.getRun(row.batchRunId);
    await this.#db.transaction(async (transaction) => {
      await transaction.update(workspaces).set(requeued()).where(eq(workspaces.id, workspaceId));
      await transaction.delete(changesets).where(eq(changesets.workspaceId, workspaceId));
      await transaction
        .update(batchRuns)
        .set({ status: "running", finishedAt: null, error: null })
        .where(eq(batchRuns.id, row.batchRunId));
      await this.#enqueueWorkspace(
        transaction,
        row.batchRunId,
        workspaceId,
        row.position,
        run.options,
      );
    });
    return this.getWorkspace(workspaceId);
  }

  /**
   * Opens an interactive session on a finished workspace: at its revision, with its result
   * committed first. While that session is open, taking the workspace over again answers it.
   * What is applied in the session becomes the workspace's result in the spec's next run.
   */
  async takeOverWorkspace(workspaceId: string): Promise<BatchTakeoverResponse> {
    return this.#takeovers.takeOver(knownId(workspaceId, "workspace"));
  }

  /**
   * Removes the checkouts in this process's work directory that no attempt runs any more, with
   * their worktree registrations: what an executor killed mid-step left behind once its job was
   * taken over elsewhere or ended. A checkout stays while its workspace runs on that attempt
   * (another executor sharing the data directory, or a lease not expired yet) and when its run
   * keeps logs. Batch workers call this as they start (`startBatchWorker`).
   */
  async sweepCheckouts(): Promise<number> {
    const workRoot = resolve(this.#options.workDirectory);
    let names: string[];
    try {
      names = await readdir(workRoot);
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return 0;
      throw error;
    }
    const checkouts = names.flatMap((name) => {
      const match =
        /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:\.(\d+))?$/.exec(name);
      return match ? [{ name, id: match[1]!, attempt: Number(match[2] ?? 0) }] : [];
    });
    if (checkouts.length === 0) return 0;
    const rows = await this.#db
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
          checkouts.map((checkout) => checkout.id),
        ),
      );
    const byId = new Map(rows.map((row) => [row.id, row]));
    let removed = 0;
    for (const checkout of checkouts) {
      const row = byId.get(checkout.id);
      const live = row?.status === "running" && row.attempts === checkout.attempt;
      const kept = row !== undefined && StoredOptions.parse(row.options).keep_logs === true;
      if (live || (kept && row.status !== "pending" && row.status !== "running")) continue;
      const directory = join(workRoot, checkout.name);
      // The worktree's `.git` file names the repository it is registered in.
      const gitFile = await readFile(join(directory, ".git"), "utf8").catch(() => "");
      const gitDirectory = /^gitdir: (.+)$/m.exec(gitFile)?.[1];
      await rm(directory, { recursive: true, force: true });
      if (gitDirectory !== undefined) {
        const repository = resolve(directory, gitDirectory.trim(), "..", "..");
        await repositoryGit(
          repository,
          ["worktree", "prune"],
          `pruning worktrees of ${repository}`,
          {
            writes: true,
          },
        ).catch(() => {});
      }
      removed += 1;
    }
    return removed;
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
          await this.#finishRunIfDone(transaction, runId, StoredOptions.parse(run.options));
        }
        return locked.length;
      });
    }

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
        await this.#appendFinished(transaction, id, "failed", error);
        return 1;
      });
    }
    return { workspaces: failedWorkspaces, runs: failedRuns };
  }

  /** Registers the workspace job, the apply job and publishing's tasks on a worker's registry. */
  register(tasks: TaskRegistry): void {
    tasks.register(BATCH_WORKSPACE_TASK, {
      schema: WorkspaceTaskPayloadSchema,
      handle: (payload, context) => this.#runJob(payload.workspace_id, context),
    });
    tasks.register(BATCH_APPLY_TASK, {
      schema: ApplyTaskPayloadSchema,
      handle: (payload, context) => this.#runApply(payload.batch_run_id, context),
    });
    // Tracking and hooks run wherever batch jobs run (the server's batch worker, executors).
    this.#options.publishing?.register(tasks);
  }

  /**
   * Applies a finished preview: its changesets are written as branches by a queued job, and the
   * run ends once every one is applied or has failed. With `skipErrors` a run whose workspaces
   * failed (or were cancelled) applies the changesets of those that succeeded, as a run started
   * with `skip_errors` would have; the run keeps that option, so it ends completed once they are.
   */
  async applyRun(runId: string, options: { skipErrors?: boolean } = {}): Promise<BatchRun> {
    const run = await this.getRun(runId);
    // An apply that failed part-way (a changeset, or a host refusing publication) is resumed:
    // what was applied and published is skipped.
    const resumable = run.action === "apply" && run.status === "failed" && run.stats.failed === 0;
    const subset =
      options.skipErrors === true && (run.status === "failed" || run.status === "cancelled");
    if (subset && run.stats.changesets === 0) {
      throw new BatchesError(
        "conflict",
        `no workspace of batch run ${runId} produced a changeset, so there is nothing to apply; retry its workspaces first`,
      );
    }
    if (run.status !== "completed" && !resumable && !subset) {
      throw new BatchesError(
        "conflict",
        run.status === "queued" || run.status === "running"
          ? `batch run ${runId} is still ${run.status}; apply it once it finished`
          : `batch run ${runId} ${run.status}; retry its workspaces (or run with skip_errors) before applying`,
      );
    }
    const [stored] = await this.#db
      .select({ options: batchRuns.options })
      .from(batchRuns)
      .where(eq(batchRuns.id, runId));
    const runOptions = StoredOptions.parse(stored?.options ?? {});
    await this.#db.transaction(async (transaction) => {
      const [updated] = await transaction
        .update(batchRuns)
        .set({
          action: "apply",
          status: "running",
          finishedAt: null,
          error: null,
          ...(subset ? { options: { ...runOptions, skip_errors: true } } : {}),
        })
        .where(and(eq(batchRuns.id, runId), eq(batchRuns.status, run.status)))
        .returning({ id: batchRuns.id });
      if (updated === undefined) {
        throw new BatchesError("conflict", `batch run ${runId} is being applied already`);
      }
      await this.#enqueueApply(transaction, runId);
    });
    return this.getRun(runId);
  }

  async #enqueueApply(transaction: Transaction, runId: string): Promise<void> {
    await enqueue(transaction, {
      type: BATCH_APPLY_TASK,
      payload: { batch_run_id: runId },
      idempotencyKey: `batch-apply:${runId}:${randomUUID()}`,
      maxAttempts: WORKSPACE_TASK_ATTEMPTS,
    });
  }

  /**
   * Writes each changeset of the run as its branch, keeping what a person added to a branch
   * since Deckhand last applied it (the last apply of that repository and branch, in any run).
   * Changesets already applied by an earlier delivery of this job are skipped.
   */
  async #runApply(runId: string, context: TaskContext): Promise<void> {
    const [run] = await this.#db.select().from(batchRuns).where(eq(batchRuns.id, runId));
    if (run === undefined || run.status !== "running" || run.action !== "apply") return;
    const options = StoredOptions.parse(run.options);
    const rows = await this.#db
      .select({ changeset: changesets, workspace: workspaces })
      .from(changesets)
      .innerJoin(workspaces, eq(workspaces.id, changesets.workspaceId))
      .where(eq(changesets.batchRunId, runId))
      .orderBy(asc(workspaces.position), asc(changesets.createdAt));
    for (const { changeset: row, workspace } of rows) {
      if (context.signal.aborted)
        throw new BatchesError("interrupted", `applying run ${runId} was interrupted`);
      if (row.appliedAt !== null) continue;
      const ref = rowRef(workspace);
      const definition = StoredWorkspaceDefinitionSchema.parse(workspace.definition);
      try {
        const [previous] = await this.#db
          .select({ createdCommit: changesets.createdCommit })
          .from(changesets)
          .where(
            and(
              eq(changesets.repository, row.repository),
              eq(changesets.branch, row.branch),
              sql`${changesets.createdCommit} is not null`,
              sql`${changesets.id} <> ${row.id}`,
            ),
          )
          .orderBy(desc(changesets.appliedAt))
          .limit(1);
        const path = await locateRepository(definition.repository, row.baseRevision, {
          codeHosts: this.#options.codeHosts(),
          cacheDirectory: this.#options.cacheDirectory,
          ...this.#git,
          signal: context.signal,
        });
        const remoteEnvironment =
          definition.repository.url === null
            ? undefined
            : this.#git.gitEnvironment(definition.repository.url);
        const applied = await applyChangeset({
          repository: {
            ...definition.repository,
            url: definition.repository.url ?? undefined,
            path,
          },
          changeset: toStoredChangeset(row),
          previousCommit: previous?.createdCommit ?? null,
          onConflict: options.on_conflict ?? "rebase",
          ...(options.push !== undefined ? { push: options.push } : {}),
          ...(remoteEnvironment ? { remoteEnvironment } : {}),
          signal: context.signal,
        });
        await this.#db.transaction(async (transaction) => {
          await transaction
            .update(changesets)
            .set({
              appliedCommit: applied.commit,
              createdCommit: applied.createdCommit,
              applyOperation: applied.operation,
              appliedAt: new Date(),
              pushed: applied.pushed,
              error: null,
              updatedAt: new Date(),
            })
            .where(eq(changesets.id, row.id));
          await appendRunEvents(transaction, runId, [
            {
              type: "changeset_applied",
              workspace: ref,
              branch: row.branch,
              commit: applied.commit,
              operation: applied.operation,
              pushed: applied.pushed,
              kept_commits: applied.keptCommits,
            },
          ]);
        });
      } catch (error) {
        if (context.signal.aborted) throw error;
        const message = errorMessage(error);
        await this.#db.transaction(async (transaction) => {
          await transaction
            .update(changesets)
            .set({ error: message, updatedAt: new Date() })
            .where(eq(changesets.id, row.id));
          await appendRunEvents(transaction, runId, [
            { type: "changeset_apply_failed", workspace: ref, branch: row.branch, error: message },
          ]);
        });
      }
    }
    // Pull requests for the applied changesets (publishing/), resumable as applying is.
    const published = await this.#options.publishing?.publishRun(runId, context.signal);
    await this.#db.transaction(async (transaction) => {
      const [failed] = await transaction
        .select({ count: sql<number>`count(*)::int` })
        .from(changesets)
        .where(and(eq(changesets.batchRunId, runId), sql`${changesets.appliedAt} is null`));
      const failures = Number(failed?.count ?? 0);
      const publishFailures = published?.failed ?? 0;
      const status = failures + publishFailures > 0 ? "failed" : "completed";
      const problems = [
        ...(failures > 0
          ? [
              `${failures} changeset${failures === 1 ? "" : "s"} could not be applied; each changeset's error says why`,
            ]
          : []),
        ...(published?.stopped ? [published.stopped] : []),
        ...(publishFailures > 0 && !published?.stopped
          ? [
              `${publishFailures} changeset${publishFailures === 1 ? "" : "s"} could not be published; each changeset's publish_error says why; apply the run again to retry`,
            ]
          : []),
      ];
      const error = problems.length > 0 ? problems.join("; ") : null;
      const [updated] = await transaction
        .update(batchRuns)
        .set({ status, error, finishedAt: new Date() })
        .where(and(eq(batchRuns.id, runId), eq(batchRuns.status, "running")))
        .returning({ id: batchRuns.id });
      if (updated !== undefined) await this.#appendFinished(transaction, runId, status, error);
    });
  }

  async #runJob(workspaceId: string, context: TaskContext): Promise<void> {
    const loaded = await this.#loadJob(workspaceId);
    if (loaded === null) return;
    const { row, run, spec, specDirectory, definition } = loaded;
    const options = StoredOptions.parse(run.options);
    // Claiming a `running` row is how a job is taken over from an executor that died (its lease
    // expired and the queue delivered the task again). The claim is this executor and the
    // workspace's attempt count after it: whatever this attempt writes is fenced by both, so an
    // earlier attempt that is still alive somewhere (its lease lapsed, say) changes nothing.
    const [claimed] = await this.#db
      .update(workspaces)
      .set({
        status: "running",
        attempts: sql`${workspaces.attempts} + 1`,
        executor: context.workerId,
        startedAt: sql`coalesce(${workspaces.startedAt}, now())`,
        updatedAt: new Date(),
      })
      .where(
        and(eq(workspaces.id, workspaceId), inArray(workspaces.status, ["pending", "running"])),
      )
      .returning({ attempts: workspaces.attempts });
    if (claimed === undefined) return;
    const claim: WorkspaceClaim = { executor: context.workerId, attempt: claimed.attempts };
    // A run whose budget is spent dispatches no further workspace.
    const spent = await this.#options.budgets?.runBudgetReached(run.id);
    if (spent) {
      await this.#finishWorkspace(row, run, options, claim, notStarted(spent));
      return;
    }
    await this.#db
      .update(batchRuns)
      .set({ status: "running", startedAt: sql`coalesce(${batchRuns.startedAt}, now())` })
      .where(and(eq(batchRuns.id, run.id), eq(batchRuns.status, "queued")));
    // A previous attempt's step rows describe a run that did not finish; this one replaces them.
    await this.#db.delete(workspaceSteps).where(eq(workspaceSteps.workspaceId, workspaceId));

    const writer = runEventWriter(this.#options.database, run.id, workspaceId);
    // Progress goes to the log as it happens; the workspace's end (and its changesets) is written
    // with the row that records it, once, by the attempt that holds the claim (#finishWorkspace):
    // an attempt killed after it reported its end, or one that lost its claim, adds no second end.
    // Once another attempt has taken the workspace over, this one reports nothing more: its
    // step rows are the new attempt's now.
    let superseded = false;
    const report = (event: BatchRunEvent) => {
      if (superseded || event.type === "workspace_finished" || event.type === "changeset") return;
      void writer.append(event).catch(() => {});
    };
    const controller = new AbortController();
    const stopped = AbortSignal.any([controller.signal, context.signal]);
    // Stops the steps when the workspace was cancelled, or another executor took it over.
    const poll = setInterval(() => {
      void this.#db
        .select({
          status: workspaces.status,
          executor: workspaces.executor,
          attempts: workspaces.attempts,
        })
        .from(workspaces)
        .where(eq(workspaces.id, workspaceId))
        .then(([current]) => {
          if (
            current === undefined ||
            current.executor !== claim.executor ||
            current.attempts !== claim.attempt
          ) {
            superseded = true;
          }
          if (superseded || current?.status !== "running") controller.abort();
        })
        .catch(() => {});
    }, CANCEL_POLL_MS);
    // One directory per attempt: an earlier attempt still alive on this machine (its lease
    // lapsed) removes only its own checkout when it stops, never this one.
    const workRoot = resolve(this.#options.workDirectory);
    const checkoutDirectory = join(workRoot, `${workspaceId}.${claim.attempt}`);
    const workspace: Workspace = {
      repository: {
        ...definition.repository,
        url: definition.repository.url ?? undefined,
      },
      branch: row.branch,
      revision: row.revision,
      path: row.path,
      // A session's work may touch any file: a workspace continuing one is checked out whole.
      onlyFetchWorkspace: definition.only_fetch_workspace && definition.takeover === undefined,
      searchResultPaths: definition.search_result_paths,
      steps: definition.step_indexes.map((index) => ({ index, step: spec.steps![index]! })),
    };
    const made: { remove?: () => Promise<void> } = {};
    let outcome: WorkspaceOutcome;
    try {
      // Made only when a step must run: a workspace answered wholly from the cache needs no
      // repository access and no checkout.
      const checkout = async () => {
        const repositoryPath = await locateRepository(workspace.repository, row.revision, {
          codeHosts: this.#options.codeHosts(),
          cacheDirectory: this.#options.cacheDirectory,
          ...this.#git,
          signal: stopped,
        });
        workspace.repository = { ...workspace.repository, path: repositoryPath };
        await mkdir(workRoot, { recursive: true });
        await this.#clearCheckouts(repositoryPath, workRoot, workspaceId);
        const done = await checkoutWorkspace(workspace, checkoutDirectory, { signal: stopped });
        made.remove = done.remove;
        return done;
      };
      // A workspace that continues a session takes its work instead of running the steps.
      const execute = definition.takeover ? takenOverRun(definition.takeover) : runWorkspace;
      const result = await execute({
        workspace,
        spec,
        checkout,
        containerShells: this.#containerShells,
        ...(specDirectory !== null ? { specDirectory } : {}),
        runtime: options.runtime ?? "auto",
        ...this.#containers(spec, options),
        ...(this.#kubernetes ? { kubernetes: this.#kubernetes } : {}),
        ...(this.#options.environmentPolicy
          ? { environmentPolicy: this.#options.environmentPolicy }
          : {}),
        ...(this.#options.outerEnvironment
          ? { outerEnvironment: this.#options.outerEnvironment }
          : {}),
        ...(this.#options.launcher ? { launcher: this.#options.launcher } : {}),
        ...(options.timeout_ms !== undefined ? { timeoutMs: options.timeout_ms } : {}),
        cache: this.#cache,
        clearCache: options.clear_cache ?? false,
        // The job, as model usage and its token name it: one per workspace (and attempt).
        jobId: workspaceJobId(workspaceId),
        ...(this.#options.modelProvider ? { modelProvider: this.#options.modelProvider } : {}),
        ...(this.#options.acpAgents
          ? {
              acpAgents: {
                ...this.#options.acpAgents,
                ...acpPermissionsDefault(this.#options.codingAgent, options.coding_agent),
              },
            }
          : {}),
        codingAgent: {
          ...codingAgentOptions(this.#options.codingAgent, options.coding_agent),
          ...(this.#options.agentInstallDirectory !== undefined
            ? { installDirectory: this.#options.agentInstallDirectory }
            : {}),
        },
        signal: stopped,
        onEvent: report,
      });
      if (context.signal.aborted && result.status === "cancelled") {
        // The worker gave the task up (shutdown, lost lease): the queue runs it again, and the
        // step cache lets that attempt resume here.
        throw new BatchesError(
          "interrupted",
          `workspace ${workspaceId} was interrupted; it runs again`,
        );
      }
      let built: BatchChangeset[] = [];
      const changesetEvents: BatchRunEvent[] = [];
      let status: BatchWorkspaceStatus = result.status;
      let error = result.error;
      if (status === "completed") {
        try {
          built = buildChangesets(spec, [{ workspace, result: result.result }], {
            onEvent: (event) => changesetEvents.push(event),
          });
        } catch (buildError) {
          status = "failed";
          error = errorMessage(buildError);
          changesetEvents.length = 0;
        }
      }
      outcome = {
        status,
        error,
        diff: result.result?.diff ?? null,
        steps: result.steps,
        changesets: built,
        events: changesetEvents,
      };
    } catch (error) {
      await writer.flush().catch(() => {});
      if (
        (BatchesError.isInstance(error) && error.code === "interrupted") ||
        context.signal.aborted
      ) {
        // Nobody runs the workspace until the queue delivers its task again: say so.
        await this.#db
          .update(workspaces)
          .set({ status: "pending", updatedAt: new Date() })
          .where(claimedBy(workspaceId, claim))
          .catch(() => {});
        throw error;
      }
      // A job that cannot even start (its repository is gone, git breaks) fails its workspace;
      // the queue does not retry what would fail the same way.
      outcome = {
        status: "failed",
        error: `the workspace could not run: ${errorMessage(error)}`,
        diff: null,
        steps: [],
        changesets: [],
        events: [],
      };
    } finally {
      clearInterval(poll);
      if (options.keep_logs !== true) await made.remove?.().catch(() => {});
    }
    // Progress that could not be stored is lost; the end below is what counts. Writing it may
    // fail (the database gone): the job then throws, and the queue runs it again, resuming from
    // the step cache.
    await writer.flush().catch(() => {});
    await this.#finishWorkspace(row, run, options, claim, outcome);
  }

  async #loadJob(workspaceId: string): Promise<{
    row: WorkspaceRow;
    run: RunRow;
    spec: BatchSpec;
    specDirectory: string | null;
    definition: StoredWorkspaceDefinition;
  } | null> {
    const [found] = await this.#db
      .select({ row: workspaces, run: batchRuns, spec: batchSpecs })
      .from(workspaces)
      .innerJoin(batchRuns, eq(batchRuns.id, workspaces.batchRunId))
      .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
      .where(eq(workspaces.id, workspaceId));
    // Deleted, or finished by an earlier delivery of this task: nothing to do (at least once).
    if (found === undefined || TERMINAL.includes(found.row.status)) return null;
    // The source is what was validated when the run was made; parsed again (without the mount
    // check, which ran then) it gives the typed canonical spec.
    const parsed = parseBatchSpec(found.spec.source, { file: found.spec.file ?? "spec.yaml" });
    if (parsed.spec === undefined) {
      throw new BatchesError(
        "invalid_spec",
        `the stored spec of run ${found.run.id} no longer validates:\n${parsed.diagnostics.map(formatDiagnostic).join("\n")}`,
      );
    }
    return {
      row: found.row,
      run: found.run,
      spec: parsed.spec,
      specDirectory: found.spec.specDirectory,
      definition: StoredWorkspaceDefinitionSchema.parse(found.row.definition),
    };
  }

  /**
   * Removes the checkouts earlier attempts at the workspace left in this work directory (an
   * executor killed mid-step leaves its checkout behind), and their worktree registrations.
   */
  async #clearCheckouts(repositoryPath: string, workRoot: string, workspaceId: string) {
    const stale = (await readdir(workRoot)).filter(
      (name) => name === workspaceId || name.startsWith(`${workspaceId}.`),
    );
    for (const name of stale) await rm(join(workRoot, name), { recursive: true, force: true });
    await repositoryGit(
      repositoryPath,
      ["worktree", "prune"],
      `pruning worktrees of ${repositoryPath}`,
      {
        writes: true,
      },
    );
  }

  /**
   * Writes a workspace's end once, with its `workspace_finished` event and its changesets: only
   * while this attempt still holds the claim (a cancel, the executor that took the job over, or
   * an earlier delivery of the same job may have ended it), then finishes the run when it was
   * the last.
   */
  async #finishWorkspace(
    row: WorkspaceRow,
    run: RunRow,
    options: BatchRunOptions,
    claim: WorkspaceClaim,
    outcome: WorkspaceOutcome,
  ): Promise<void> {
    await this.#db.transaction(async (transaction) => {
      const [finished] = await transaction
        .update(workspaces)
        .set({
          status: outcome.status,
          error: outcome.error,
          diff: outcome.diff,
          finishedAt: new Date(),
          updatedAt: new Date(),
        })
        .where(claimedBy(row.id, claim))
        .returning({ id: workspaces.id });
      if (finished === undefined) return;
      await appendRunEvents(transaction, run.id, [
        {
          type: "workspace_finished",
          workspace: rowRef(row),
          status: outcome.status,
          error: outcome.error,
        },
        ...outcome.events,
      ]);
      for (const step of outcome.steps) {
        const values = {
          outcome: step.outcome,
          runtime: step.runtime,
          shell: step.shell,
          exitCode: step.exitCode,
          durationMs: Math.round(step.durationMs),
          cacheKey: step.cacheKey,
          stdout: step.stdout,
          stderr: step.stderr,
          finishedAt: new Date(),
        };
        await transaction
          .insert(workspaceSteps)
          .values({ workspaceId: row.id, stepIndex: step.stepIndex, ...values })
          .onConflictDoUpdate({
            target: [workspaceSteps.workspaceId, workspaceSteps.stepIndex],
            set: values,
          });
      }
      for (const changeset of outcome.changesets) {
        await transaction.insert(changesets).values({
          batchRunId: run.id,
          workspaceId: row.id,
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
        });
      }
      if (options.fail_fast === true && outcome.status !== "completed") {
        await this.#cancelWorkspaces(
          transaction,
          run.id,
          `cancelled by --fail-fast: workspace ${row.repository}${row.path === "" ? "" : `/${row.path}`} failed`,
          row.id,
        );
      }
      await this.#finishRunIfDone(transaction, run.id, options);
    });
  }

  /** Ends the run when no workspace is left to run: completed, or failed when any failed. */
  async #finishRunIfDone(
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
      await this.#enqueueApply(transaction, runId);
      return;
    }
    await transaction
      .update(batchRuns)
      .set({ status, finishedAt: new Date(), error })
      .where(eq(batchRuns.id, runId));
    await this.#appendFinished(
      transaction,
      runId,
      status,
      error,
      error === null ? null : "workspaces_failed",
    );
  }

  async #appendFinished(
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
}

function emptySummary(): BatchRunSummary {
  return { workspaces: 0, changesets: 0, steps_run: 0, steps_cached: 0, failed: 0 };
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

/** A batch change's counts before anything was published (this service publishes nothing). */
function emptyBatchChangeStats(): BatchChangeStats {
  return {
    total: 0,
    unpublished: 0,
    draft: 0,
    open: 0,
    merged: 0,
    closed: 0,
    deleted: 0,
    checks_failing: 0,
    conflicting: 0,
    approved: 0,
  };
}

function emptyStats(): BatchRunStats {
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

/**
 * The counts of each run (workspaces by state, changesets, steps run and cached): three grouped
 * queries for any number of runs, so listing runs costs the same for one run as for a hundred.
 */
async function runStats(
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
async function summaryOf(transaction: Transaction, runId: string): Promise<BatchRunSummary> {
  const stats = (await runStats(transaction, [runId])).get(runId) ?? emptyStats();
  return {
    workspaces: stats.workspaces,
    changesets: stats.changesets,
    steps_run: stats.steps_run,
    steps_cached: stats.steps_cached,
    failed: stats.failed + stats.cancelled,
  };
}

/** The policy of a run's `acp` steps that name none: the run's, else config.json's. */
function acpPermissionsDefault(
  defaults: BatchCodingAgentOptions | undefined,
  run: BatchCodingAgentOptions | undefined,
): { defaultPermissions?: AcpStepPermissions } {
  const chosen = run?.acp_permissions ?? defaults?.acp_permissions;
  return chosen === undefined ? {} : { defaultPermissions: chosen };
}

type WireInstallSource = NonNullable<BatchCodingAgentOptions["install_source"]>;

/** An install source as config.json and the API spell it, as the renderer takes it. */
function installSourceOf(source: WireInstallSource): InstallSource {
  if (source.kind === "release") return { kind: "release", baseUrl: source.base_url };
  if (source.kind === "npm") {
    return { kind: "npm", ...(source.registry ? { registry: source.registry } : {}) };
  }
  return { kind: "installed", ...(source.path ? { path: source.path } : {}) };
}

/**
 * The service's agent settings with a run's own on top, per agent type. A run's
 * `install_source` replaces the service's default one but not the service's per-type
 * `install_sources` (an operator's offline mirror for one agent stays in force); a run's
 * per-type entries replace the service's for those types.
 */
export function codingAgentOptions(
  defaults: BatchCodingAgentOptions | undefined,
  run: BatchCodingAgentOptions | undefined,
): CodingAgentOptions {
  const source = run?.install_source ?? defaults?.install_source;
  const perType = { ...defaults?.install_sources, ...run?.install_sources };
  return {
    versions: { ...defaults?.versions, ...run?.versions },
    models: { ...defaults?.models, ...run?.models },
    ...(source === undefined ? {} : { installSource: installSourceOf(source) }),
    ...(Object.keys(perType).length === 0
      ? {}
      : {
          installSources: Object.fromEntries(
            Object.entries(perType).map(([type, given]) => [type, installSourceOf(given)]),
          ),
        }),
  };
}

function requeued() {
  return {
    status: "pending" as const,
    error: null,
    diff: null,
    finishedAt: null,
    updatedAt: new Date(),
  };
}

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

/** How a workspace's job ended, as #finishWorkspace writes it. */
/** A workspace that is not started because its run's model budget is spent. */
function notStarted(reason: string): WorkspaceOutcome {
  return {
    status: "cancelled",
    error: `not started: ${reason}`,
    diff: null,
    steps: [],
    changesets: [],
    events: [],
  };
}

interface WorkspaceOutcome {
  status: BatchWorkspaceStatus;
  error: string | null;
  diff: string | null;
  steps: readonly StepRecord[];
  changesets: readonly BatchChangeset[];
  /** Told after `workspace_finished` (the changesets' events). */
  events: readonly BatchRunEvent[];
}

/** Which attempt of which executor runs a workspace: what its writes are fenced by. */
interface WorkspaceClaim {
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

function rowRef(row: WorkspaceRow) {
  return { repository: row.repository, branch: row.branch, path: row.path, revision: row.revision };
}

/**
 * Run and workspace ids are UUIDs: anything else names none, and is `not_found` here rather than
 * a database error for whoever asked (a route, a stream, an executor).
 */
function knownId(id: string, what: string): string {
  if (!z.uuid().safeParse(id).success) throw notFound(what, id);
  return id;
}

function notFound(what: string, id: string): BatchesError {
  return new BatchesError("not_found", `no ${what} with id ${JSON.stringify(id)}`);
}
