import { sql } from "drizzle-orm";
import { check, index, integer, jsonb, pgTable, text, unique, uuid } from "drizzle-orm/pg-core";
import { createdAt, oneOf, timestampColumn, updatedAt } from "./columns.ts";

/** A batch spec as submitted: the YAML source and its parsed form. */
export const batchSpecs = pgTable(
  "batch_specs",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    name: text("name").notNull(),
    source: text("source").notNull(),
    spec: jsonb("spec").notNull(),
    createdAt: createdAt(),
  },
  (table) => [index("batch_specs_name_idx").on(table.name, table.createdAt)],
);

export const batchRunStatuses = ["queued", "running", "completed", "failed", "cancelled"] as const;
export type BatchRunStatus = (typeof batchRunStatuses)[number];

/** One execution of a batch spec across its repositories. */
export const batchRuns = pgTable(
  "batch_runs",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    batchSpecId: uuid("batch_spec_id")
      .notNull()
      .references(() => batchSpecs.id, { onDelete: "cascade" }),
    status: text("status").$type<BatchRunStatus>().notNull().default("queued"),
    error: text("error"),
    createdAt: createdAt(),
    startedAt: timestampColumn("started_at"),
    finishedAt: timestampColumn("finished_at"),
  },
  (table) => [
    check("batch_runs_status_check", oneOf(table.status, batchRunStatuses)),
    index("batch_runs_spec_idx").on(table.batchSpecId, table.createdAt),
    index("batch_runs_status_idx").on(table.status),
  ],
);

export const workspaceStatuses = [
  "pending",
  "running",
  "completed",
  "failed",
  "skipped",
  "cancelled",
] as const;
export type WorkspaceStatus = (typeof workspaceStatuses)[number];

/** One repository (and optional path within it) a batch run works on. */
export const workspaces = pgTable(
  "workspaces",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    batchRunId: uuid("batch_run_id")
      .notNull()
      .references(() => batchRuns.id, { onDelete: "cascade" }),
    repository: text("repository").notNull(),
    path: text("path").notNull().default(""),
    branch: text("branch"),
    status: text("status").$type<WorkspaceStatus>().notNull().default("pending"),
    error: text("error"),
    diff: text("diff"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    startedAt: timestampColumn("started_at"),
    finishedAt: timestampColumn("finished_at"),
  },
  (table) => [
    check("workspaces_status_check", oneOf(table.status, workspaceStatuses)),
    index("workspaces_batch_run_idx").on(table.batchRunId, table.status),
    unique("workspaces_run_repository_path_unique").on(
      table.batchRunId,
      table.repository,
      table.path,
    ),
  ],
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

export const changesetStatuses = ["draft", "open", "merged", "closed", "failed"] as const;
export type ChangesetStatus = (typeof changesetStatuses)[number];

/** The change a batch run proposes on one repository: a branch and, once published, a PR. */
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
    branch: text("branch").notNull(),
    title: text("title").notNull(),
    body: text("body").notNull().default(""),
    status: text("status").$type<ChangesetStatus>().notNull().default("draft"),
    externalUrl: text("external_url"),
    error: text("error"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (table) => [
    check("changesets_status_check", oneOf(table.status, changesetStatuses)),
    index("changesets_batch_run_idx").on(table.batchRunId, table.status),
    unique("changesets_workspace_unique").on(table.workspaceId),
  ],
);
