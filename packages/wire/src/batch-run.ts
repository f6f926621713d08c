import { z } from "zod";
import { RolloutWaitSchema } from "./rollout.ts";
import { SandboxKindSchema } from "./sandbox.ts";

/**
 * Progress of a batch run, one event per frame of a run's stream in the API and per JSON line of
 * `deckhand batch preview|apply --json`. Every workspace event names the workspace it belongs
 * to, so events of workspaces running side by side can be told apart; steps are named by their
 * index in the spec's `steps`. Field names are snake_case, as everywhere in the API.
 */

/** Which workspace an event is about. */
export const BatchWorkspaceRefSchema = z.object({
  repository: z.string(),
  branch: z.string(),
  /** The workspace's directory in the repository; "" for the root. */
  path: z.string(),
  /** The commit the steps run on. */
  revision: z.string(),
});
export type BatchWorkspaceRef = z.infer<typeof BatchWorkspaceRefSchema>;

/**
 * Where a step ran: on the host (bash where it has one, else sh), in its container image, or in
 * its image as a Kubernetes Job.
 */
export const BatchStepRuntimeSchema = z.enum(["local", "container", "kubernetes"]);
export type BatchStepRuntime = z.infer<typeof BatchStepRuntimeSchema>;

/** How a step ended: it ran (and succeeded), came from the cache, was skipped by `if:`, or failed. */
export const BatchStepOutcomeSchema = z.enum(["run", "cached", "skipped", "failed"]);
export type BatchStepOutcome = z.infer<typeof BatchStepOutcomeSchema>;

/** How a workspace ended. */
export const BatchWorkspaceStatusSchema = z.enum(["completed", "failed", "timed_out", "cancelled"]);
export type BatchWorkspaceStatus = z.infer<typeof BatchWorkspaceStatusSchema>;

export const BatchChangesetStatsSchema = z.object({
  files: z.int().min(0),
  insertions: z.int().min(0),
  deletions: z.int().min(0),
});
export type BatchChangesetStats = z.infer<typeof BatchChangesetStatsSchema>;

/** One changeset a workspace produces: where it goes, what it says, and its diff. */
export const BatchChangesetSchema = z.object({
  repository: z.string(),
  /** The branch the changeset is based on, and the commit the diff applies to. */
  base_branch: z.string(),
  base_revision: z.string(),
  /** The workspace's directory in the repository; "" for the root. */
  path: z.string(),
  /** The branch the changes are pushed to. */
  branch: z.string(),
  title: z.string(),
  body: z.string(),
  commit_message: z.string(),
  /** `changesetTemplate.commit.author`; null for the default author. */
  commit_author: z.object({ name: z.string(), email: z.string() }).nullable(),
  /** `changesetTemplate.published` for this repository and branch; null leaves it to the UI. */
  published: z.union([z.boolean(), z.literal("draft"), z.null()]),
  /** `git diff --binary --full-index` against base_revision, with a/ and b/ prefixes. */
  diff: z.string(),
  stats: BatchChangesetStatsSchema,
});
export type BatchChangeset = z.infer<typeof BatchChangesetSchema>;

/**
 * Kinds of run failure a client may word itself. `workspaces_failed`: workspaces failed (or were
 * cancelled) and the run was not made with `skip_errors`, so it keeps none of the changesets.
 */
export const BatchRunErrorCodeSchema = z.enum(["workspaces_failed"]);
export type BatchRunErrorCode = z.infer<typeof BatchRunErrorCodeSchema>;

/** How a run ended, in numbers (the CLI's last `summary` line). */
export const BatchRunSummarySchema = z.object({
  workspaces: z.int().min(0),
  changesets: z.int().min(0),
  /** Steps that ran, whether they succeeded or failed. */
  steps_run: z.int().min(0),
  steps_cached: z.int().min(0),
  /** Workspaces that failed, timed out or were cancelled. */
  failed: z.int().min(0),
});
export type BatchRunSummary = z.infer<typeof BatchRunSummarySchema>;

export const BatchRunEventSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("workspace_started"), workspace: BatchWorkspaceRefSchema }),
  /**
   * The workspace continues an interactive session that took an earlier run's workspace over:
   * its result is the work applied in that session, not its steps' (each reported `skipped`).
   */
  z.object({
    type: z.literal("workspace_taken_over"),
    workspace: BatchWorkspaceRefSchema,
    session_id: z.uuid(),
    /** The commit the session's work is based on. */
    base_revision: z.string(),
    /** The session branch's commit whose work is used. */
    head: z.string(),
    /**
     * True when the workspace's branch moved past `base_revision`: the work was merged three ways
     * onto the workspace's revision.
     */
    rebased: z.boolean(),
  }),
  z.object({
    type: z.literal("step_started"),
    workspace: BatchWorkspaceRefSchema,
    step_index: z.int().min(0),
    runtime: BatchStepRuntimeSchema,
    /** The image the step runs in; null when it runs locally. */
    image: z.string().nullable(),
    /**
     * What confined a local step (`bubblewrap` or `none`); absent for container steps, whose
     * container confines them, and from executors older than it.
     */
    sandbox: SandboxKindSchema.optional(),
    /**
     * The shell that runs the script: bash where the host or the image has it, else sh
     * (`/usr/bin/bash`, `/bin/sh`); absent from executors older than it.
     */
    shell: z.string().optional(),
    /** The rendered script, secrets redacted (absent from executors older than it). */
    command: z.string().optional(),
    /** The step's own rendered environment, secret values redacted. */
    env: z.record(z.string(), z.string()).optional(),
  }),
  z.object({
    /** `runtime: auto` found no working container runtime: a step naming an image runs locally. */
    type: z.literal("step_runtime_fallback"),
    workspace: BatchWorkspaceRefSchema,
    step_index: z.int().min(0),
    /** The image the step names and does not run in. */
    image: z.string(),
    reason: z.string(),
  }),
  z.object({
    type: z.literal("step_output"),
    workspace: BatchWorkspaceRefSchema,
    step_index: z.int().min(0),
    stream: z.enum(["stdout", "stderr"]),
    /** A bounded chunk of output, secrets redacted. */
    text: z.string(),
  }),
  z.object({
    type: z.literal("step_finished"),
    workspace: BatchWorkspaceRefSchema,
    step_index: z.int().min(0),
    outcome: BatchStepOutcomeSchema,
    /** Null when the step did not run to an exit (cached, skipped, killed). */
    exit_code: z.int().nullable(),
    duration_ms: z.number().min(0),
  }),
  z.object({
    type: z.literal("workspace_finished"),
    workspace: BatchWorkspaceRefSchema,
    status: BatchWorkspaceStatusSchema,
    /** What went wrong (with the failing step's stderr); null when completed. */
    error: z.string().nullable(),
  }),
  z.object({
    type: z.literal("changeset"),
    workspace: BatchWorkspaceRefSchema,
    changeset: BatchChangesetSchema,
  }),
  /** The run's workspaces are resolved and queued. */
  z.object({ type: z.literal("run_started"), workspaces: z.int().min(0) }),
  /** Apply wrote a changeset's branch (and pushed it when `pushed`). */
  z.object({
    type: z.literal("changeset_applied"),
    workspace: BatchWorkspaceRefSchema,
    branch: z.string(),
    /** The branch's new tip. */
    commit: z.string(),
    operation: z.enum(["created", "updated", "unchanged"]),
    pushed: z.boolean(),
    /** Commits a person had added on the branch, replayed on top of Deckhand's commit. */
    kept_commits: z.array(z.string()),
  }),
  z.object({
    type: z.literal("changeset_apply_failed"),
    workspace: BatchWorkspaceRefSchema,
    branch: z.string(),
    error: z.string(),
  }),
  /** Publishing made the changeset's pull request say what the changeset says. */
  z.object({
    type: z.literal("changeset_published"),
    repository: z.string(),
    branch: z.string(),
    /** The pull request's web address. */
    url: z.string(),
    /** `created` (opened now), `updated` (title, body, draft or state changed), `unchanged`. */
    action: z.enum(["created", "updated", "unchanged"]),
    state: z.enum(["open", "draft", "merged", "closed"]),
  }),
  /**
   * The batch change's rollout is paced: the changeset's pull request is opened later, by the
   * rollout, at `at` (null when that waits on something without a known time; `waiting_for`).
   */
  z.object({
    type: z.literal("changeset_scheduled"),
    repository: z.string(),
    branch: z.string(),
    at: z.iso.datetime({ offset: true }).nullable(),
    waiting_for: RolloutWaitSchema,
  }),
  /** Publishing a changeset failed; the apply stopped there or goes on (see `error`). */
  z.object({
    type: z.literal("changeset_publish_failed"),
    repository: z.string(),
    branch: z.string(),
    error: z.string(),
  }),
  /** A changeset of an earlier run that this run no longer produces was closed on its host. */
  z.object({
    type: z.literal("changeset_closed"),
    repository: z.string(),
    branch: z.string(),
    url: z.string().nullable(),
    /** Whether its branch was deleted too (the run's `delete_branches`). */
    branch_deleted: z.boolean(),
  }),
  /** Tracking read a published changeset's state from its host and it changed. */
  z.object({
    type: z.literal("changeset_status"),
    repository: z.string(),
    branch: z.string(),
    state: z.enum(["open", "draft", "merged", "closed", "deleted"]),
    review: z.string().nullable(),
    checks: z.string().nullable(),
    mergeable: z.string().nullable(),
  }),
  /** A changeset hook ran (`onCIFailure`, `onMergeConflict`) on a published changeset. */
  z.object({
    type: z.literal("changeset_hook"),
    repository: z.string(),
    branch: z.string(),
    hook: z.enum(["onCIFailure", "onMergeConflict"]),
    attempt: z.int().min(1),
    status: z.enum(["pushed", "unchanged", "failed", "exhausted"]),
    /** The commit pushed, when `pushed`. */
    commit: z.string().nullable(),
    error: z.string().nullable(),
  }),
  /** The last event of a run. */
  z.object({
    type: z.literal("run_finished"),
    status: z.enum(["completed", "failed", "cancelled"]),
    /** Why the run failed as a whole, worded for the API; null otherwise. */
    error: z.string().nullable(),
    /**
     * What kind of failure `error` is, for a client that words it its own way (the CLI names its
     * `--skip-errors` flag where the API names `skip_errors`); null or absent for other errors.
     */
    error_code: BatchRunErrorCodeSchema.nullable().optional(),
    summary: BatchRunSummarySchema,
  }),
]);
export type BatchRunEvent = z.infer<typeof BatchRunEventSchema>;
