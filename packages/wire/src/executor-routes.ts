// The executor API's routes and the admin routes of executor tokens, as entries of the server's
// route table (server-routes.ts spreads them in): the server serves them, the typed client calls
// them, and the OpenAPI document lists them from here.
import { WirePath } from "./constants.ts";
import {
  AppendExecutorJobEventsRequestSchema,
  ClaimExecutorJobRequestSchema,
  ClaimExecutorJobResponseSchema,
  CompleteExecutorJobRequestSchema,
  CreateExecutorTokenRequestSchema,
  CreateExecutorTokenResponseSchema,
  ExecutorCachedStepResponseSchema,
  ExecutorModelTokenSchema,
  ExecutorTokenListSchema,
  FailExecutorJobRequestSchema,
  GetExecutorCachedStepQuerySchema,
  HeartbeatExecutorJobsRequestSchema,
  HeartbeatExecutorJobsResponseSchema,
  KeptExecutorCheckoutsRequestSchema,
  KeptExecutorCheckoutsResponseSchema,
  LeaseExecutorModelTokenRequestSchema,
  PutExecutorCachedStepRequestSchema,
  ReleaseExecutorModelTokenRequestSchema,
} from "./executor-api.ts";
import type { ServerRoute } from "./server-routes.ts";

const executor = WirePath.executorApi;

export const ExecutorPath = {
  executorTokens: `${WirePath.serverApi}/executor-tokens`,
  executorToken: `${WirePath.serverApi}/executor-tokens/:token_id`,
  executorJobClaim: `${executor}/jobs/claim`,
  executorJobHeartbeat: `${executor}/jobs/heartbeat`,
  executorJobEvents: `${executor}/jobs/events`,
  executorJobComplete: `${executor}/jobs/complete`,
  executorJobFail: `${executor}/jobs/fail`,
  executorJobModelToken: `${executor}/jobs/model-token`,
  executorJobModelTokenRelease: `${executor}/jobs/model-token/release`,
  executorStepCache: `${executor}/step-cache`,
  executorCheckouts: `${executor}/checkouts`,
} as const;

/** Why an executor route answers 409: the lease sent is not the job's current claim. */
const STALE_LEASE =
  "the lease is not held by this executor (the job was taken over, cancelled or settled, or the lease is another executor's); drop the job";
/** Why an executor route answers 401. */
const EXECUTOR_AUTH =
  "no live executor token (an admin or API token is not one; a revoked one is refused)";

export const executorRoutes = [
  {
    operationId: "createExecutorToken",
    method: "post",
    path: ExecutorPath.executorTokens,
    summary:
      "Create an executor token, for `deckhand executor --server-url`; the answer is the only time it is shown",
    body: CreateExecutorTokenRequestSchema,
    success: { status: 201, schema: CreateExecutorTokenResponseSchema, description: "the token" },
    errors: { 400: "a bad field" },
  },
  {
    operationId: "listExecutorTokens",
    method: "get",
    path: ExecutorPath.executorTokens,
    summary: "Executor tokens (never the tokens themselves)",
    success: { status: 200, schema: ExecutorTokenListSchema, description: "the tokens" },
  },
  {
    operationId: "revokeExecutorToken",
    method: "delete",
    path: ExecutorPath.executorToken,
    summary:
      "Revoke an executor token: its executors are refused at their next call, and their jobs are taken over once their leases expire",
    success: { status: 204, schema: null, description: "revoked" },
    errors: { 404: "no such token" },
  },
  {
    operationId: "claimExecutorJob",
    method: "post",
    path: ExecutorPath.executorJobClaim,
    summary:
      "Executor: claim the next due batch workspace job with a lease (a job whose executor died is taken over once its lease expired)",
    body: ClaimExecutorJobRequestSchema,
    success: {
      status: 200,
      schema: ClaimExecutorJobResponseSchema,
      description: "the job and its lease, or null when none is due",
    },
    errors: { 400: "a bad field", 401: EXECUTOR_AUTH },
  },
  {
    operationId: "heartbeatExecutorJobs",
    method: "post",
    path: ExecutorPath.executorJobHeartbeat,
    summary:
      "Executor: renew the leases of held jobs; says per job whether it is still held and whether its workspace still runs (a cancel notice)",
    body: HeartbeatExecutorJobsRequestSchema,
    success: {
      status: 200,
      schema: HeartbeatExecutorJobsResponseSchema,
      description: "one answer per lease",
    },
    errors: { 400: "a bad field", 401: EXECUTOR_AUTH },
  },
  {
    operationId: "appendExecutorJobEvents",
    method: "post",
    path: ExecutorPath.executorJobEvents,
    summary: "Executor: append a held job's progress (step started, output, finished) to its run",
    body: AppendExecutorJobEventsRequestSchema,
    success: { status: 204, schema: null, description: "appended" },
    errors: {
      400: "a bad field",
      401: EXECUTOR_AUTH,
      409: STALE_LEASE,
    },
  },
  {
    operationId: "completeExecutorJob",
    method: "post",
    path: ExecutorPath.executorJobComplete,
    summary:
      "Executor: write a held job's end once (status, steps with their output, diff, changesets) and settle its queue task",
    body: CompleteExecutorJobRequestSchema,
    success: { status: 204, schema: null, description: "written" },
    errors: {
      400: "a bad field",
      401: EXECUTOR_AUTH,
      409: STALE_LEASE,
    },
  },
  {
    operationId: "failExecutorJob",
    method: "post",
    path: ExecutorPath.executorJobFail,
    summary:
      "Executor: give a held job back (at once when `release`, else retried after a backoff); it resumes from the step cache",
    body: FailExecutorJobRequestSchema,
    success: { status: 204, schema: null, description: "given back" },
    errors: {
      400: "a bad field",
      401: EXECUTOR_AUTH,
      409: STALE_LEASE,
    },
  },
  {
    operationId: "leaseExecutorModelToken",
    method: "post",
    path: ExecutorPath.executorJobModelToken,
    summary:
      "Executor: the model-provider token of a held job, minted by the server for that job (for its codingAgent steps)",
    body: LeaseExecutorModelTokenRequestSchema,
    success: { status: 201, schema: ExecutorModelTokenSchema, description: "the token" },
    errors: {
      400: "a bad field",
      401: EXECUTOR_AUTH,
      409: STALE_LEASE,
    },
  },
  {
    operationId: "releaseExecutorModelToken",
    method: "post",
    path: ExecutorPath.executorJobModelTokenRelease,
    summary: "Executor: revoke a model-provider token of a held job once its steps are done",
    body: ReleaseExecutorModelTokenRequestSchema,
    success: { status: 204, schema: null, description: "revoked" },
    errors: {
      400: "a bad field or a token of another job",
      401: EXECUTOR_AUTH,
      409: STALE_LEASE,
    },
  },
  {
    operationId: "getExecutorCachedStep",
    method: "get",
    path: ExecutorPath.executorStepCache,
    summary: "Executor: a step's cached result by its cache key",
    query: GetExecutorCachedStepQuerySchema,
    success: {
      status: 200,
      schema: ExecutorCachedStepResponseSchema,
      description: "the result, or null when none is cached",
    },
    errors: { 400: "a bad field", 401: EXECUTOR_AUTH },
  },
  {
    operationId: "putExecutorCachedStep",
    method: "post",
    path: ExecutorPath.executorStepCache,
    summary: "Executor: cache a step's result under its key, for a job it holds",
    body: PutExecutorCachedStepRequestSchema,
    success: { status: 204, schema: null, description: "stored" },
    errors: {
      400: "a bad field",
      401: EXECUTOR_AUTH,
      409: STALE_LEASE,
    },
  },
  {
    operationId: "keptExecutorCheckouts",
    method: "post",
    path: ExecutorPath.executorCheckouts,
    summary:
      "Executor: which of the checkouts in its work directory stay (their workspace runs on that attempt, or their run keeps logs); it removes the rest",
    body: KeptExecutorCheckoutsRequestSchema,
    success: {
      status: 200,
      schema: KeptExecutorCheckoutsResponseSchema,
      description: "the checkouts to keep",
    },
    errors: { 400: "a bad field", 401: EXECUTOR_AUTH },
  },
] as const satisfies readonly ServerRoute[];

/** Whether a path is the executor API's: the only routes an executor token reaches. */
export function isExecutorApiPath(path: string): boolean {
  return path === WirePath.executorApi || path.startsWith(`${WirePath.executorApi}/`);
}
