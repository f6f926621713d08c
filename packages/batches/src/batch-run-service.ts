// The public API of batch runs: resolve a spec's workspaces, create runs from specs, read runs,
// workspaces, steps and changesets back (run-read-model.ts), cancel, retry, apply and take
// workspaces over, and register the jobs that do the work on a worker's task registry. Runs are
// durable work: a spec is resolved into workspaces once, each workspace becomes a queue task
// that any executor (the server's own worker, `deckhand executor` on another machine, the CLI's
// embedded one) claims and runs (workspace-job.ts), and a run's changesets are written as
// branches by its apply job (apply-job.ts). Their state is the run store's (run-store.ts).
import { resolve } from "node:path";
import { type BatchSpec, formatDiagnostic, parseBatchSpec } from "@deckhand/batch-spec";
import type { DbHandle, TaskRegistry } from "@deckhand/db";
import type {
  BatchChangeSummary,
  BatchRun,
  BatchStepDetail,
  BatchTakeoverResponse,
  BatchWorkspace,
  CreateBatchRunRequest,
  ResolveBatchWorkspacesRequest,
  ResolvedBatchWorkspaces,
  StoredBatchChangeset,
} from "@deckhand/wire";
import { z } from "zod";
import { acpProviderCatalogue } from "./acp-step-options.ts";
import { ApplyJob } from "./apply-job.ts";
import { BatchesError } from "./batches-error.ts";
import { cachedWorkspaceEnds } from "./cached-workspace-ends.ts";
import type { CodeHost } from "./code-host-config.ts";
import { probeContainerShellsEarly } from "./container-step-runner.ts";
import { DatabaseStepCache } from "./database-step-cache.ts";
import type { ExecutionEnvironment } from "./execution-environment.ts";
import type { ChangesetPublisher } from "./publishing/changeset-publisher.ts";
import { RepositorySource } from "./repository-source.ts";
import type { Workspace } from "./resolve-workspaces.ts";
import { RunReadModel } from "./run-read-model.ts";
import { RunRecovery } from "./run-recovery.ts";
import {
  BATCH_APPLY_TASK,
  BATCH_WORKSPACE_TASK,
  knownId,
  RunStore,
  type WorkspaceEnd,
  WorkspaceTaskPayloadSchema,
} from "./run-store.ts";
import type { ImageLookups } from "./step-placement.ts";
import { cachedStepCounts } from "./step-plan.ts";
import { type RunBudgets, WorkspaceJob } from "./workspace-job.ts";
import {
  continuationKey,
  type WorkspaceSessions,
  WorkspaceTakeovers,
} from "./workspace-takeover.ts";

export { BATCH_APPLY_TASK, BATCH_WORKSPACE_TASK } from "./run-store.ts";

const ApplyTaskPayloadSchema = z.object({ batch_run_id: z.uuid() });

export interface BatchRunServiceOptions {
  database: DbHandle;
  /** The configured code hosts, read at each resolution (config.json may change). */
  codeHosts: () => readonly CodeHost[];
  /**
   * What this process runs steps with (launcher, container runtime, model-provider access,
   * agents) and where its clones and checkouts live.
   */
  environment: ExecutionEnvironment;
  /**
   * Publishes applied changesets to their code hosts at the end of the apply job, and gives git
   * the code host connections' tokens for cloning, fetching and pushing their repositories.
   */
  publishing?: ChangesetPublisher;
  /**
   * Model spend budgets (budgets/batch-spend.ts): a workspace whose run's budget is spent is not
   * started, and says why.
   */
  budgets?: RunBudgets;
  /**
   * The interactive sessions workspaces are taken over with, and whose work later runs use
   * instead of the steps; without them taking over is refused, and a workspace that continues a
   * session runs its steps with a warning.
   */
  sessions?: WorkspaceSessions;
}

function specError(request: { file?: string | undefined }, diagnostics: string[]): BatchesError {
  return new BatchesError(
    "invalid_spec",
    `${request.file ?? "the batch spec"} is invalid:\n${diagnostics.join("\n")}`,
  );
}

export class BatchRunService {
  readonly #options: BatchRunServiceOptions;
  readonly #store: RunStore;
  readonly #cache: DatabaseStepCache;
  readonly #repositories: RepositorySource;
  readonly #reads: RunReadModel;
  readonly #workspaceJob: WorkspaceJob;
  readonly #applyJob: ApplyJob;
  readonly #recovery: RunRecovery;
  readonly #takeovers: WorkspaceTakeovers;

  constructor(options: BatchRunServiceOptions) {
    const { database, environment, publishing } = options;
    this.#options = options;
    this.#store = new RunStore(database);
    this.#cache = new DatabaseStepCache(database.db);
    // A git URL host's own password, else the token of the code host connection the URL belongs
    // to (none without publishing).
    this.#repositories = new RepositorySource({
      codeHosts: options.codeHosts,
      cacheDirectory: environment.directories.cacheDirectory,
      connections: publishing?.access.gitEnvironment,
    });
    this.#reads = new RunReadModel(this.#store, publishing);
    this.#workspaceJob = new WorkspaceJob({
      store: this.#store,
      cache: this.#cache,
      environment,
      repositories: this.#repositories,
      budgets: options.budgets,
    });
    this.#applyJob = new ApplyJob({
      store: this.#store,
      repositories: this.#repositories,
      publishing,
    });
    this.#recovery = new RunRecovery({
      store: this.#store,
      workDirectory: environment.directories.workDirectory,
    });
    this.#takeovers = new WorkspaceTakeovers(database.db, options.sessions);
  }

  /** The publisher of applied changesets, when this service publishes (for its API routes). */
  get publishing(): ChangesetPublisher | undefined {
    return this.#options.publishing;
  }

  /**
   * Parses a request's spec; throws `invalid_spec` with every diagnostic, located. The providers
   * `acp` steps name are checked against this service's (a read of the providers config).
   */
  async #parse(request: ResolveBatchWorkspacesRequest): Promise<BatchSpec> {
    const file = request.file ?? "spec.yaml";
    const parsed = parseBatchSpec(request.source, {
      file,
      acpProviders: await acpProviderCatalogue(this.#options.environment.acpProviders),
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

  /** The workspaces a spec would run in, before anything runs. */
  async resolve(request: ResolveBatchWorkspacesRequest): Promise<ResolvedBatchWorkspaces> {
    const spec = await this.#parse(request);
    const options = request.options ?? {};
    const { workspaces: resolved, warnings } = await this.#repositories.workspaces(spec, options);
    const cached = await cachedStepCounts(resolved, {
      spec,
      cache: this.#cache,
      runtime: options.runtime ?? "auto",
      environment: this.#options.environment,
      clearCache: options.clear_cache === true,
      ...(request.spec_directory !== undefined
        ? { specDirectory: resolve(request.spec_directory) }
        : {}),
    });
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
    // A run whose steps name images needs the container runtime before its first job can place
    // them: detection (`podman info`, 0.3 s or more) starts now, while the workspaces resolve,
    // instead of when that job starts. Once per process, as before (again after one that found
    // no runtime); nothing for other runs.
    this.#options.environment.containers(spec, options.runtime ?? "auto", {
      detectAgainAfterNone: true,
    });
    const resolved = await this.#repositories.workspaces(spec, options);
    // Workspaces whose latest earlier run was taken over take the session's work instead.
    const continued = await this.#takeovers.continuations(spec.name, resolved.workspaces);
    // The run's image look-ups: its creation looks each image up once (cached results are keyed
    // by image id), and hands what it found to the run's jobs in this process.
    const images: ImageLookups = new Map();
    const ends = await this.#completeWorkspaces(
      request,
      spec,
      resolved.workspaces,
      continued,
      images,
    );
    const queued = resolved.workspaces.some(
      (workspace, index) =>
        !continued.takeovers.has(continuationKey(workspace)) && (ends?.[index] ?? null) === null,
    );
    // The jobs' container steps probe their image's shell: started now, it overlaps storing the
    // run and the jobs' claims and checkouts instead of holding their first step (a container start).
    if (queued) {
      void probeContainerShellsEarly({
        spec,
        runtime: options.runtime ?? "auto",
        environment: this.#options.environment,
        images,
      }).catch(() => {});
    }
    const runId = await this.#store.createRun({
      ends,
      request,
      spec,
      options,
      warnings: [...resolved.warnings, ...continued.warnings],
      workspaces: resolved.workspaces,
      takeovers: continued.takeovers,
      applyEmpty: request.action === "apply" && this.#options.publishing !== undefined,
    });
    this.#options.environment.keepRunImages(runId, images);
    return this.getRun(runId);
  }

  /**
   * The ends of the workspaces whose last step is cached (cached-workspace-ends.ts), which the run
   * completes as it is created instead of queueing their jobs; none when the run clears the cache,
   * when its budget would not let a job start, or for a workspace continuing a session.
   */
  async #completeWorkspaces(
    request: CreateBatchRunRequest,
    spec: BatchSpec,
    workspaces: readonly Workspace[],
    continued: { takeovers: ReadonlyMap<string, unknown> },
    images: ImageLookups,
  ): Promise<(WorkspaceEnd | null)[] | undefined> {
    const options = request.options ?? {};
    if (options.clear_cache === true) return undefined;
    const budgets = this.#options.budgets;
    if (budgets !== undefined) {
      if (budgets.newRunBudgetReached === undefined) return undefined;
      if ((await budgets.newRunBudgetReached(options)) !== null) return undefined;
    }
    const candidates = workspaces.map((workspace) =>
      continued.takeovers.has(continuationKey(workspace)) ? null : workspace,
    );
    const ends = await cachedWorkspaceEnds(
      candidates.filter((workspace) => workspace !== null),
      {
        spec,
        specDirectory: resolve(request.spec_directory ?? process.cwd()),
        cache: this.#cache,
        runtime: options.runtime ?? "auto",
        environment: this.#options.environment,
        images,
      },
    );
    let next = 0;
    return candidates.map((workspace) => (workspace === null ? null : ends[next++]!));
  }

  listRuns(query: { name?: string; limit?: number } = {}): Promise<BatchRun[]> {
    return this.#reads.listRuns(query);
  }

  /**
   * Every batch change (spec name) with its latest run, counts per state and burndown, the
   * most recently run first (of the newest 500 runs).
   */
  listBatchChanges(): Promise<BatchChangeSummary[]> {
    return this.#reads.listBatchChanges();
  }

  getRun(runId: string): Promise<BatchRun> {
    return this.#reads.getRun(runId);
  }

  listWorkspaces(runId: string): Promise<BatchWorkspace[]> {
    return this.#reads.listWorkspaces(runId);
  }

  getWorkspace(workspaceId: string): Promise<BatchWorkspace> {
    return this.#reads.getWorkspace(workspaceId);
  }

  getStep(workspaceId: string, stepIndex: number): Promise<BatchStepDetail> {
    return this.#reads.getStep(workspaceId, stepIndex);
  }

  /** A run's changesets, each with what applying the run will do with it. */
  listChangesets(runId: string): Promise<StoredBatchChangeset[]> {
    return this.#reads.listChangesets(runId);
  }

  /** A run's changesets, and the open pull requests applying it closes (it no longer makes them). */
  listChangesetsWithDropped(
    runId: string,
  ): Promise<{ changesets: StoredBatchChangeset[]; dropped: StoredBatchChangeset[] }> {
    return this.#reads.listChangesetsWithDropped(runId);
  }

  /** Cancels waiting workspaces now; running ones notice within a second and stop. */
  async cancelRun(runId: string): Promise<BatchRun> {
    await this.getRun(runId);
    await this.#store.cancelRun(runId);
    return this.getRun(runId);
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
    await this.#store.requeueFailed(runId, run.options);
    return this.getRun(runId);
  }

  /** Runs one finished workspace again; its cached steps are not run again. */
  async retryWorkspace(workspaceId: string): Promise<BatchWorkspace> {
    const row = await this.#store.workspaceRow(workspaceId);
    if (row.status === "pending" || row.status === "running") {
      throw new BatchesError("conflict", `workspace ${workspaceId} is still ${row.status}`);
    }
    const run = await this.getRun(row.batchRunId);
    await this.#store.requeueWorkspace(row, run.options);
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
    await this.#store.startApply(
      runId,
      run.status,
      subset ? { ...run.options, skip_errors: true } : null,
    );
    return this.getRun(runId);
  }

  /**
   * Removes the checkouts in this process's work directory that no attempt runs any more, with
   * their worktree registrations (run-recovery.ts). Batch workers call this as they start.
   */
  sweepCheckouts(): Promise<number> {
    return this.#recovery.sweepCheckouts();
  }

  /**
   * Ends what the queue gave up on: workspaces and applies whose jobs failed for good
   * (run-recovery.ts). Every batch worker calls this now and then; it is safe to call from many
   * processes at once.
   */
  recoverAbandonedJobs(): Promise<{ workspaces: number; runs: number }> {
    return this.#recovery.recoverAbandonedJobs();
  }

  /** Registers the workspace job, the apply job and publishing's tasks on a worker's registry. */
  register(tasks: TaskRegistry): void {
    tasks.register(BATCH_WORKSPACE_TASK, {
      schema: WorkspaceTaskPayloadSchema,
      handle: (payload, context) => this.#workspaceJob.run(payload.workspace_id, context),
    });
    tasks.register(BATCH_APPLY_TASK, {
      schema: ApplyTaskPayloadSchema,
      handle: (payload, context) => this.#applyJob.run(payload.batch_run_id, context),
    });
    // Tracking and hooks run wherever batch jobs run (the server's batch worker, executors).
    this.#options.publishing?.register(tasks);
  }
}
