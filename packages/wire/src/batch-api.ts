import { z } from "zod";
import {
  BatchChangesetSchema,
  BatchRunEventSchema,
  BatchStepOutcomeSchema,
  BatchStepRuntimeSchema,
} from "./batch-run.ts";
import { batchRuntimeChoices } from "./batch-runtime.ts";
import { BatchChangeSpendSchema, SpendLimitSchema } from "./budgets.ts";
import { SandboxKindSchema } from "./sandbox.ts";

/**
 * The server API of batch runs: a spec is submitted as a run, its workspaces run as queue jobs
 * on any executor, and its changesets are read (and applied) when they are ready.
 */

const Id = z.uuid();
const Timestamp = z.iso.datetime({ offset: true });

/** How steps run (see `batchRuntimeChoices`). */
export const BatchRuntimeChoiceSchema = z.enum(batchRuntimeChoices);
export type BatchRuntimeChoice = z.infer<typeof BatchRuntimeChoiceSchema>;

/** What a re-apply does with commits a person added on top of Deckhand's commit. */
export const BatchApplyConflictSchema = z.enum(["rebase", "refuse"]);
export type BatchApplyConflict = z.infer<typeof BatchApplyConflictSchema>;

/**
 * Where a `codingAgent` step's agent comes from:
 * - `release`: the vendor's release assets or a mirror of them, `http(s)://` or `file:///`
 *   (a directory laid out like the release);
 * - `npm`: the agent's npm package, from `registry` or npm's configured one;
 * - `installed`: a binary already on the machine (or in the image) at `path`, or found on `PATH`
 *   when no path is given.
 */
export const BatchAgentInstallSourceSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("release"),
    base_url: z.url({ protocol: /^(?:https?|file)$/ }).max(2048),
  }),
  z.strictObject({
    kind: z.literal("npm"),
    registry: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .optional(),
  }),
  z.strictObject({
    kind: z.literal("installed"),
    path: z
      .string()
      .max(4096)
      .regex(/^\/[^\u0000-\u001f\u007f]*$/, "must be an absolute path")
      .optional(),
  }),
]);
export type BatchAgentInstallSource = z.infer<typeof BatchAgentInstallSourceSchema>;

/** A `codingAgent.type` as a key: a lower-case word, as agent types are. */
const AgentTypeKey = z
  .string()
  .regex(/^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/, "must be an agent type such as codex or claude-code");

/**
 * How the permission requests of a `codingAgent` step of type `acp` are answered, with no person
 * in the loop: `allow-edits` allows reading and changing files and refuses commands, fetches and
 * the rest; `allow-all` allows every request; `deny` refuses every one.
 */
export const AcpStepPermissionsSchema = z.enum(["allow-edits", "allow-all", "deny"]);
export type AcpStepPermissions = z.infer<typeof AcpStepPermissionsSchema>;

/** Per-run inputs of `codingAgent` steps, by agent type (`codex`, `claude-code`). */
export const BatchCodingAgentOptionsSchema = z.strictObject({
  /** The policy of `acp` steps that name none; `allow-edits` when absent. */
  acp_permissions: AcpStepPermissionsSchema.optional(),
  /** The agent version to install, e.g. `{"codex": "0.169.0"}`. */
  versions: z.record(z.string(), z.string().max(100)).optional(),
  /** The model each agent type asks the proxy for. */
  models: z.record(z.string(), z.string().max(200)).optional(),
  /** Where agents are installed from, for every type without an entry in `install_sources`. */
  install_source: BatchAgentInstallSourceSchema.optional(),
  /** Where each agent type is installed from, e.g. `{"gemini": {"kind": "npm"}}`. */
  install_sources: z.record(AgentTypeKey, BatchAgentInstallSourceSchema).optional(),
  /**
   * The most each workspace's agents may spend on models (its job's budget), over the spec's
   * `codingAgent.budget`s; the proxy refuses the workspace's requests once it is reached.
   */
  workspace_budget: SpendLimitSchema.optional(),
});
export type BatchCodingAgentOptions = z.infer<typeof BatchCodingAgentOptionsSchema>;

/** How a run executes. Every field is optional; the server's defaults fill the rest. */
export const BatchRunOptionsSchema = z.strictObject({
  runtime: BatchRuntimeChoiceSchema.optional(),
  /** For each workspace; 60 minutes when absent. */
  timeout_ms: z
    .int()
    .min(1_000)
    .max(7 * 24 * 3_600_000)
    .optional(),
  /** Run every step, ignoring and replacing cached results. */
  clear_cache: z.boolean().optional(),
  /**
   * True: a failed workspace is reported and the run completes with the others' changesets
   * (src-cli's `-skip-errors`). By default a failed workspace fails the run.
   */
  skip_errors: z.boolean().optional(),
  /** The first failed workspace cancels the workspaces not yet finished. */
  fail_fast: z.boolean().optional(),
  /** Keep each workspace's checkout and step logs on disk after it finishes. */
  keep_logs: z.boolean().optional(),
  /** Most workspaces of this run running at once, across every executor. */
  parallelism: z.int().min(1).max(1_024).optional(),
  /** Include repositories that have a `.batchignore`. */
  force_override_ignore: z.boolean().optional(),
  /** Directories of repositories searched for this run, after the configured code hosts. */
  code_host_directories: z.array(z.string().min(1).max(4_096)).max(100).optional(),
  /** Repositories left out of this run by name. */
  exclude_repositories: z.array(z.string().min(1).max(1_024)).max(10_000).optional(),
  /** Apply only: what to do with a person's commits on a branch being updated. */
  on_conflict: BatchApplyConflictSchema.optional(),
  /**
   * Apply only: push each branch to its repository's `origin`. By default a git URL host's
   * branches are pushed (to the URL) and a directory host's working copy is not; true pushes those
   * too (refused for a working copy without an `origin`), false pushes none.
   */
  push: z.boolean().optional(),
  /**
   * Apply only: changes (creates, updates, comments, closes) sent to each code host per minute
   * while publishing; the connection's `publishRate` (or 30) when absent.
   */
  publish_rate: z.number().positive().max(6_000).optional(),
  /**
   * Apply only: delete the branch of each changeset that is closed because the spec no longer
   * produces it.
   */
  delete_branches: z.boolean().optional(),
  coding_agent: BatchCodingAgentOptionsSchema.optional(),
  /**
   * The most the whole run may spend on models: the proxy refuses its agents' requests once it
   * is reached, and workspaces that have not started yet are not started.
   */
  budget: SpendLimitSchema.optional(),
});
export type BatchRunOptions = z.infer<typeof BatchRunOptionsSchema>;

export const BatchRunActionSchema = z.enum(["preview", "apply"]);
export type BatchRunAction = z.infer<typeof BatchRunActionSchema>;

/** `POST /api/batch-runs`: a spec to run. */
export const CreateBatchRunRequestSchema = z.strictObject({
  /** The spec's YAML or JSON text. */
  source: z
    .string()
    .min(1)
    .max(1024 * 1024),
  /** The spec's file name, used in diagnostics. */
  file: z.string().min(1).max(4_096).optional(),
  /**
   * The directory `mount:` paths are relative to, on the machine the steps run on; without it a
   * spec with mounts is refused.
   */
  spec_directory: z.string().min(1).max(4_096).optional(),
  /** `preview` (default) stops at changesets; `apply` also writes them as branches. */
  action: BatchRunActionSchema.optional(),
  options: BatchRunOptionsSchema.optional(),
});
export type CreateBatchRunRequest = z.infer<typeof CreateBatchRunRequestSchema>;

/** `POST /api/batch-workspaces/resolve`: what a spec would run, before anything runs. */
export const ResolveBatchWorkspacesRequestSchema = CreateBatchRunRequestSchema.omit({
  action: true,
});
export type ResolveBatchWorkspacesRequest = z.infer<typeof ResolveBatchWorkspacesRequestSchema>;

export const BatchRunStatusSchema = z.enum([
  "queued",
  "running",
  "completed",
  "failed",
  "cancelled",
]);
export type BatchRunStatus = z.infer<typeof BatchRunStatusSchema>;

/** A workspace's state: waiting, running, or how it ended. */
export const BatchWorkspaceStateSchema = z.enum([
  "pending",
  "running",
  "completed",
  "failed",
  "timed_out",
  "skipped",
  "cancelled",
]);
export type BatchWorkspaceState = z.infer<typeof BatchWorkspaceStateSchema>;

/** Counts of a run's workspaces and steps, as the stats bar and the CLI summary show them. */
export const BatchRunStatsSchema = z.object({
  workspaces: z.int().min(0),
  pending: z.int().min(0),
  running: z.int().min(0),
  completed: z.int().min(0),
  failed: z.int().min(0),
  cancelled: z.int().min(0),
  changesets: z.int().min(0),
  /** Steps that ran, whether they succeeded or failed. */
  steps_run: z.int().min(0),
  steps_cached: z.int().min(0),
});
export type BatchRunStats = z.infer<typeof BatchRunStatsSchema>;

export const BatchRunSchema = z.object({
  id: Id,
  batch_spec_id: Id,
  /** The spec's `name`. */
  name: z.string(),
  action: BatchRunActionSchema,
  status: BatchRunStatusSchema,
  options: BatchRunOptionsSchema,
  warnings: z.array(z.string()),
  /** Why the run failed as a whole (an invalid changeset template, say); null otherwise. */
  error: z.string().nullable(),
  stats: BatchRunStatsSchema,
  created_at: Timestamp,
  started_at: Timestamp.nullable(),
  finished_at: Timestamp.nullable(),
});
export type BatchRun = z.infer<typeof BatchRunSchema>;

export const BatchRunListSchema = z.object({ batch_runs: z.array(BatchRunSchema) });

/**
 * `POST /api/batch-runs/:id/apply`: `skip_errors=true` applies a run whose workspaces failed,
 * with the changesets of those that succeeded (the run then keeps `skip_errors`).
 */
export const ApplyBatchRunQuerySchema = z.strictObject({
  skip_errors: z
    .enum(["true", "false"])
    .transform((value) => value === "true")
    .optional(),
});
export type ApplyBatchRunQuery = z.infer<typeof ApplyBatchRunQuerySchema>;

export const BatchRunListQuerySchema = z.strictObject({
  /** Only runs of specs with this name. */
  name: z.string().min(1).max(1_000).optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});

/** One step of one workspace: its state and timings, and where its logs are. */
export const BatchWorkspaceStepSchema = z.object({
  step_index: z.int().min(0),
  /**
   * What the step runs, to name it by: its `run:` command's first line, or `codingAgent <type>:`
   * and its prompt's first line (as the spec wrote them, templates unrendered), shortened.
   */
  label: z.string(),
  outcome: z.enum(["running", ...BatchStepOutcomeSchema.options]),
  runtime: BatchStepRuntimeSchema.nullable(),
  image: z.string().nullable(),
  /**
   * What confined a local step: `bubblewrap` or `none` (docs/operations/security.md); null for a
   * container step, one that did not run, and results older than the field.
   */
  sandbox: SandboxKindSchema.nullable(),
  /** The shell that ran the script (`/usr/bin/bash`, `/bin/sh`); null when it did not start. */
  shell: z.string().nullable(),
  exit_code: z.int().nullable(),
  duration_ms: z.int().min(0),
  started_at: Timestamp.nullable(),
  finished_at: Timestamp.nullable(),
});
export type BatchWorkspaceStep = z.infer<typeof BatchWorkspaceStepSchema>;

export const BatchWorkspaceSchema = z.object({
  id: Id,
  batch_run_id: Id,
  repository: z.string(),
  branch: z.string(),
  revision: z.string(),
  /** The workspace's directory in the repository; "" for the root. */
  path: z.string(),
  state: BatchWorkspaceStateSchema,
  error: z.string().nullable(),
  /** The spec's step indexes that apply here. */
  step_indexes: z.array(z.int().min(0)),
  steps: z.array(BatchWorkspaceStepSchema),
  attempts: z.int().min(0),
  executor: z.string().nullable(),
  /**
   * The interactive session this workspace belongs to: the one that took it over, or (on a later
   * run) the one whose work became its result; null for none.
   */
  takeover_session_id: Id.nullable(),
  started_at: Timestamp.nullable(),
  finished_at: Timestamp.nullable(),
});
export type BatchWorkspace = z.infer<typeof BatchWorkspaceSchema>;

export const BatchWorkspaceListSchema = z.object({ workspaces: z.array(BatchWorkspaceSchema) });

/** One entry of a `codingAgent` step's transcript, read from the agent's JSON lines output. */
export const AgentTranscriptEntrySchema = z.object({
  /** `message`: the agent's reply; `tool_call`: a command, file change or tool it used. */
  kind: z.enum(["message", "reasoning", "tool_call", "tool_result", "error"]),
  /** The message, or what the tool call did (`npm test`, `update README.md`). */
  text: z.string(),
  /** The command's output or exit code, a tool's result; null when there is none. */
  detail: z.string().nullable(),
});
export type AgentTranscriptEntry = z.infer<typeof AgentTranscriptEntrySchema>;

/** A `codingAgent` step's agent run as it reported it. */
export const AgentStepTranscriptSchema = z.object({
  /** The agent type (`codex`, `claude-code`, …). */
  type: z.string(),
  entries: z.array(AgentTranscriptEntrySchema),
  /** The tokens the agent reported using; null when it reported none. */
  usage: z
    .object({
      input_tokens: z.int().min(0),
      cached_input_tokens: z.int().min(0),
      output_tokens: z.int().min(0),
    })
    .nullable(),
});
export type AgentStepTranscript = z.infer<typeof AgentStepTranscriptSchema>;

/** A step's logs, outputs and the workspace diff after it (`GET …/steps/:step_index`). */
export const BatchStepDetailSchema = z.object({
  step: BatchWorkspaceStepSchema,
  /** The rendered script the step ran, secrets redacted; null until it started. */
  command: z.string().nullable(),
  /** The step's own rendered environment, secret values redacted; null until it started. */
  env: z.record(z.string(), z.string()).nullable(),
  /**
   * The workspace job's id: the model usage of its `codingAgent` steps is recorded under it
   * (`GET /api/usage?job_id=…`).
   */
  job_id: z.string(),
  /** A `codingAgent` step's transcript and token usage; null for `run` steps. */
  agent: AgentStepTranscriptSchema.nullable(),
  stdout: z.string(),
  stderr: z.string(),
  /** Every output set up to this step; empty until it finished. */
  outputs: z.record(z.string(), z.unknown()),
  /** The workspace's diff after this step; "" until it finished. */
  diff: z.string(),
});
export type BatchStepDetail = z.infer<typeof BatchStepDetailSchema>;

export const BatchChangesetStateSchema = z.enum([
  "unpublished",
  "draft",
  "open",
  "merged",
  "closed",
  "failed",
]);

/**
 * What applying a changeset's run will do with it, computed by the server from its `published`
 * field, the run's push option, the changeset last applied for the same repository and branch,
 * and the pull request the batch change tracks for them (with its state on the host).
 */
export const ChangesetApplyPlanSchema = z.object({
  /**
   * `create`: the branch is new; `update`: it moves to the new commit; `none`: the last applied
   * changeset of the branch had the same diff and commit message.
   */
  branch: z.enum(["create", "update", "none"]),
  /** The branch is pushed to the repository's remote. */
  push: z.boolean(),
  /**
   * `update` edits the tracked pull request in place; `close` closes one the run no longer
   * produces; `none` leaves pull requests alone.
   */
  pull_request: z.enum(["create", "create_draft", "update", "close", "none"]),
  /** The number of the pull request `update` or `close` acts on; null otherwise. */
  pull_request_number: z.string().nullable(),
  /** The plan in words: "push branch, create draft pull request", "no change". */
  summary: z.string(),
});
export type ChangesetApplyPlan = z.infer<typeof ChangesetApplyPlanSchema>;

/** A stored changeset: what the run built, and what applying it did. */
export const StoredBatchChangesetSchema = BatchChangesetSchema.extend({
  id: Id,
  batch_run_id: Id,
  workspace_id: Id,
  state: BatchChangesetStateSchema,
  /** The branch tip left by the last apply; null until applied. */
  applied_commit: z.string().nullable(),
  apply_operation: z.enum(["created", "updated", "unchanged"]).nullable(),
  applied_at: Timestamp.nullable(),
  pushed: z.boolean(),
  /** Why applying it failed; null otherwise. */
  error: z.string().nullable(),
  /** The code host connection's name, once published. */
  code_host: z.string().nullable(),
  /** The pull request's number on its host, once published. */
  external_id: z.string().nullable(),
  external_url: z.string().nullable(),
  /** What the host said when last read. */
  external_state: z.enum(["open", "draft", "merged", "closed", "deleted"]).nullable(),
  review_state: z.enum(["approved", "changes_requested", "pending"]).nullable(),
  checks_state: z.enum(["failing", "none", "passing", "pending"]).nullable(),
  mergeable: z.enum(["conflicting", "mergeable", "unknown"]).nullable(),
  synced_at: Timestamp.nullable(),
  /** The batch change tracks it: the newest published changeset of its repository and branch. */
  tracked: z.boolean(),
  /** Why publishing it, or its last hook, failed; null otherwise. */
  publish_error: z.string().nullable(),
  /** What applying it will do; null once it is applied. */
  apply_plan: ChangesetApplyPlanSchema.nullable(),
});
export type StoredBatchChangeset = z.infer<typeof StoredBatchChangesetSchema>;

export const BatchChangesetListSchema = z.object({
  changesets: z.array(StoredBatchChangesetSchema),
  /**
   * Open pull requests the batch change tracks that this run does not produce: applying the run
   * closes them (each with `apply_plan.summary` "close pull request #N").
   */
  dropped: z.array(StoredBatchChangesetSchema),
});

/** `POST /api/batch-workspaces/resolve`'s answer. */
export const ResolvedBatchWorkspacesSchema = z.object({
  workspaces: z.array(
    z.object({
      repository: z.string(),
      branch: z.string(),
      revision: z.string(),
      path: z.string(),
      step_indexes: z.array(z.int().min(0)),
      search_result_paths: z.array(z.string()),
      /**
       * How many of its steps a run would answer from the step cache (it resumes after them);
       * equal to the number of steps when nothing would run.
       */
      cached_steps: z.int().min(0),
    }),
  ),
  warnings: z.array(z.string()),
});
export type ResolvedBatchWorkspaces = z.infer<typeof ResolvedBatchWorkspacesSchema>;

/** `POST /api/batch-workspaces/:workspace_id/takeover`'s answer. */
export const BatchTakeoverResponseSchema = z.object({
  workspace_id: Id,
  session_id: Id,
  project_id: Id,
  /** The session's worktree: the workspace's checkout with its current changes. */
  worktree_path: z.string(),
});
export type BatchTakeoverResponse = z.infer<typeof BatchTakeoverResponseSchema>;

/** One stored event of a run's log. */
export const StoredBatchRunEventSchema = z.object({
  id: z.number().int().positive(),
  batch_run_id: Id,
  created_at: Timestamp,
  event: BatchRunEventSchema,
});
export type StoredBatchRunEvent = z.infer<typeof StoredBatchRunEventSchema>;

/** Frames the server sends on a run's stream, as on a session stream. */
export const BatchRunStreamFrameSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("event"), event: StoredBatchRunEventSchema }),
  /** The backlog after the client's cursor is delivered; what follows is live. */
  z.object({ type: z.literal("ready"), last_event_id: z.number().int().nonnegative() }),
  z.object({
    type: z.literal("error"),
    error: z.object({ code: z.string(), message: z.string() }),
  }),
]);
export type BatchRunStreamFrame = z.infer<typeof BatchRunStreamFrameSchema>;

export const BatchRunStreamQuerySchema = z.strictObject({
  after: z.coerce.number().int().nonnegative().optional(),
});

/** A batch change's changesets by state: the tracked (published) ones and the rest. */
export const BatchChangeStatsSchema = z.object({
  /** Changesets the batch change tracks or its newest applied run holds. */
  total: z.int().min(0),
  unpublished: z.int().min(0),
  draft: z.int().min(0),
  open: z.int().min(0),
  merged: z.int().min(0),
  closed: z.int().min(0),
  deleted: z.int().min(0),
  /** Of the open and draft ones: checks failing, not mergeable, approved. */
  checks_failing: z.int().min(0),
  conflicting: z.int().min(0),
  approved: z.int().min(0),
});
export type BatchChangeStats = z.infer<typeof BatchChangeStatsSchema>;

/** The counts of published changesets per state after each change: the burndown chart's points. */
export const BatchChangeBurndownPointSchema = z.object({
  at: Timestamp,
  draft: z.int().min(0),
  open: z.int().min(0),
  merged: z.int().min(0),
  closed: z.int().min(0),
  deleted: z.int().min(0),
});
export type BatchChangeBurndownPoint = z.infer<typeof BatchChangeBurndownPointSchema>;

/** `GET /api/batch-changes/:name`: a batch change (every run of one spec name) as it stands. */
export const BatchChangeSchema = z.object({
  name: z.string(),
  stats: BatchChangeStatsSchema,
  burndown: z.array(BatchChangeBurndownPointSchema),
  /** The tracked changesets, each with its host state. */
  changesets: z.array(StoredBatchChangesetSchema),
  /** Model spend of the batch change's workspace jobs, per changeset and per merged one. */
  spend: BatchChangeSpendSchema,
});
export type BatchChange = z.infer<typeof BatchChangeSchema>;

/** A batch change as `/batches` lists it: its counts, burndown and latest run, no changesets. */
export const BatchChangeSummarySchema = z.object({
  name: z.string(),
  stats: BatchChangeStatsSchema,
  burndown: z.array(BatchChangeBurndownPointSchema),
  /** The newest run of the spec name. */
  latest_run: BatchRunSchema,
});
export type BatchChangeSummary = z.infer<typeof BatchChangeSummarySchema>;

/** `GET /api/batch-changes`: every batch change, the one run most recently first. */
export const BatchChangeListSchema = z.object({
  batch_changes: z.array(BatchChangeSummarySchema),
});
export type BatchChangeList = z.infer<typeof BatchChangeListSchema>;

/** One entry of a changeset's history on its code host. */
export const ChangesetEventSchema = z.object({
  id: z.number().int().positive(),
  changeset_id: Id,
  type: z.string(),
  external_state: z.string().nullable(),
  payload: z.record(z.string(), z.unknown()),
  created_at: Timestamp,
});
export type ChangesetEvent = z.infer<typeof ChangesetEventSchema>;
export const ChangesetEventListSchema = z.object({ events: z.array(ChangesetEventSchema) });

/** `POST /api/batch-changes/:name/changesets/bulk`: one operation on selected changesets. */
export const BulkChangesetOperationRequestSchema = z.discriminatedUnion("operation", [
  z.strictObject({
    operation: z.literal("publish"),
    changeset_ids: z.array(Id).min(1).max(10_000),
    /** Publish as drafts (where the host has them); ready for review otherwise. */
    draft: z.boolean().optional(),
  }),
  z.strictObject({ operation: z.literal("close"), changeset_ids: z.array(Id).min(1).max(10_000) }),
  z.strictObject({
    operation: z.literal("comment"),
    changeset_ids: z.array(Id).min(1).max(10_000),
    body: z.string().min(1).max(65_536),
  }),
  z.strictObject({
    operation: z.literal("merge"),
    changeset_ids: z.array(Id).min(1).max(10_000),
    method: z.enum(["merge", "squash", "rebase"]).optional(),
  }),
  /** Runs the failed workspace of each changeset again (the workspace job). */
  z.strictObject({
    operation: z.literal("retry"),
    changeset_ids: z.array(Id).min(1).max(10_000),
  }),
]);
export type BulkChangesetOperationRequest = z.infer<typeof BulkChangesetOperationRequestSchema>;

export const BulkChangesetOperationResultSchema = z.object({
  results: z.array(
    z.object({
      changeset_id: Id,
      ok: z.boolean(),
      /** Why the operation failed for this changeset; null when it succeeded. */
      error: z.string().nullable(),
    }),
  ),
});
export type BulkChangesetOperationResult = z.infer<typeof BulkChangesetOperationResultSchema>;
