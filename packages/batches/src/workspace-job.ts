// The workspace job (queue task `batch_workspace`): one attempt at one workspace of a run, on
// whichever executor claimed its task. The attempt claims the workspace (run-store.ts), runs its
// steps in a checkout of its own with the shared step cache (or takes the work of the session it
// continues), builds its changesets, and writes its end once, fenced by its claim. Progress goes
// to the run's event log as it happens. An attempt interrupted by its worker gives the workspace
// back; the queue delivers the task again and the next attempt resumes after the newest cached
// step.
import { mkdir, readdir, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { type BatchSpec, formatDiagnostic, parseBatchSpec } from "@deckhand/batch-spec";
import type { TaskContext } from "@deckhand/db";
import { errorMessage } from "@deckhand/errors";
import type {
  BatchChangeset,
  BatchRunEvent,
  BatchRunOptions,
  BatchWorkspaceStatus,
} from "@deckhand/wire";
import { BatchesError } from "./batches-error.ts";
import { buildChangesets } from "./build-changesets.ts";
import { checkoutWorkspace, type WorkspaceCheckout } from "./checkout-workspace.ts";
import type { ExecutionEnvironment } from "./execution-environment.ts";
import { keepRecent } from "./recent-runs.ts";
import { repositoryGit } from "./repository-git.ts";
import type { RepositorySource } from "./repository-source.ts";
import type { Workspace } from "./resolve-workspaces.ts";
import { type WorkspaceClaim, type WorkspaceEnd, workspaceJobId } from "./run-store.ts";
import { runWorkspace } from "./run-workspace.ts";
import { StepBoundaryProgress } from "./step-boundary-progress.ts";
import type { StepCache } from "./step-cache.ts";
import {
  StoredRunOptionsSchema as StoredOptions,
  type StoredWorkspaceDefinition,
  StoredWorkspaceDefinitionSchema,
} from "./stored-run.ts";
import type { StoredJob, WorkspaceJobStore } from "./workspace-job-store.ts";
import type { WorkspaceRunResult } from "./workspace-run-report.ts";
import { takenOverRun } from "./workspace-takeover.ts";

/** How often a running job checks whether its workspace was cancelled by someone else. */
const CANCEL_POLL_MS = 1_000;

export interface WorkspaceJobOptions {
  /** The database (RunStore), or the server's executor API for an executor without it. */
  store: WorkspaceJobStore;
  cache: StepCache;
  environment: ExecutionEnvironment;
  repositories: RepositorySource;
  /** Model spend budgets: a workspace whose run's budget is spent is not started. */
  budgets?: RunBudgets | undefined;
  /** How long progress waits for the next step boundary at most; default HELD_PROGRESS_MS. */
  progressHoldMs?: number;
}

/** Whether a run's model spend budget is spent: why, or null while it is not. */
export interface RunBudgets {
  runBudgetReached(runId: string): Promise<string | null>;
  /**
   * What `runBudgetReached` answers for a run with these options before any of its workspaces
   * spent anything; without it, no workspace is complete at its run's creation.
   */
  newRunBudgetReached?(options: BatchRunOptions): Promise<string | null>;
}

/** A job loaded: its stored rows, its spec parsed again, and its workspace's definition. */
interface LoadedJob extends StoredJob {
  parsed: BatchSpec;
  options: BatchRunOptions;
  definition: StoredWorkspaceDefinition;
}

/**
 * Watches the claim while the steps run: stops them when the workspace was cancelled or
 * another attempt took it over, in which case this attempt reports nothing more (its step rows
 * are the new attempt's now).
 */
class ClaimWatch {
  superseded = false;
  readonly signal: AbortSignal;
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(
    store: WorkspaceJobStore,
    workspaceId: string,
    claim: WorkspaceClaim,
    worker: AbortSignal,
  ) {
    const controller = new AbortController();
    this.signal = AbortSignal.any([controller.signal, worker]);
    this.#timer = setInterval(() => {
      void store
        .claimState(workspaceId, claim)
        .then((state) => {
          if (!state.holds) this.superseded = true;
          if (this.superseded || !state.running) controller.abort();
        })
        .catch(() => {});
    }, CANCEL_POLL_MS);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/** The workspace a stored definition describes, with the steps of the spec it names. */
function workspaceOf(job: LoadedJob): Workspace {
  const { row, definition, parsed } = job;
  return {
    repository: { ...definition.repository, url: definition.repository.url ?? undefined },
    branch: row.branch,
    revision: row.revision,
    path: row.path,
    // A session's work may touch any file: a workspace continuing one is checked out whole.
    onlyFetchWorkspace: definition.only_fetch_workspace && definition.takeover === undefined,
    searchResultPaths: definition.search_result_paths,
    steps: definition.step_indexes.map((index) => ({ index, step: parsed.steps![index]! })),
  };
}

/** A workspace's end from its run's result: its changesets built when it completed. */
export function endOf(
  spec: BatchSpec,
  workspace: Workspace,
  result: WorkspaceRunResult,
): WorkspaceEnd {
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
  return {
    status,
    error,
    diff: result.result?.diff ?? null,
    steps: result.steps,
    changesets: built,
    events: changesetEvents,
  };
}

/** A workspace that is not started because its run's model budget is spent. */
export function notStarted(reason: string): WorkspaceEnd {
  return {
    status: "cancelled",
    error: `not started: ${reason}`,
    diff: null,
    steps: [],
    changesets: [],
    events: [],
  };
}

export class WorkspaceJob {
  readonly #options: WorkspaceJobOptions;
  /**
   * Per run, its spec as parsed: a run's workspaces share one spec, which its first job this
   * process takes parses (a parse is the YAML and the schema, milliseconds a job).
   */
  readonly #runSpecs = new Map<string, { source: string; parsed: BatchSpec }>();

  constructor(options: WorkspaceJobOptions) {
    this.#options = options;
  }

  async run(workspaceId: string, context: Pick<TaskContext, "workerId" | "signal">): Promise<void> {
    const { store } = this.#options;
    const job = await this.#load(workspaceId);
    if (job === null) return;
    const claim = await store.claim(job.row, context.workerId);
    if (claim === null) return;
    // A run whose budget is spent dispatches no further workspace.
    const spent = await this.#options.budgets?.runBudgetReached(job.run.id);
    if (spent) {
      await store.finishWorkspace(job.row, job.run, job.options, claim, notStarted(spent));
      return;
    }
    await store.start(job.row);
    const writer = store.progress(job.run.id, workspaceId);
    const progress = new StepBoundaryProgress(writer, this.#options.progressHoldMs);
    const watch = new ClaimWatch(store, workspaceId, claim, context.signal);
    // Progress goes to the log a step boundary at a time; the workspace's end (and its
    // changesets, and the progress told since the last step started) is written with the row
    // that records it, once, by the attempt that holds the claim (finishWorkspace): an attempt
    // killed after it reported its end, or one that lost its claim, adds no second end.
    const report = (event: BatchRunEvent) => {
      if (watch.superseded || event.type === "workspace_finished" || event.type === "changeset")
        return;
      progress.tell(event);
    };
    const workspace = workspaceOf(job);
    const made: { remove?: () => Promise<void> } = {};
    let end: WorkspaceEnd;
    try {
      const result = await this.#execute(job, workspace, claim, watch.signal, report, made);
      if (context.signal.aborted && result.status === "cancelled") {
        // The worker gave the task up (shutdown, lost lease): the queue runs it again, and the
        // step cache lets that attempt resume here.
        throw new BatchesError(
          "interrupted",
          `workspace ${workspaceId} was interrupted; it runs again`,
        );
      }
      end = endOf(job.parsed, workspace, result);
    } catch (error) {
      progress.release();
      await writer.flush().catch(() => {});
      if (
        (BatchesError.isInstance(error) && error.code === "interrupted") ||
        context.signal.aborted
      ) {
        // Nobody runs the workspace until the queue delivers its task again: say so.
        await store.release(workspaceId, claim).catch(() => {});
        throw error;
      }
      // A job that cannot even start (its repository is gone, git breaks) fails its workspace;
      // the queue does not retry what would fail the same way.
      end = {
        status: "failed",
        error: `the workspace could not run: ${errorMessage(error)}`,
        diff: null,
        steps: [],
        changesets: [],
        events: [],
      };
    } finally {
      watch.stop();
      // Before the end is written: whoever sees the workspace (or its run) ended finds its
      // checkout gone.
      if (job.options.keep_logs !== true) await made.remove?.().catch(() => {});
    }
    // Progress that could not be stored is lost; the end below is what counts. Writing it may
    // fail (the database gone): the job then throws, and the queue runs it again, resuming from
    // the step cache.
    await writer.flush().catch(() => {});
    const held = progress.take();
    const written = await store.finishWorkspace(job.row, job.run, job.options, claim, {
      ...end,
      progress: held,
    });
    if (!written && held.length > 0) {
      // The workspace ended otherwise (a cancel, another attempt): its log still tells this
      // attempt's steps, as it did when each was written as it happened.
      progress.giveBack(held);
      await writer.flush().catch(() => {});
    }
  }

  /**
   * The job's rows and its spec, parsed again from the source that was validated when the run was
   * made (without the mount check, which ran then); null when there is nothing to do.
   */
  async #load(workspaceId: string): Promise<LoadedJob | null> {
    const found = await this.#options.store.job(workspaceId);
    if (found === null) return null;
    return {
      ...found,
      parsed: this.#specOf(found),
      options: StoredOptions.parse(found.run.options),
      definition: StoredWorkspaceDefinitionSchema.parse(found.row.definition),
    };
  }

  /** The run's spec, parsed once in this process (nothing alters a parsed spec). */
  #specOf(found: StoredJob): BatchSpec {
    const known = this.#runSpecs.get(found.run.id);
    if (known !== undefined && known.source === found.spec.source) return known.parsed;
    const parsed = parseBatchSpec(found.spec.source, { file: found.spec.file ?? "spec.yaml" });
    if (parsed.spec === undefined) {
      throw new BatchesError(
        "invalid_spec",
        `the stored spec of run ${found.run.id} no longer validates:\n${parsed.diagnostics.map(formatDiagnostic).join("\n")}`,
      );
    }
    keepRecent(this.#runSpecs, found.run.id, { source: found.spec.source, parsed: parsed.spec });
    return parsed.spec;
  }

  /** Runs the workspace's steps (or takes the session's work it continues). */
  async #execute(
    job: LoadedJob,
    workspace: Workspace,
    claim: WorkspaceClaim,
    signal: AbortSignal,
    report: (event: BatchRunEvent) => void,
    made: { remove?: () => Promise<void> },
  ): Promise<WorkspaceRunResult> {
    const { environment, repositories, cache } = this.#options;
    const { row, options, definition } = job;
    // One directory per attempt: an earlier attempt still alive on this machine (its lease
    // lapsed) removes only its own checkout when it stops, never this one.
    const workRoot = resolve(environment.directories.workDirectory);
    const checkoutDirectory = join(workRoot, `${row.id}.${claim.attempt}`);
    // Made only when a step must run: a workspace answered wholly from the cache needs no
    // repository access and no checkout.
    const checkout = async () => {
      // A directory host's repository is used where it was found, and checked only when the
      // checkout fails there (one git process less per workspace); a URL host's is located first.
      const unchecked = repositories.unfetchedPath(workspace.repository);
      const locate = () => repositories.locate(workspace.repository, row.revision, signal);
      const repositoryPath = unchecked ?? (await locate());
      workspace.repository = { ...workspace.repository, path: repositoryPath };
      await mkdir(workRoot, { recursive: true });
      let done: WorkspaceCheckout;
      try {
        await clearCheckouts(repositoryPath, workRoot, row.id);
        done = await checkoutWorkspace(workspace, checkoutDirectory, { signal });
      } catch (error) {
        // The repository gone, or without the commit: say so, as locating it first would have.
        if (unchecked !== null && !signal.aborted) await locate();
        throw error;
      }
      made.remove = done.remove;
      return done;
    };
    // A workspace that continues a session takes its work instead of running the steps.
    const execute = definition.takeover ? takenOverRun(definition.takeover) : runWorkspace;
    return execute({
      workspace,
      spec: job.parsed,
      checkout,
      environment,
      ...(job.spec.specDirectory !== null ? { specDirectory: job.spec.specDirectory } : {}),
      runtime: options.runtime ?? "auto",
      ...(options.coding_agent !== undefined ? { codingAgent: options.coding_agent } : {}),
      ...(options.timeout_ms !== undefined ? { timeoutMs: options.timeout_ms } : {}),
      cache,
      clearCache: options.clear_cache ?? false,
      // The images the run's creation and its other workspaces found (a container step then
      // costs one engine process, its run), as they found them.
      images: environment.runImages(job.run.id),
      // The job, as model usage and its token name it: one per workspace (and attempt).
      jobId: workspaceJobId(row.id),
      signal,
      onEvent: report,
    });
  }
}

/**
 * Removes the checkouts earlier attempts at the workspace left in this work directory (an
 * executor killed mid-step leaves its checkout behind), and their worktree registrations. The
 * first attempt, which finds none, starts no git process here.
 */
async function clearCheckouts(repositoryPath: string, workRoot: string, workspaceId: string) {
  const stale = (await readdir(workRoot)).filter(
    (name) => name === workspaceId || name.startsWith(`${workspaceId}.`),
  );
  if (stale.length === 0) return;
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
