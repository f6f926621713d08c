// Taking over a workspace: a person opens an interactive session on a finished workspace (its
// revision, with its result committed as the session branch's first commit), works on it with
// any agent, and what they apply in the session becomes the workspace's result on the next run
// of the spec, instead of its steps'. The session domain is reached through `WorkspaceSessions`,
// an interface the composing application implements (over @deckhand/sessions in the server), so
// this package and the session package do not depend on each other.
import {
  batchRuns,
  batchSpecs,
  type Database,
  stepResults,
  workspaceSteps,
  workspaces,
} from "@deckhand/db";
import { errorMessage } from "@deckhand/errors";
import type { BatchRunEvent, BatchTakeoverResponse } from "@deckhand/wire";
import { and, asc, desc, eq, inArray, isNotNull, sql } from "drizzle-orm";
import { z } from "zod";
import { BatchesError } from "./batches-error.ts";
import { nulSeparated, repositoryGit } from "./repository-git.ts";
import type { Workspace } from "./resolve-workspaces.ts";
import type { RunWorkspaceOptions } from "./run-workspace.ts";
import type { CachedStepResult } from "./step-cache.ts";
import { StoredStepKindsSchema, stepLabel } from "./step-label.ts";
import { type StoredTakeover, StoredWorkspaceDefinitionSchema } from "./stored-run.ts";
import { applyWorkspaceDiff, collectWorkspaceDiff } from "./workspace-diff.ts";
import {
  type StepRecord,
  unstartedStep,
  type WorkspaceRunResult,
  workspaceRef,
} from "./workspace-run-report.ts";

/** Where a workspace's repository is, as the session domain names a project's repository. */
export type WorkspaceSessionRepository =
  /** A directory host's working copy, on this machine. */
  | { kind: "working_copy"; path: string }
  /** A git URL host's URL (without a password), cloned for the session. */
  | { kind: "url"; url: string };

/** What a session opened on a workspace starts with. */
export interface OpenWorkspaceSessionRequest {
  repository: WorkspaceSessionRepository;
  /** The repository's name on its code host. */
  repositoryName: string;
  /** The workspace's branch: the default branch of a project created for the repository. */
  branch: string;
  /** The commit the session branch starts from: the workspace's revision. */
  baseRevision: string;
  /** The workspace's result against `baseRevision`, committed first; "" for none. */
  diff: string;
  /** The message of that first commit. */
  commitMessage: string;
  title: string;
  /**
   * What the session is about, in markdown: what the workspace ran, its diff and why it failed,
   * shown first in the session and given to its agents (see `takeoverContext`).
   */
  context: string;
}

/** A session as taking over sees it. */
export interface WorkspaceSession {
  sessionId: string;
  projectId: string;
  open: boolean;
  /** The session's worktree; null once it is closed. */
  worktreePath: string | null;
}

/** What was applied in a session: its branch's commits since its base, as one diff. */
export interface WorkspaceSessionWork {
  /** The session's branch. */
  branch: string;
  /** The commit the session started from. */
  baseRevision: string;
  /** The branch's commit now. */
  head: string;
  /** `baseRevision..head` as `git diff --binary --full-index` with `a/` and `b/` prefixes. */
  diff: string;
}

/** The session domain, as taking over a workspace needs it. */
export interface WorkspaceSessions {
  /** Opens a session on the repository at `baseRevision` with `diff` committed first. */
  open(request: OpenWorkspaceSessionRequest): Promise<WorkspaceSession>;
  /** The session, or null when there is none with this id. */
  find(sessionId: string): Promise<WorkspaceSession | null>;
  /** What was applied in the session; throws when it cannot be read (its branch is gone). */
  work(sessionId: string): Promise<WorkspaceSessionWork>;
  /** Closes a session nobody will use (one that lost a race to take a workspace over). */
  discard(sessionId: string): Promise<void>;
}

type WorkspaceRow = typeof workspaces.$inferSelect;

/** Several workspaces of a run are told apart by repository, branch and path. */
function workspaceKey(workspace: { repository: string; branch: string; path: string }): string {
  return JSON.stringify([workspace.repository, workspace.branch, workspace.path]);
}

function where(row: { repository: string; path: string }): string {
  return row.path === "" ? row.repository : `${row.repository} (${row.path})`;
}

const OutputsSchema = z.record(z.string(), z.unknown());

/**
 * Taking workspaces over, and finding the takeover each workspace of a new run continues; the
 * batch-run service delegates both here.
 */
export class WorkspaceTakeovers {
  readonly #db: Database;
  readonly #sessions: WorkspaceSessions | undefined;
  /** One takeover of a workspace at a time in this process. */
  readonly #busy = new Map<string, Promise<unknown>>();

  constructor(db: Database, sessions: WorkspaceSessions | undefined) {
    this.#db = db;
    this.#sessions = sessions;
  }

  /**
   * Opens a session on a finished workspace, or answers the workspace's session again while it
   * is open. Throws `not_found` for an unknown workspace and `conflict` while it is pending or
   * running.
   */
  async takeOver(workspaceId: string): Promise<BatchTakeoverResponse> {
    const previous = this.#busy.get(workspaceId) ?? Promise.resolve();
    const current = previous.catch(() => {}).then(() => this.#takeOver(workspaceId));
    this.#busy.set(workspaceId, current);
    try {
      return await current;
    } finally {
      if (this.#busy.get(workspaceId) === current) this.#busy.delete(workspaceId);
    }
  }

  async #takeOver(workspaceId: string): Promise<BatchTakeoverResponse> {
    const [found] = await this.#db
      .select({ row: workspaces, name: batchSpecs.name })
      .from(workspaces)
      .innerJoin(batchRuns, eq(batchRuns.id, workspaces.batchRunId))
      .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
      .where(eq(workspaces.id, workspaceId));
    if (found === undefined) {
      throw new BatchesError("not_found", `no workspace with id ${JSON.stringify(workspaceId)}`);
    }
    const { row, name } = found;
    if (row.status === "pending" || row.status === "running") {
      throw new BatchesError(
        "conflict",
        `workspace ${workspaceId} is still ${row.status}; take it over once it finished`,
      );
    }
    const sessions = this.#sessions;
    if (sessions === undefined) {
      throw new BatchesError(
        "conflict",
        "this process has no interactive sessions to take a workspace over with; ask the server",
      );
    }
    if (row.takeoverSessionId !== null) {
      const existing = await sessions.find(row.takeoverSessionId);
      if (existing?.open && existing.worktreePath !== null) return response(row, existing);
    }
    const definition = StoredWorkspaceDefinitionSchema.parse(row.definition);
    const { repository } = definition;
    const steps = await this.#db
      .select({
        stepIndex: workspaceSteps.stepIndex,
        outcome: workspaceSteps.outcome,
        exitCode: workspaceSteps.exitCode,
        diff: stepResults.diff,
      })
      .from(workspaceSteps)
      .leftJoin(stepResults, eq(stepResults.cacheKey, workspaceSteps.cacheKey))
      .where(eq(workspaceSteps.workspaceId, row.id))
      .orderBy(asc(workspaceSteps.stepIndex));
    const [stored] = await this.#db
      .select({ spec: batchSpecs.spec })
      .from(batchRuns)
      .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
      .where(eq(batchRuns.id, row.batchRunId));
    const kinds = StoredStepKindsSchema.safeParse(stored?.spec).data;
    // A failed workspace has no final diff: it goes on from what its last finished step made.
    const diff = row.diff ?? steps.findLast((step) => step.diff !== null)?.diff ?? "";
    const opened = await sessions.open({
      repository:
        repository.host.type === "directory"
          ? { kind: "working_copy", path: repository.path }
          : { kind: "url", url: repository.url ?? repository.host.url },
      repositoryName: row.repository,
      branch: row.branch,
      baseRevision: row.revision,
      diff,
      commitMessage: [
        `${name}: the result of batch workspace ${where(row)}`,
        "",
        `Committed by Deckhand when workspace ${row.id} of batch run ${row.batchRunId} (at ${row.revision}) was taken over.`,
      ].join("\n"),
      title: `${name}: ${where(row)}`,
      context: takeoverContext({
        batchChange: name,
        workspace: row,
        steps: definition.step_indexes.map((index) => {
          const step = steps.find((candidate) => candidate.stepIndex === index);
          return {
            index,
            label: stepLabel(kinds?.steps[index]),
            outcome: step?.outcome ?? null,
            exitCode: step?.exitCode ?? null,
          };
        }),
        diff,
      }),
    });
    // Another replica may have taken the workspace over meanwhile: the first one recorded wins.
    const [recorded] = await this.#db
      .update(workspaces)
      .set({ takeoverSessionId: opened.sessionId, updatedAt: new Date() })
      .where(
        and(
          eq(workspaces.id, workspaceId),
          row.takeoverSessionId === null
            ? sql`${workspaces.takeoverSessionId} is null`
            : eq(workspaces.takeoverSessionId, row.takeoverSessionId),
        ),
      )
      .returning({ id: workspaces.id });
    if (recorded === undefined) {
      await sessions.discard(opened.sessionId).catch(() => {});
      return this.#takeOver(workspaceId);
    }
    return response(row, opened);
  }

  /**
   * For the workspaces a new run of the spec `specName` resolved: the session each continues,
   * with its work. A workspace continues a session when the latest earlier workspace with its
   * repository, branch and path, in a run of a spec of the same name, belongs to one. A session
   * whose work cannot be read is reported as a warning, and that workspace runs its steps.
   */
  async continuations(
    specName: string,
    resolved: readonly Workspace[],
  ): Promise<{ takeovers: Map<string, StoredTakeover>; warnings: string[] }> {
    const takeovers = new Map<string, StoredTakeover>();
    const warnings: string[] = [];
    if (resolved.length === 0) return { takeovers, warnings };
    const wanted = new Map(
      resolved.map((workspace) => [workspaceKey(refOf(workspace)), workspace] as const),
    );
    const latest = await this.#db
      .selectDistinctOn([workspaces.repository, workspaces.branch, workspaces.path], {
        row: workspaces,
      })
      .from(workspaces)
      .innerJoin(batchRuns, eq(batchRuns.id, workspaces.batchRunId))
      .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
      .where(
        and(
          eq(batchSpecs.name, specName),
          inArray(workspaces.repository, [
            ...new Set(resolved.map((workspace) => workspace.repository.name)),
          ]),
        ),
      )
      .orderBy(
        workspaces.repository,
        workspaces.branch,
        workspaces.path,
        desc(batchRuns.createdAt),
        desc(workspaces.createdAt),
      );
    for (const { row } of latest) {
      const sessionId = row.takeoverSessionId;
      const workspace = wanted.get(workspaceKey(row));
      if (sessionId === null || workspace === undefined) continue;
      if (this.#sessions === undefined) {
        warnings.push(
          `workspace ${where(row)} belongs to session ${sessionId}, whose work this process cannot read; its steps run instead`,
        );
        continue;
      }
      let work: WorkspaceSessionWork;
      try {
        work = await this.#sessions.work(sessionId);
      } catch (error) {
        warnings.push(
          `the work of session ${sessionId}, which took workspace ${where(row)} over, cannot be read (${errorMessage(error)}); its steps run instead`,
        );
        continue;
      }
      if (work.baseRevision !== workspace.revision) {
        warnings.push(
          `workspace ${where(row)} continues session ${sessionId}, whose work is based on ${work.baseRevision.slice(0, 12)}, but ${workspace.branch} is now at ${workspace.revision.slice(0, 12)}: the work is merged onto it, and the workspace fails if that conflicts`,
        );
      }
      takeovers.set(workspaceKey(row), {
        session_id: sessionId,
        branch: work.branch,
        base_revision: work.baseRevision,
        head: work.head,
        diff: work.diff,
        outputs: await this.#outputsOf(row),
      });
    }
    return { takeovers, warnings };
  }

  /** The outputs of a workspace's result: carried over, or those of its last finished step. */
  async #outputsOf(row: WorkspaceRow): Promise<Record<string, unknown>> {
    const definition = StoredWorkspaceDefinitionSchema.safeParse(row.definition);
    if (definition.success && definition.data.takeover !== undefined) {
      return definition.data.takeover.outputs;
    }
    const [last] = await this.#db
      .select({ outputs: stepResults.outputs })
      .from(workspaceSteps)
      .innerJoin(stepResults, eq(stepResults.cacheKey, workspaceSteps.cacheKey))
      .where(and(eq(workspaceSteps.workspaceId, row.id), isNotNull(workspaceSteps.cacheKey)))
      .orderBy(desc(workspaceSteps.stepIndex), asc(stepResults.createdAt))
      .limit(1);
    const outputs = OutputsSchema.safeParse(last?.outputs ?? {});
    return outputs.success ? outputs.data : {};
  }
}

/** How much of a workspace's diff its take-over context quotes; the commit holds all of it. */
const CONTEXT_DIFF_CHARS = 12_000;

export interface TakeoverContextInput {
  batchChange: string;
  workspace: Pick<
    WorkspaceRow,
    "id" | "batchRunId" | "repository" | "branch" | "path" | "revision" | "status" | "error"
  >;
  /** The spec's steps that apply to the workspace, numbered from 0 as the API numbers them. */
  steps: { index: number; label: string; outcome: string | null; exitCode: number | null }[];
  /** What the session's first commit holds: the workspace's result, or its last step's. */
  diff: string;
}

/**
 * What a session opened on a batch workspace starts with, in markdown: where the workspace is,
 * each step by what it runs and how it ended, why it failed, and its diff (the session's first
 * commit). Shown first in the session's chat and given to each agent with its first prompt.
 */
export function takeoverContext(input: TakeoverContextInput): string {
  const { workspace, steps, diff } = input;
  const lines = [
    `Taken over from the batch change **${input.batchChange}**: workspace **${where(workspace)}** on \`${workspace.branch}\` at \`${workspace.revision.slice(0, 12)}\`, which ended **${workspace.status}** (run ${workspace.batchRunId}).`,
    "",
    "Steps:",
    "",
    ...steps.map((step) => {
      const how =
        step.outcome === null
          ? "did not run"
          : `${step.outcome}${step.exitCode !== null && step.exitCode !== 0 ? ` (exit ${step.exitCode})` : ""}`;
      return `- Step ${step.index}: \`${step.label || "(empty)"}\` — ${how}`;
    }),
  ];
  if (workspace.error) {
    lines.push("", "Why it failed:", "", "```text", workspace.error.trim(), "```");
  }
  if (diff.trim() === "") {
    lines.push("", "It changed nothing: the session starts from the workspace's revision.");
  } else {
    const cut = diff.length > CONTEXT_DIFF_CHARS;
    lines.push(
      "",
      "What it changed is this session branch's first commit:",
      "",
      "```diff",
      cut ? `${diff.slice(0, CONTEXT_DIFF_CHARS).trimEnd()}\n…` : diff.trimEnd(),
      "```",
    );
    if (cut)
      lines.push(
        "",
        `(The diff is cut at ${CONTEXT_DIFF_CHARS} characters; the commit has it all.)`,
      );
  }
  lines.push(
    "",
    "What is applied in this session becomes the workspace's result the next time the spec runs, instead of its steps'.",
  );
  return lines.join("\n");
}

function refOf(workspace: Workspace) {
  return { repository: workspace.repository.name, branch: workspace.branch, path: workspace.path };
}

/** The key `continuations` answers under for a resolved workspace. */
export function continuationKey(workspace: Workspace): string {
  return workspaceKey(refOf(workspace));
}

function response(row: WorkspaceRow, session: WorkspaceSession): BatchTakeoverResponse {
  if (session.worktreePath === null) {
    throw new BatchesError("conflict", `session ${session.sessionId} has no worktree`);
  }
  return {
    workspace_id: row.id,
    session_id: session.sessionId,
    project_id: session.projectId,
    worktree_path: session.worktreePath,
  };
}

export interface RunTakenOverWorkspaceOptions {
  workspace: Workspace;
  /** A full (not sparse) checkout at the workspace's revision. */
  checkout: { directory: string };
  takeover: StoredTakeover;
  signal?: AbortSignal;
  onEvent?: (event: BatchRunEvent) => void;
}

/**
 * A workspace's run when it continues a session: its steps are reported skipped, and its
 * result is the session's work, applied to the checkout — merged three ways when the
 * workspace's revision is not the one the session started from. Work that does not merge fails
 * the workspace with what to do: the steps never run instead, which would drop a person's work.
 */
export async function runTakenOverWorkspace(
  options: RunTakenOverWorkspaceOptions,
): Promise<WorkspaceRunResult> {
  const { workspace, checkout, takeover, signal } = options;
  const ref = workspaceRef(workspace);
  const emit = (event: BatchRunEvent) => options.onEvent?.(event);
  const rebased = takeover.base_revision !== workspace.revision;
  emit({ type: "workspace_started", workspace: ref });
  emit({
    type: "workspace_taken_over",
    workspace: ref,
    session_id: takeover.session_id,
    base_revision: takeover.base_revision,
    head: takeover.head,
    rebased,
  });
  const steps: StepRecord[] = workspace.steps.map((step) => ({
    ...unstartedStep(step.index),
    outcome: "skipped",
  }));
  for (const step of steps) {
    emit({
      type: "step_finished",
      workspace: ref,
      step_index: step.stepIndex,
      outcome: "skipped",
      exit_code: null,
      duration_ms: 0,
    });
  }
  const finish = (
    status: WorkspaceRunResult["status"],
    error: string | null,
    result: CachedStepResult | null,
  ): WorkspaceRunResult => {
    emit({ type: "workspace_finished", workspace: ref, status, error });
    return { workspace: ref, status, error, steps, result };
  };
  try {
    if (takeover.diff !== "") {
      if (rebased) await mergeWork(checkout.directory, workspace, takeover, signal);
      else await applyWorkspaceDiff(checkout.directory, takeover.diff, signal);
    }
    const { diff, files } = await collectWorkspaceDiff(
      checkout.directory,
      workspace.revision,
      signal,
    );
    return finish("completed", null, {
      stepIndex: steps.at(-1)?.stepIndex ?? 0,
      exitCode: 0,
      diff,
      files,
      outputs: takeover.outputs,
      stdout: "",
      stderr: "",
    });
  } catch (error) {
    if (signal?.aborted) return finish("cancelled", "the run was cancelled", null);
    return finish("failed", errorMessage(error), null);
  }
}

/** `runWorkspace`'s stand-in for a workspace that continues a session. */
export function takenOverRun(
  takeover: StoredTakeover,
): (options: RunWorkspaceOptions) => Promise<WorkspaceRunResult> {
  return async (options) =>
    runTakenOverWorkspace({
      workspace: options.workspace,
      checkout:
        typeof options.checkout === "function" ? await options.checkout() : options.checkout,
      takeover,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    });
}

/** Merges the session's work onto a checkout of a newer revision, or says what conflicts. */
async function mergeWork(
  directory: string,
  workspace: Workspace,
  takeover: StoredTakeover,
  signal: AbortSignal | undefined,
): Promise<void> {
  const what = `merging the work of session ${takeover.session_id} onto ${workspace.revision}`;
  const applied = await repositoryGit(
    directory,
    ["apply", "--3way", "--binary", "--whitespace=nowarn", "-"],
    what,
    { writes: true, signal, input: takeover.diff, allowedExitCodes: [1] },
  );
  if (applied.exitCode === 0) return;
  const unmerged = nulSeparated(
    (
      await repositoryGit(directory, ["diff", "--name-only", "--diff-filter=U", "-z"], what, {
        signal,
      })
    ).stdout,
  );
  const conflict =
    unmerged.length > 0
      ? `it conflicts in ${unmerged.join(", ")}`
      : `git could not apply it: ${applied.stderr.trim()}`;
  throw new BatchesError(
    "step_failed",
    `the work of session ${takeover.session_id} (branch ${takeover.branch}) is based on ${takeover.base_revision.slice(0, 12)}, and ${workspace.branch} has moved to ${workspace.revision.slice(0, 12)}: ${conflict}. Merge ${workspace.revision.slice(0, 12)} into ${takeover.branch} in the session's worktree (in a project cloned from a URL, fetch it first), then run the spec again; the steps do not run instead, so the session's work is never dropped`,
  );
}
