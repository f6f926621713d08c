import { z } from "zod";

/**
 * Progress of a batch run, one event per JSON line in the CLI and per frame in the API. Every
 * event names the workspace it belongs to, so events of workspaces running side by side can be
 * told apart; steps are named by their index in the spec's `steps`.
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

/** Where a step ran: on the host with `sh`, or in its container image. */
export const BatchStepRuntimeSchema = z.enum(["local", "container"]);
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
  baseBranch: z.string(),
  baseRevision: z.string(),
  /** The workspace's directory in the repository; "" for the root. */
  path: z.string(),
  /** The branch the changes are pushed to. */
  branch: z.string(),
  title: z.string(),
  body: z.string(),
  commit: z.object({
    message: z.string(),
    author: z.object({ name: z.string(), email: z.string() }).nullable(),
  }),
  /** `changesetTemplate.published` for this repository and branch; null leaves it to the UI. */
  published: z.union([z.boolean(), z.literal("draft"), z.null()]),
  /** `git diff --binary` against baseRevision. */
  diff: z.string(),
  stats: BatchChangesetStatsSchema,
});
export type BatchChangeset = z.infer<typeof BatchChangesetSchema>;

export const BatchRunEventSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("workspace_started"), workspace: BatchWorkspaceRefSchema }),
  z.object({
    type: z.literal("step_started"),
    workspace: BatchWorkspaceRefSchema,
    stepIndex: z.int().min(0),
    runtime: BatchStepRuntimeSchema,
    /** The image the step runs in; null when it runs locally. */
    image: z.string().nullable(),
  }),
  z.object({
    /** `runtime: auto` found no working container runtime: a step naming an image runs locally. */
    type: z.literal("step_runtime_fallback"),
    workspace: BatchWorkspaceRefSchema,
    stepIndex: z.int().min(0),
    /** The image the step names and does not run in. */
    image: z.string(),
    reason: z.string(),
  }),
  z.object({
    type: z.literal("step_output"),
    workspace: BatchWorkspaceRefSchema,
    stepIndex: z.int().min(0),
    stream: z.enum(["stdout", "stderr"]),
    /** A bounded chunk of output, secrets redacted. */
    text: z.string(),
  }),
  z.object({
    type: z.literal("step_finished"),
    workspace: BatchWorkspaceRefSchema,
    stepIndex: z.int().min(0),
    outcome: BatchStepOutcomeSchema,
    /** Null when the step did not run to an exit (cached, skipped, killed). */
    exitCode: z.int().nullable(),
    durationMs: z.number().min(0),
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
]);
export type BatchRunEvent = z.infer<typeof BatchRunEventSchema>;
