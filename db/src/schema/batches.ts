import { sql } from "drizzle-orm";
import {
  bigserial,
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  unique,
  uuid,
} from "drizzle-orm/pg-core";
import { createdAt, oneOf, timestampColumn, updatedAt } from "./columns.ts";
import { sessions } from "./projects.ts";

/** A batch spec as submitted: the YAML source and its parsed form. */
export const batchSpecs = pgTable(
  "batch_specs",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    name: text("name").notNull(),
    source: text("source").notNull(),
    spec: jsonb("spec").notNull(),
    /** The directory of the spec file, which `mount:` paths are relative to; null when none. */
    specDirectory: text("spec_directory"),
    /** The file name the spec was read from, for diagnostics. */
    file: text("file"),
    createdAt: createdAt(),
  },
  (table) => [index("batch_specs_name_idx").on(table.name, table.createdAt)],
);

export const batchRunStatuses = ["queued", "running", "completed", "failed", "cancelled"] as const;
export type BatchRunStatus = (typeof batchRunStatuses)[number];

export const batchRunActions = ["preview", "apply"] as const;
export type BatchRunAction = (typeof batchRunActions)[number];

/** One execution of a batch spec across its repositories. */
export const batchRuns = pgTable(
  "batch_runs",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    batchSpecId: uuid("batch_spec_id")
      .notNull()
      .references(() => batchSpecs.id, { onDelete: "cascade" }),
    status: text("status").$type<BatchRunStatus>().notNull().default("queued"),
    /** What the run ends with: changesets to look at, or changesets applied as branches. */
    action: text("action").$type<BatchRunAction>().notNull().default("preview"),
    /** How the run executes (runtime, timeout, cache, failure policy), as @deckhand/batches reads it. */
    options: jsonb("options").notNull().default(sql`'{}'::jsonb`),
    /** Warnings from resolving the workspaces (skipped repositories, ignored filters). */
    warnings: jsonb("warnings").notNull().default(sql`'[]'::jsonb`),
    error: text("error"),
    createdAt: createdAt(),
    startedAt: timestampColumn("started_at"),
    finishedAt: timestampColumn("finished_at"),
  },
  (table) => [
    check("batch_runs_status_check", oneOf(table.status, batchRunStatuses)),
    check("batch_runs_action_check", oneOf(table.action, batchRunActions)),
    index("batch_runs_spec_idx").on(table.batchSpecId, table.createdAt),
    index("batch_runs_status_idx").on(table.status),
    index("batch_runs_created_idx").on(table.createdAt),
  ],
);

export const workspaceStatuses = [
  "pending",
  "running",
  "completed",
  "failed",
  "timed_out",
  "skipped",
  "cancelled",
] as const;
export type WorkspaceStatus = (typeof workspaceStatuses)[number];

/** One repository revision (and optional path within it) a batch run works on: one queue task. */
export const workspaces = pgTable(
  "workspaces",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    batchRunId: uuid("batch_run_id")
      .notNull()
      .references(() => batchRuns.id, { onDelete: "cascade" }),
    /** The workspace's place in the run's list, as resolution ordered it. */
    position: integer("position").notNull().default(0),
    repository: text("repository").notNull(),
    path: text("path").notNull().default(""),
    branch: text("branch").notNull().default(""),
    revision: text("revision").notNull().default(""),
    /** The resolved workspace (repository location, steps, search results) the job runs. */
    definition: jsonb("definition").notNull().default(sql`'{}'::jsonb`),
    status: text("status").$type<WorkspaceStatus>().notNull().default("pending"),
    error: text("error"),
    /** The final diff against `revision`; null until the workspace completes. */
    diff: text("diff"),
    /** How many times an executor started this workspace (a retry after a crash counts). */
    attempts: integer("attempts").notNull().default(0),
    /** The executor that ran (or runs) it. */
    executor: text("executor"),
    /** The interactive session that took this workspace over, whose changes replace the steps'. */
    takeoverSessionId: uuid("takeover_session_id").references(() => sessions.id, {
      onDelete: "set null",
    }),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    startedAt: timestampColumn("started_at"),
    finishedAt: timestampColumn("finished_at"),
  },
  (table) => [
    check("workspaces_status_check", oneOf(table.status, workspaceStatuses)),
    index("workspaces_batch_run_idx").on(table.batchRunId, table.status),
    index("workspaces_batch_run_position_idx").on(table.batchRunId, table.position),
    index("workspaces_takeover_session_idx").on(table.takeoverSessionId),
    unique("workspaces_run_repository_branch_path_unique").on(
      table.batchRunId,
      table.repository,
      table.branch,
      table.path,
    ),
  ],
);

export const workspaceStepOutcomes = ["running", "run", "cached", "skipped", "failed"] as const;
export type WorkspaceStepOutcome = (typeof workspaceStepOutcomes)[number];

/** What happened to one step in one workspace of a run: the timeline the UI and CLI show. */
export const workspaceSteps = pgTable(
  "workspace_steps",
  {
    workspaceId: uuid("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    stepIndex: integer("step_index").notNull(),
    outcome: text("outcome").$type<WorkspaceStepOutcome>().notNull(),
    /** "local" or "container"; null when the step did not run. */
    runtime: text("runtime"),
    image: text("image"),
    /** What confined a local step: "bubblewrap" or "none"; null for container steps. */
    sandbox: text("sandbox"),
    /** The shell that ran the script; null when the step did not start. */
    shell: text("shell"),
    exitCode: integer("exit_code"),
    durationMs: integer("duration_ms").notNull().default(0),
    /** The step_results row holding its diff and outputs; null when it did not finish. */
    cacheKey: text("cache_key"),
    /** Bounded and redacted output of a step that ran (kept for failed steps too). */
    stdout: text("stdout").notNull().default(""),
    stderr: text("stderr").notNull().default(""),
    /** The rendered script as it started, secrets redacted; null for steps that did not start. */
    command: text("command"),
    /** The step's own rendered environment as it started, secret values redacted. */
    env: jsonb("env").$type<Record<string, string>>(),
    startedAt: timestampColumn("started_at"),
    finishedAt: timestampColumn("finished_at"),
  },
  (table) => [
    primaryKey({ columns: [table.workspaceId, table.stepIndex] }),
    check("workspace_steps_outcome_check", oneOf(table.outcome, workspaceStepOutcomes)),
    check("workspace_steps_step_index_check", sql`${table.stepIndex} >= 0`),
  ],
);

/** A run's progress log: what its CLI and WebSocket clients replay and follow, by id. */
export const batchRunEvents = pgTable(
  "batch_run_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    batchRunId: uuid("batch_run_id")
      .notNull()
      .references(() => batchRuns.id, { onDelete: "cascade" }),
    type: text("type").notNull(),
    payload: jsonb("payload").notNull(),
    createdAt: createdAt(),
  },
  (table) => [index("batch_run_events_run_idx").on(table.batchRunId, table.id)],
);
/**
 * The step-result cache: a step's outcome keyed by the hash of everything that determines it,
 * so an unchanged step is not run again on the next run.
 */
export const stepResults = pgTable(
  "step_results",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    cacheKey: text("cache_key").notNull().unique("step_results_cache_key_unique"),
    workspaceId: uuid("workspace_id").references(() => workspaces.id, { onDelete: "set null" }),
    stepIndex: integer("step_index").notNull(),
    exitCode: integer("exit_code").notNull(),
    diff: text("diff").notNull().default(""),
    outputs: jsonb("outputs").notNull().default(sql`'{}'::jsonb`),
    /** The changed files of `diff`, one per file section in order, with line counts. */
    files: jsonb("files").notNull().default(sql`'[]'::jsonb`),
    /** The step's output, bounded and with secrets redacted: `previous_step.stdout` on resume. */
    stdout: text("stdout").notNull().default(""),
    stderr: text("stderr").notNull().default(""),
    createdAt: createdAt(),
  },
  (table) => [
    check("step_results_step_index_check", sql`${table.stepIndex} >= 0`),
    index("step_results_workspace_idx").on(table.workspaceId),
  ],
);

export const changesetStatuses = [
  "unpublished",
  "draft",
  "open",
  "merged",
  "closed",
  "failed",
] as const;
export type ChangesetStatus = (typeof changesetStatuses)[number];

export const changesetExternalStates = ["open", "draft", "merged", "closed", "deleted"] as const;
export type ChangesetExternalState = (typeof changesetExternalStates)[number];

export const changesetApplyOperations = ["created", "updated", "unchanged"] as const;
export type ChangesetApplyOperation = (typeof changesetApplyOperations)[number];

/** The change a batch run proposes on one repository branch: a diff, a branch, later a PR. */
export const changesets = pgTable(
  "changesets",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    batchRunId: uuid("batch_run_id")
      .notNull()
      .references(() => batchRuns.id, { onDelete: "cascade" }),
    workspaceId: uuid("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    repository: text("repository").notNull(),
    baseBranch: text("base_branch").notNull().default(""),
    baseRevision: text("base_revision").notNull().default(""),
    path: text("path").notNull().default(""),
    branch: text("branch").notNull(),
    title: text("title").notNull(),
    body: text("body").notNull().default(""),
    commitMessage: text("commit_message").notNull().default(""),
    /** `{name, email}` or null for the default author. */
    commitAuthor: jsonb("commit_author"),
    /** `changesetTemplate.published` for this changeset: true, false, "draft" or null. */
    published: jsonb("published"),
    diff: text("diff").notNull().default(""),
    /** `{files, insertions, deletions}`. */
    stats: jsonb("stats").notNull().default(sql`'{"files":0,"insertions":0,"deletions":0}'::jsonb`),
    status: text("status").$type<ChangesetStatus>().notNull().default("unpublished"),
    /** The branch tip Deckhand left at the last apply, and Deckhand's own commit in it. */
    appliedCommit: text("applied_commit"),
    createdCommit: text("created_commit"),
    applyOperation: text("apply_operation").$type<ChangesetApplyOperation>(),
    appliedAt: timestampColumn("applied_at"),
    pushed: boolean("pushed").notNull().default(false),
    externalUrl: text("external_url"),
    /** The code host connection's name and the pull request's number there, once published. */
    codeHost: text("code_host"),
    externalId: text("external_id"),
    /** What the host says, as last read: open, draft, merged, closed or deleted. */
    externalState: text("external_state").$type<ChangesetExternalState>(),
    reviewState: text("review_state"),
    checksState: text("checks_state"),
    mergeable: text("mergeable"),
    /** When the host's state was last read (by publishing, a refresh or the tracking task). */
    syncedAt: timestampColumn("synced_at"),
    /**
     * The changeset the batch change tracks for its repository and branch: the newest published
     * one. A later run's changeset of the same branch takes over, and this one is retired.
     */
    tracked: boolean("tracked").notNull().default(false),
    /** Why publishing (or a hook) failed; null when it did not. Apply failures stay in `error`. */
    publishError: text("publish_error"),
    /** Hook runs per hook (`onCIFailure`, `onMergeConflict`) for this branch's current head. */
    hookAttempts: jsonb("hook_attempts").notNull().default(sql`'{}'::jsonb`),
    error: text("error"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (table) => [
    check("changesets_status_check", oneOf(table.status, changesetStatuses)),
    // A null operation (never applied) passes, as CHECK treats an unknown result as true.
    check(
      "changesets_apply_operation_check",
      oneOf(table.applyOperation, changesetApplyOperations),
    ),
    index("changesets_batch_run_idx").on(table.batchRunId, table.status),
    index("changesets_workspace_idx").on(table.workspaceId),
    // The last apply of a branch is what the next apply must keep a person's commits against.
    index("changesets_repository_branch_idx").on(table.repository, table.branch, table.appliedAt),
    index("changesets_tracked_idx").on(table.tracked, table.syncedAt),
    check("changesets_external_state_check", oneOf(table.externalState, changesetExternalStates)),
    unique("changesets_run_repository_branch_unique").on(
      table.batchRunId,
      table.repository,
      table.branch,
    ),
  ],
);

/**
 * A changeset's history on its code host: each publication, update, close, state change seen by
 * tracking, and hook run, in order. Stats over time (the burndown) are read from it.
 */
export const changesetEvents = pgTable(
  "changeset_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    changesetId: uuid("changeset_id")
      .notNull()
      .references(() => changesets.id, { onDelete: "cascade" }),
    /** The batch change (the spec's name) the changeset belongs to, for stats across runs. */
    batchChange: text("batch_change").notNull(),
    /** The repository and branch: one line of the burndown across the runs that carry it. */
    repository: text("repository").notNull(),
    branch: text("branch").notNull(),
    type: text("type").notNull(),
    /** The external state after the event (null when the event does not change it). */
    externalState: text("external_state"),
    payload: jsonb("payload").notNull().default(sql`'{}'::jsonb`),
    createdAt: createdAt(),
  },
  (table) => [
    index("changeset_events_changeset_idx").on(table.changesetId, table.id),
    index("changeset_events_batch_change_idx").on(table.batchChange, table.id),
  ],
);

export const changesetPublicationStates = [
  "scheduled",
  /** Claimed by a rollout turn that is opening its pull request now. */
  "publishing",
  "published",
  "failed",
  "cancelled",
] as const;
export type ChangesetPublicationState = (typeof changesetPublicationStates)[number];

/**
 * A batch change's publications, one per changeset: the ones a paced rollout will publish
 * (`scheduled`, in `position` order), and every pull request opened, with when (the hourly
 * limit and the rollout windows' pace count these). The rollout task reads and advances them,
 * so a restarted server goes on with the same schedule.
 */
export const changesetPublications = pgTable(
  "changeset_publications",
  {
    changesetId: uuid("changeset_id")
      .primaryKey()
      .references(() => changesets.id, { onDelete: "cascade" }),
    /** The batch change (the spec's name): the rollout a publication belongs to. */
    batchChange: text("batch_change").notNull(),
    /** The apply run that scheduled it (its rollout settings and canaries are that run's). */
    batchRunId: uuid("batch_run_id")
      .notNull()
      .references(() => batchRuns.id, { onDelete: "cascade" }),
    /** The order pull requests go out in. */
    position: integer("position").notNull().default(0),
    /** One of the first pull requests of the schedule, whose checks must pass first. */
    canary: boolean("canary").notNull().default(false),
    draft: boolean("draft").notNull().default(false),
    state: text("state").$type<ChangesetPublicationState>().notNull().default("scheduled"),
    /** When its pull request was opened (by the publisher's clock). */
    publishedAt: timestampColumn("published_at"),
    /** Why the last attempt failed; it is tried again at the next turn while scheduled. */
    error: text("error"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (table) => [
    check("changeset_publications_state_check", oneOf(table.state, changesetPublicationStates)),
    index("changeset_publications_batch_change_idx").on(
      table.batchChange,
      table.state,
      table.position,
    ),
    // The server-wide windows' pace: the newest publication of any batch change.
    index("changeset_publications_published_idx").on(table.publishedAt),
    index("changeset_publications_run_idx").on(table.batchRunId),
  ],
);
