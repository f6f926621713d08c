// The executor API: what `deckhand executor --server-url` and the server say to each other, so an
// executor runs batch workspace jobs without holding the database. An admin makes executor tokens;
// an executor claims a job with a lease, heartbeats it (and hears of cancels), reports progress,
// reads and writes the step cache, asks the server for the job's model token, and completes or
// fails the job. Every call about a job carries the lease its claim answered: the server refuses
// one that is stale (the job was taken over, cancelled or settled) as its database path does.
import { z } from "zod";
import {
  BatchChangesetSchema,
  BatchRunEventSchema,
  BatchStepOutcomeSchema,
  BatchStepRuntimeSchema,
  BatchWorkspaceStatusSchema,
} from "./batch-run.ts";

const Id = z.uuid();
const Timestamp = z.iso.datetime({ offset: true });

/** An executor token as the admin API lists it: never the token itself. */
export const ExecutorTokenSchema = z.object({
  id: Id,
  name: z.string(),
  created_at: Timestamp,
  last_used_at: Timestamp.nullable(),
  revoked_at: Timestamp.nullable(),
});
export type ExecutorToken = z.infer<typeof ExecutorTokenSchema>;

export const CreateExecutorTokenRequestSchema = z.strictObject({
  name: z.string().min(1).max(200),
});

export const CreateExecutorTokenResponseSchema = z.object({
  executor_token: ExecutorTokenSchema,
  /** The token itself. Shown this once: only its hash is stored. */
  token: z.string(),
});
export type CreateExecutorTokenResponse = z.infer<typeof CreateExecutorTokenResponseSchema>;

export const ExecutorTokenListSchema = z.object({ executor_tokens: z.array(ExecutorTokenSchema) });

/**
 * An executor's name for itself (`--id`): printable, no spaces. The server adds the token's id to
 * it, so executors under different tokens never share a name.
 */
export const ExecutorIdSchema = z.string().regex(/^[\x21-\x7e]{1,200}$/, {
  message: "must be 1 to 200 printable characters without spaces, e.g. builder-3",
});

/**
 * What a job's claim is: the queue task's attempt and the workspace's, both held by `executor`.
 * Every call about the job sends it back; the server acts only while both still hold.
 */
export const ExecutorLeaseSchema = z.strictObject({
  task_id: z.int().positive(),
  task_attempt: z.int().positive(),
  workspace_id: Id,
  workspace_attempt: z.int().positive(),
  /** The claimant as the queue and the workspace record it: `<executor id>@<token id prefix>`. */
  executor: z.string().min(1).max(300),
});
export type ExecutorLease = z.infer<typeof ExecutorLeaseSchema>;

export const ClaimExecutorJobRequestSchema = z.strictObject({
  executor_id: ExecutorIdSchema,
  /** How long the claim lasts without a heartbeat: after it another executor takes the job over. */
  lease_ms: z.int().min(1_000).max(3_600_000),
});

/** A claimed workspace job: its lease, and what running it needs (the stored rows, as JSON). */
export const ExecutorJobSchema = z.object({
  lease: ExecutorLeaseSchema,
  workspace: z.object({
    id: Id,
    batch_run_id: Id,
    repository: z.string(),
    branch: z.string(),
    revision: z.string(),
    path: z.string(),
    /** The stored workspace definition (repository, steps, take-over), as the engine wrote it. */
    definition: z.record(z.string(), z.unknown()),
  }),
  run: z.object({
    id: Id,
    /** The run's stored options. */
    options: z.record(z.string(), z.unknown()),
  }),
  spec: z.object({
    source: z.string(),
    file: z.string().nullable(),
    spec_directory: z.string().nullable(),
  }),
});
export type ExecutorJob = z.infer<typeof ExecutorJobSchema>;

/** The job claimed; null when none is due now (ask again after a while). */
export const ClaimExecutorJobResponseSchema = z.object({ job: ExecutorJobSchema.nullable() });

export const HeartbeatExecutorJobsRequestSchema = z.strictObject({
  leases: z.array(ExecutorLeaseSchema).max(1_000),
  lease_ms: z.int().min(1_000).max(3_600_000),
});

/**
 * Per lease: whether this executor still holds the job (its lease renewed), and whether its
 * workspace still runs (false: cancelled; stop the steps).
 */
export const HeartbeatExecutorJobsResponseSchema = z.object({
  jobs: z.array(
    z.object({ task_id: z.int().positive(), holds: z.boolean(), running: z.boolean() }),
  ),
});
export type HeartbeatExecutorJobsResponse = z.infer<typeof HeartbeatExecutorJobsResponseSchema>;

export const AppendExecutorJobEventsRequestSchema = z.strictObject({
  lease: ExecutorLeaseSchema,
  events: z.array(BatchRunEventSchema).min(1).max(1_000),
});

/** One step of a workspace's run, as its end reports it. */
export const ExecutorStepRecordSchema = z.object({
  step_index: z.int().min(0),
  outcome: BatchStepOutcomeSchema,
  runtime: BatchStepRuntimeSchema.nullable(),
  shell: z.string().nullable(),
  exit_code: z.int().nullable(),
  duration_ms: z.number().min(0),
  stdout: z.string(),
  stderr: z.string(),
  cache_key: z.string().nullable(),
});
export type ExecutorStepRecord = z.infer<typeof ExecutorStepRecordSchema>;

/** How a workspace's job ended: its steps, diff and changesets, written once. */
export const CompleteExecutorJobRequestSchema = z.strictObject({
  lease: ExecutorLeaseSchema,
  status: BatchWorkspaceStatusSchema,
  error: z.string().nullable(),
  diff: z.string().nullable(),
  steps: z.array(ExecutorStepRecordSchema),
  changesets: z.array(BatchChangesetSchema),
  /** Told after `workspace_finished` (the changesets' events). */
  events: z.array(BatchRunEventSchema),
});
export type CompleteExecutorJobRequest = z.infer<typeof CompleteExecutorJobRequestSchema>;

/**
 * An attempt that could not finish: `release` gives the job back at once without spending an
 * attempt (the executor is stopping); otherwise the queue retries it after a backoff, resuming
 * from the step cache.
 */
export const FailExecutorJobRequestSchema = z.strictObject({
  lease: ExecutorLeaseSchema,
  error: z.string().max(16_000),
  release: z.boolean(),
});

export const LeaseExecutorModelTokenRequestSchema = z.strictObject({ lease: ExecutorLeaseSchema });

/** The claimed job's model-provider token, minted by the server for that job only. */
export const ExecutorModelTokenSchema = z.object({
  /** `<server>/model-provider`, without an agent type. */
  base_url: z.string(),
  token: z.string(),
  job_id: z.string(),
  expires_at: Timestamp,
});

export const ReleaseExecutorModelTokenRequestSchema = z.strictObject({
  lease: ExecutorLeaseSchema,
  token: z.string().min(1).max(500),
});

/** A checkout an executor finds in its work directory: a workspace's attempt. */
export const ExecutorCheckoutSchema = z.strictObject({
  workspace_id: Id,
  attempt: z.int().min(0),
});

/**
 * The checkouts an executor found as it starts; the answer names those to keep (their workspace
 * runs on that attempt, or their run keeps logs): the others are leftovers of a killed executor.
 */
export const KeptExecutorCheckoutsRequestSchema = z.strictObject({
  checkouts: z.array(ExecutorCheckoutSchema).max(10_000),
});

export const KeptExecutorCheckoutsResponseSchema = z.object({
  kept: z.array(ExecutorCheckoutSchema),
});

/** A file a cached step result changed. */
export const ExecutorChangedFileSchema = z.object({
  path: z.string(),
  previous_path: z.string().optional(),
  status: z.enum(["added", "modified", "deleted", "renamed"]),
  insertions: z.int().min(0),
  deletions: z.int().min(0),
});

/** One step's cached result: the diff of every step up to it, its outputs, its output text. */
export const ExecutorCachedStepSchema = z.object({
  step_index: z.int().min(0),
  exit_code: z.int(),
  diff: z.string(),
  files: z.array(ExecutorChangedFileSchema),
  outputs: z.record(z.string(), z.unknown()),
  stdout: z.string(),
  stderr: z.string(),
});
export type ExecutorCachedStep = z.infer<typeof ExecutorCachedStepSchema>;

export const GetExecutorCachedStepQuerySchema = z.strictObject({ key: z.string().min(1).max(500) });

export const ExecutorCachedStepResponseSchema = z.object({
  result: ExecutorCachedStepSchema.nullable(),
});

/** A step result to cache, written only by an executor that holds a job. */
export const PutExecutorCachedStepRequestSchema = z.strictObject({
  lease: ExecutorLeaseSchema,
  key: z.string().min(1).max(500),
  result: ExecutorCachedStepSchema,
});
