import { z } from "zod";
import {
  ApplyBatchRunQuerySchema,
  BatchChangeListSchema,
  BatchChangeSchema,
  BatchChangesetListSchema,
  BatchRunListQuerySchema,
  BatchRunListSchema,
  BatchRunSchema,
  BatchRunStreamFrameSchema,
  BatchRunStreamQuerySchema,
  BatchStepDetailSchema,
  BatchTakeoverResponseSchema,
  BatchWorkspaceListSchema,
  BatchWorkspaceSchema,
  BulkChangesetOperationRequestSchema,
  BulkChangesetOperationResultSchema,
  ChangesetEventListSchema,
  CreateBatchRunRequestSchema,
  ResolveBatchWorkspacesRequestSchema,
  ResolvedBatchWorkspacesSchema,
} from "./batch-api.ts";
import { BatchRunSpendSchema, ServerBudgetsSchema, SessionSpendSchema } from "./budgets.ts";
import { WirePath } from "./constants.ts";
import { ErrorResponseSchema } from "./errors.ts";
import { ExecutorPath, executorRoutes } from "./executor-routes.ts";
import { ProcessOutputResponseSchema, SignalProcessResponseSchema } from "./process-api.ts";
import {
  ProvidersConfigPatchSchema,
  ProvidersConfigResponseSchema,
  ProvidersRefreshRequestSchema,
  ProvidersSnapshotQuerySchema,
  ProvidersSnapshotSchema,
} from "./providers.ts";
import { BatchChangeRolloutSchema } from "./rollout.ts";
import {
  AgentControlResponseSchema,
  AnswerPermissionRequestSchema,
  ApiTokenListSchema,
  ApplyPendingChangeResponseSchema,
  ChatListSchema,
  ChatSchema,
  CloseSessionQuerySchema,
  CreateApiTokenRequestSchema,
  CreateApiTokenResponseSchema,
  CreateChatRequestSchema,
  CreateMessageRequestSchema,
  CreateMessageResponseSchema,
  CreateProjectRequestSchema,
  CreateSessionRequestSchema,
  MessageListSchema,
  PendingChangeListQuerySchema,
  PendingChangeListSchema,
  ProjectBranchListSchema,
  ProjectListSchema,
  ProjectSchema,
  RejectPendingChangeResponseSchema,
  ServerHealthSchema,
  SessionActivityEventSchema,
  SessionListQuerySchema,
  SessionListSchema,
  SessionSchema,
  UpdateSessionRequestSchema,
  UsageQuerySchema,
  UsageResponseSchema,
} from "./server-api.ts";
import {
  SessionProcessListSchema,
  SessionProcessOutputQuerySchema,
  SessionProcessSignalRequestSchema,
} from "./session-processes.ts";
import { SessionStreamFrameSchema, SessionStreamQuerySchema } from "./session-stream.ts";
import {
  CodeHostConnectionListSchema,
  ModelUpstreamListSchema,
  SessionUsageResponseSchema,
} from "./settings-api.ts";

export type HttpMethod = "get" | "post" | "patch" | "delete";

/**
 * One route of the server API. `path` is in the router's `:param` form; the OpenAPI document
 * turns it into `{param}`. The server registers its handlers from this list and a test checks
 * that every route listed here answers, so the document and the server cannot drift apart.
 */
export interface ServerRoute {
  operationId: string;
  method: HttpMethod;
  path: string;
  summary: string;
  query?: z.ZodType;
  body?: z.ZodType;
  /** The body's media type when it is not `application/json` (a JSON merge patch); JSON either way. */
  bodyContentType?: string;
  /** Success status and body schema; `null` body for 204. JSON unless `contentType` says. */
  success: {
    status: number;
    schema: z.ZodType | null;
    description: string;
    contentType?: string;
    /** Other statuses whose body is this schema too, not an error, with why (health's 503). */
    alsoAnswers?: Record<number, string>;
  };
  /** Error statuses this route answers besides 401, 403, 500 (and 415 with a body), with why. */
  errors?: Record<number, string>;
  /** A WebSocket upgrade: the success schema describes each frame. */
  websocket?: boolean;
}

const api = WirePath.serverApi;

export const ServerPath = {
  health: `${api}/health`,
  projects: `${api}/projects`,
  project: `${api}/projects/:project_id`,
  projectSessions: `${api}/projects/:project_id/sessions`,
  projectBranches: `${api}/projects/:project_id/branches`,
  sessions: `${api}/sessions`,
  sessionActivity: `${api}/session-activity`,
  session: `${api}/sessions/:session_id`,
  sessionStream: `${api}/sessions/:session_id/stream`,
  sessionChats: `${api}/sessions/:session_id/chats`,
  sessionPendingChanges: `${api}/sessions/:session_id/pending-changes`,
  sessionProcesses: `${api}/sessions/:session_id/processes`,
  sessionProcessOutput: `${api}/sessions/:session_id/processes/:process_id/output`,
  sessionProcessSignal: `${api}/sessions/:session_id/processes/:process_id/signal`,
  chatMessages: `${api}/chats/:chat_id/messages`,
  applyPendingChange: `${api}/pending-changes/:pending_change_id/apply`,
  rejectPendingChange: `${api}/pending-changes/:pending_change_id/reject`,
  usage: `${api}/usage`,
  sessionUsage: `${api}/sessions/:session_id/usage`,
  sessionSpend: `${api}/sessions/:session_id/spend`,
  budgets: `${api}/budgets`,
  modelUpstreams: `${api}/model-upstreams`,
  codeHostConnections: `${api}/code-host-connections`,
  apiTokens: `${api}/tokens`,
  apiToken: `${api}/tokens/:token_id`,
  agentCancel: `${api}/sessions/:session_id/agents/:agent/cancel`,
  agentPermission: `${api}/sessions/:session_id/agents/:agent/permissions/:request_id`,
  providers: `${api}/providers`,
  providersSnapshot: `${api}/providers/snapshot`,
  providersConfig: `${api}/providers/config`,
  providersRefresh: `${api}/providers/refresh`,
  providerDiagnostic: `${api}/providers/:provider_id/diagnostic`,
  batchRuns: `${api}/batch-runs`,
  batchRun: `${api}/batch-runs/:batch_run_id`,
  batchRunStream: `${api}/batch-runs/:batch_run_id/stream`,
  batchRunWorkspaces: `${api}/batch-runs/:batch_run_id/workspaces`,
  batchRunChangesets: `${api}/batch-runs/:batch_run_id/changesets`,
  batchRunCancel: `${api}/batch-runs/:batch_run_id/cancel`,
  batchRunApply: `${api}/batch-runs/:batch_run_id/apply`,
  batchRunRetry: `${api}/batch-runs/:batch_run_id/retry`,
  batchRunSpend: `${api}/batch-runs/:batch_run_id/spend`,
  resolveBatchWorkspaces: `${api}/batch-workspaces/resolve`,
  batchWorkspace: `${api}/batch-workspaces/:workspace_id`,
  batchWorkspaceStep: `${api}/batch-workspaces/:workspace_id/steps/:step_index`,
  batchWorkspaceRetry: `${api}/batch-workspaces/:workspace_id/retry`,
  batchWorkspaceTakeover: `${api}/batch-workspaces/:workspace_id/takeover`,
  batchChanges: `${api}/batch-changes`,
  batchChange: `${api}/batch-changes/:name`,
  batchChangeRefresh: `${api}/batch-changes/:name/refresh`,
  batchChangeBulk: `${api}/batch-changes/:name/changesets/bulk`,
  batchChangeRollout: `${api}/batch-changes/:name/rollout`,
  changesetEvents: `${api}/changesets/:changeset_id/events`,
  ...ExecutorPath,
} as const;

export { serverPath } from "./server-path.ts";

/**
 * The route table. Its literal type is kept (`as const`), so each route's path, schemas and
 * success status reach whoever serves or calls it: see `RouteInput` and `RouteResult`.
 */
export const serverRoutes = [
  {
    operationId: "getHealth",
    method: "get",
    path: ServerPath.health,
    summary: "Database, queue and workspace-agent reachability",
    success: {
      status: 200,
      schema: ServerHealthSchema,
      description: "everything is reachable",
      alsoAnswers: { 503: "something is unreachable; the body says what" },
    },
  },
  {
    operationId: "createProject",
    method: "post",
    path: ServerPath.projects,
    summary: "Add a project: a local git repository path, or a URL to clone",
    body: CreateProjectRequestSchema,
    success: { status: 201, schema: ProjectSchema, description: "the project" },
    errors: { 400: "not a git repository, clone failed, or a bad field" },
  },
  {
    operationId: "listProjects",
    method: "get",
    path: ServerPath.projects,
    summary: "List projects, newest first",
    success: { status: 200, schema: ProjectListSchema, description: "the projects" },
  },
  {
    operationId: "getProject",
    method: "get",
    path: ServerPath.project,
    summary: "One project",
    success: { status: 200, schema: ProjectSchema, description: "the project" },
    errors: { 404: "no such project" },
  },
  {
    operationId: "listProjectBranches",
    method: "get",
    path: ServerPath.projectBranches,
    summary: "The branches of a project's repository a session can start from, its default first",
    success: { status: 200, schema: ProjectBranchListSchema, description: "the branches" },
    errors: { 404: "no such project" },
  },
  {
    operationId: "createSession",
    method: "post",
    path: ServerPath.projectSessions,
    summary: "Open a session: a shared git worktree on a new branch from the default branch",
    body: CreateSessionRequestSchema,
    success: { status: 201, schema: SessionSchema, description: "the session" },
    errors: {
      400: "a bad field",
      404: "no such project",
      409: "the branch exists already, or the default branch no longer resolves",
    },
  },
  {
    operationId: "listSessions",
    method: "get",
    path: ServerPath.projectSessions,
    summary: "A project's sessions, newest first",
    success: { status: 200, schema: SessionListSchema, description: "the sessions" },
    errors: { 404: "no such project" },
  },
  {
    operationId: "listAllSessions",
    method: "get",
    path: ServerPath.sessions,
    summary:
      "Sessions of every project, newest first: not archived by default; `q` searches title, branch and project name",
    query: SessionListQuerySchema,
    success: { status: 200, schema: SessionListSchema, description: "the sessions" },
    errors: { 400: "a bad query parameter" },
  },
  {
    operationId: "updateSession",
    method: "patch",
    path: ServerPath.session,
    summary: "Archive or unarchive a session",
    body: UpdateSessionRequestSchema,
    success: { status: 200, schema: SessionSchema, description: "the session" },
    errors: { 400: "a bad field", 404: "no such session" },
  },
  {
    operationId: "streamSessionActivity",
    method: "get",
    path: ServerPath.sessionActivity,
    summary:
      "WebSocket: a session, whole, each time its activity, latest event id or archived state changes; `ready` first",
    query: SessionStreamQuerySchema,
    websocket: true,
    success: { status: 101, schema: SessionActivityEventSchema, description: "one frame" },
    errors: { 426: "not a WebSocket upgrade request" },
  },
  {
    operationId: "getSession",
    method: "get",
    path: ServerPath.session,
    summary: "One session",
    success: { status: 200, schema: SessionSchema, description: "the session" },
    errors: { 404: "no such session" },
  },
  {
    operationId: "closeSession",
    method: "delete",
    path: ServerPath.session,
    summary: "Close a session and remove its worktree (its branch stays)",
    query: CloseSessionQuerySchema,
    success: { status: 200, schema: SessionSchema, description: "the closed session" },
    errors: {
      400: "a bad query parameter",
      404: "no such session",
      409: "the worktree has unapplied changes; pass force=true to discard them",
    },
  },
  {
    operationId: "streamSession",
    method: "get",
    path: ServerPath.sessionStream,
    summary:
      "WebSocket: every event of the session after `after`, then live events; each frame is JSON",
    query: SessionStreamQuerySchema,
    websocket: true,
    success: { status: 101, schema: SessionStreamFrameSchema, description: "one frame" },
    errors: { 404: "no such session", 426: "not a WebSocket upgrade request" },
  },
  {
    operationId: "createChat",
    method: "post",
    path: ServerPath.sessionChats,
    summary: "Start a chat in a session",
    body: CreateChatRequestSchema,
    success: { status: 201, schema: ChatSchema, description: "the chat" },
    errors: {
      400: "a bad field",
      404: "no such session or parent chat",
      409: "the session is closed",
    },
  },
  {
    operationId: "listChats",
    method: "get",
    path: ServerPath.sessionChats,
    summary: "A session's chats, oldest first",
    success: { status: 200, schema: ChatListSchema, description: "the chats" },
    errors: { 404: "no such session" },
  },
  {
    operationId: "createMessage",
    method: "post",
    path: ServerPath.chatMessages,
    summary: "Send a user message to an agent; its turn is queued",
    body: CreateMessageRequestSchema,
    success: {
      status: 202,
      schema: CreateMessageResponseSchema,
      description: "the stored message and the task that runs the turn",
    },
    errors: { 400: "a bad field", 404: "no such chat", 409: "the session is closed" },
  },
  {
    operationId: "listMessages",
    method: "get",
    path: ServerPath.chatMessages,
    summary: "A chat's messages with their parts, oldest first",
    success: { status: 200, schema: MessageListSchema, description: "the messages" },
    errors: { 404: "no such chat" },
  },
  {
    operationId: "listPendingChanges",
    method: "get",
    path: ServerPath.sessionPendingChanges,
    summary: "Changes agents made in the session worktree, with their diffs",
    query: PendingChangeListQuerySchema,
    success: { status: 200, schema: PendingChangeListSchema, description: "the changes" },
    errors: { 404: "no such session" },
  },
  {
    operationId: "applyPendingChange",
    method: "post",
    path: ServerPath.applyPendingChange,
    summary: "Commit a pending change on the session branch",
    success: {
      status: 200,
      schema: ApplyPendingChangeResponseSchema,
      description: "the change and its commit",
    },
    errors: {
      404: "no such pending change",
      409: "already applied or rejected, the file is unchanged again, or the session is closed",
    },
  },
  {
    operationId: "rejectPendingChange",
    method: "post",
    path: ServerPath.rejectPendingChange,
    summary: "Restore the file as the session branch has it (remove it if it is new)",
    success: {
      status: 200,
      schema: RejectPendingChangeResponseSchema,
      description: "the rejected change",
    },
    errors: {
      404: "no such pending change",
      409: "already applied or rejected, the file is unchanged again, or the session is closed",
    },
  },
  {
    operationId: "cancelAgentTurn",
    method: "post",
    path: ServerPath.agentCancel,
    summary: "Cancel the agent's running turn in this session (pending permission requests too)",
    success: { status: 202, schema: AgentControlResponseSchema, description: "sent" },
    errors: { 404: "no such session" },
  },
  {
    operationId: "answerPermission",
    method: "post",
    path: ServerPath.agentPermission,
    summary: "Answer an agent's permission_request with the kind of the option chosen",
    body: AnswerPermissionRequestSchema,
    success: { status: 202, schema: AgentControlResponseSchema, description: "sent" },
    errors: { 404: "no such session" },
  },
  {
    operationId: "listSessionProcesses",
    method: "get",
    path: ServerPath.sessionProcesses,
    summary: "The processes the session's agents started (every chat of it), newest first",
    success: { status: 200, schema: SessionProcessListSchema, description: "the processes" },
    errors: { 404: "no such session" },
  },
  {
    operationId: "getSessionProcessOutput",
    method: "get",
    path: ServerPath.sessionProcessOutput,
    summary:
      "A session process's output: all that is kept (head and tail), or with `cursor` only what came after it; `wait=true` long-polls",
    query: SessionProcessOutputQuerySchema,
    success: { status: 200, schema: ProcessOutputResponseSchema, description: "the output" },
    errors: {
      400: "a bad query parameter",
      404: "no such session, or no such process in it",
    },
  },
  {
    operationId: "signalSessionProcess",
    method: "post",
    path: ServerPath.sessionProcessSignal,
    summary:
      "Send a session process (its whole process group) interrupt (SIGINT), terminate (SIGTERM) or kill (SIGKILL)",
    body: SessionProcessSignalRequestSchema,
    success: { status: 200, schema: SignalProcessResponseSchema, description: "sent" },
    errors: {
      400: "a bad field",
      404: "no such session, or no such process in it",
      409: "the process and everything it started have exited",
    },
  },
  {
    operationId: "getUsage",
    method: "get",
    path: ServerPath.usage,
    summary: "Model usage recorded for a job (or session turn), with totals",
    query: UsageQuerySchema,
    success: { status: 200, schema: UsageResponseSchema, description: "the usage" },
    errors: { 400: "job_id is missing" },
  },
  {
    operationId: "getSessionUsage",
    method: "get",
    path: ServerPath.sessionUsage,
    summary:
      "Model usage of every agent a session ran (each under its own job), with totals per job and in all",
    success: { status: 200, schema: SessionUsageResponseSchema, description: "the usage" },
    errors: { 404: "no such session" },
  },
  {
    operationId: "getSessionSpend",
    method: "get",
    path: ServerPath.sessionSpend,
    summary: "A session's model spend against its budget, and the server's spend today",
    success: { status: 200, schema: SessionSpendSchema, description: "the spend" },
    errors: { 404: "no such session" },
  },
  {
    operationId: "getBudgets",
    method: "get",
    path: ServerPath.budgets,
    summary: "The model spend budgets config.json sets, the price table's models and today's spend",
    success: { status: 200, schema: ServerBudgetsSchema, description: "the budgets" },
  },
  {
    operationId: "listModelUpstreams",
    method: "get",
    path: ServerPath.modelUpstreams,
    summary:
      "The configured model upstreams: the agent type each serves, its wire format, base URL and the name of its key's variable (never the key)",
    success: { status: 200, schema: ModelUpstreamListSchema, description: "the upstreams" },
  },
  {
    operationId: "listCodeHostConnections",
    method: "get",
    path: ServerPath.codeHostConnections,
    summary:
      "The code hosts changesets are published to: type, URL, publication rate and the name of the token's variable with whether it is set (never the token)",
    success: {
      status: 200,
      schema: CodeHostConnectionListSchema,
      description: "the connections",
    },
  },
  {
    operationId: "createApiToken",
    method: "post",
    path: ServerPath.apiTokens,
    summary: "Create an API token; the answer is the only time it is shown",
    body: CreateApiTokenRequestSchema,
    success: { status: 201, schema: CreateApiTokenResponseSchema, description: "the token" },
    errors: { 400: "a bad field" },
  },
  {
    operationId: "listApiTokens",
    method: "get",
    path: ServerPath.apiTokens,
    summary: "API tokens (never the tokens themselves)",
    success: { status: 200, schema: ApiTokenListSchema, description: "the tokens" },
  },
  {
    operationId: "revokeApiToken",
    method: "delete",
    path: ServerPath.apiToken,
    summary: "Revoke an API token",
    success: { status: 204, schema: null, description: "revoked" },
    errors: { 404: "no such token" },
  },
  {
    operationId: "getProvidersSnapshot",
    method: "get",
    path: ServerPath.providersSnapshot,
    summary:
      "Every provider (agent) with its status, version, models, modes and commands; with `project_id`, commands are also looked up in that project",
    query: ProvidersSnapshotQuerySchema,
    success: { status: 200, schema: ProvidersSnapshotSchema, description: "the snapshot" },
    errors: { 400: "a malformed project_id", 404: "no such project" },
  },
  {
    operationId: "getProvidersConfig",
    method: "get",
    path: ServerPath.providersConfig,
    summary: "The providers config file, its ETag and any problems found in it",
    success: { status: 200, schema: ProvidersConfigResponseSchema, description: "the config" },
  },
  {
    operationId: "patchProvidersConfig",
    method: "patch",
    path: ServerPath.providersConfig,
    summary:
      "Change the providers config with a JSON merge patch (application/merge-patch+json); send If-Match with the ETag",
    body: ProvidersConfigPatchSchema,
    bodyContentType: "application/merge-patch+json",
    success: { status: 200, schema: ProvidersConfigResponseSchema, description: "the new config" },
    errors: {
      400: "not a JSON object, or the result is invalid",
      412: "If-Match names another version of the file (compared strongly: a weak tag never matches)",
      415: "unsupported_media_type: not sent as application/merge-patch+json or application/json",
    },
  },
  {
    operationId: "refreshProviders",
    method: "post",
    path: ServerPath.providersRefresh,
    summary: "Probe providers now (all, or `ids`); `force` ignores cached results",
    body: ProvidersRefreshRequestSchema,
    success: { status: 200, schema: ProvidersSnapshotSchema, description: "the new snapshot" },
  },
  {
    operationId: "getProviderDiagnostic",
    method: "get",
    path: ServerPath.providerDiagnostic,
    summary: "Plain text: the resolved command, its version output, the last probe error",
    success: {
      status: 200,
      schema: z.string(),
      description: "the diagnostic",
      contentType: "text/plain",
    },
    errors: { 404: "no such provider" },
  },
  {
    operationId: "createBatchRun",
    method: "post",
    path: ServerPath.batchRuns,
    summary:
      "Run a batch spec: resolve its workspaces and queue one job each; `action: apply` also writes the changesets as branches",
    body: CreateBatchRunRequestSchema,
    success: { status: 201, schema: BatchRunSchema, description: "the run, queued" },
    errors: {
      400: "the spec is invalid (every problem as file:line:column: field: message), its query or branches cannot be resolved, or a bad field",
      404: "a repository named by the spec is not on any code host",
      502: "a code host's repository could not be cloned or fetched",
    },
  },
  {
    operationId: "listBatchRuns",
    method: "get",
    path: ServerPath.batchRuns,
    summary: "Batch runs, newest first",
    query: BatchRunListQuerySchema,
    success: { status: 200, schema: BatchRunListSchema, description: "the runs" },
  },
  {
    operationId: "getBatchRun",
    method: "get",
    path: ServerPath.batchRun,
    summary: "A batch run with its stats",
    success: { status: 200, schema: BatchRunSchema, description: "the run" },
    errors: { 404: "no such run" },
  },
  {
    operationId: "streamBatchRun",
    method: "get",
    path: ServerPath.batchRunStream,
    summary:
      "WebSocket (subprotocol deckhand.batch-run-stream.v1): the run's events after `?after=`, a ready frame, then live events",
    query: BatchRunStreamQuerySchema,
    websocket: true,
    success: { status: 101, schema: BatchRunStreamFrameSchema, description: "each frame" },
    errors: { 400: "after is not an event id", 404: "no such run" },
  },
  {
    operationId: "listBatchRunWorkspaces",
    method: "get",
    path: ServerPath.batchRunWorkspaces,
    summary: "A run's workspaces with their state and steps, in resolution order",
    success: { status: 200, schema: BatchWorkspaceListSchema, description: "the workspaces" },
    errors: { 404: "no such run" },
  },
  {
    operationId: "listBatchRunChangesets",
    method: "get",
    path: ServerPath.batchRunChangesets,
    summary: "A run's changesets (each with its diff, rendered template and apply state)",
    success: { status: 200, schema: BatchChangesetListSchema, description: "the changesets" },
    errors: { 404: "no such run" },
  },
  {
    operationId: "cancelBatchRun",
    method: "post",
    path: ServerPath.batchRunCancel,
    summary: "Cancel a run: waiting workspaces are cancelled, running ones are stopped",
    success: { status: 200, schema: BatchRunSchema, description: "the run" },
    errors: { 404: "no such run" },
  },
  {
    operationId: "applyBatchRun",
    method: "post",
    path: ServerPath.batchRunApply,
    summary:
      "Apply a finished preview: write its changesets as branches (pushed where a remote is); `skip_errors=true` applies those of the workspaces that succeeded in a run whose others failed",
    query: ApplyBatchRunQuerySchema,
    success: { status: 202, schema: BatchRunSchema, description: "the run; apply is queued" },
    errors: {
      404: "no such run",
      409: "the run has not finished, is being applied, failed (without skip_errors) or has no changeset",
    },
  },
  {
    operationId: "retryBatchRun",
    method: "post",
    path: ServerPath.batchRunRetry,
    summary: "Run every failed, timed-out or cancelled workspace of a finished run again",
    success: { status: 202, schema: BatchRunSchema, description: "the run, running again" },
    errors: { 404: "no such run", 409: "the run has not finished" },
  },
  {
    operationId: "getBatchRunSpend",
    method: "get",
    path: ServerPath.batchRunSpend,
    summary: "A run's model spend, per workspace, against the run's and each workspace's budget",
    success: { status: 200, schema: BatchRunSpendSchema, description: "the spend" },
    errors: { 404: "no such run" },
  },
  {
    operationId: "resolveBatchWorkspaces",
    method: "post",
    path: ServerPath.resolveBatchWorkspaces,
    summary: "The workspaces a spec would run in, before anything runs",
    body: ResolveBatchWorkspacesRequestSchema,
    success: { status: 200, schema: ResolvedBatchWorkspacesSchema, description: "the workspaces" },
    errors: {
      400: "the spec is invalid, or its query or branches cannot be resolved",
      404: "a repository named by the spec is not on any code host",
      502: "a code host's repository could not be cloned or fetched",
    },
  },
  {
    operationId: "getBatchWorkspace",
    method: "get",
    path: ServerPath.batchWorkspace,
    summary: "One workspace with its steps",
    success: { status: 200, schema: BatchWorkspaceSchema, description: "the workspace" },
    errors: { 404: "no such workspace" },
  },
  {
    operationId: "getBatchWorkspaceStep",
    method: "get",
    path: ServerPath.batchWorkspaceStep,
    summary: "One step of a workspace: its logs, outputs and the diff after it",
    success: { status: 200, schema: BatchStepDetailSchema, description: "the step" },
    errors: { 404: "no such workspace or step" },
  },
  {
    operationId: "retryBatchWorkspace",
    method: "post",
    path: ServerPath.batchWorkspaceRetry,
    summary: "Run one finished workspace again (cached steps are not run again)",
    success: { status: 202, schema: BatchWorkspaceSchema, description: "the workspace, queued" },
    errors: { 404: "no such workspace", 409: "the workspace is still running" },
  },
  {
    operationId: "takeOverBatchWorkspace",
    method: "post",
    path: ServerPath.batchWorkspaceTakeover,
    summary:
      "Open an interactive session on a finished workspace's checkout; its applied changes become the workspace's changeset on the next preview",
    success: {
      status: 201,
      schema: BatchTakeoverResponseSchema,
      description:
        "the session: a new one at the workspace's revision with its result committed, or the workspace's session again while it is open",
    },
    errors: {
      404: "no such workspace",
      409: "the workspace is still pending or running, or its revision is not in the repository any more",
    },
  },
  {
    operationId: "listBatchChanges",
    method: "get",
    path: ServerPath.batchChanges,
    summary:
      "Every batch change (spec name) with its counts per state, burndown and latest run, the most recently run first",
    success: { status: 200, schema: BatchChangeListSchema, description: "the batch changes" },
  },
  {
    operationId: "getBatchChange",
    method: "get",
    path: ServerPath.batchChange,
    summary:
      "A batch change (every run of one spec name): its tracked changesets with their code host state, counts per state and the burndown",
    success: { status: 200, schema: BatchChangeSchema, description: "the batch change" },
    errors: { 404: "no run has that spec name" },
  },
  {
    operationId: "refreshBatchChange",
    method: "post",
    path: ServerPath.batchChangeRefresh,
    summary:
      "Read every tracked changeset's state, review, checks and mergeability from its code host now (and run due changeset hooks)",
    success: { status: 200, schema: BatchChangeSchema, description: "the batch change, refreshed" },
    errors: { 404: "no run has that spec name" },
  },
  {
    operationId: "bulkBatchChangeChangesets",
    method: "post",
    path: ServerPath.batchChangeBulk,
    summary:
      "Publish, close, comment on, merge or retry selected changesets of a batch change; each reports its own result",
    body: BulkChangesetOperationRequestSchema,
    success: {
      status: 200,
      schema: BulkChangesetOperationResultSchema,
      description: "one result per changeset",
    },
    errors: { 404: "no run has that spec name" },
  },
  {
    operationId: "getBatchChangeRollout",
    method: "get",
    path: ServerPath.batchChangeRollout,
    summary:
      "A batch change's rollout: its pace, what waits to be published and when each pull request goes out",
    success: { status: 200, schema: BatchChangeRolloutSchema, description: "the rollout" },
    errors: { 404: "no run has that spec name" },
  },
  {
    operationId: "listChangesetEvents",
    method: "get",
    path: ServerPath.changesetEvents,
    summary: "A changeset's history on its code host, oldest first",
    success: { status: 200, schema: ChangesetEventListSchema, description: "the events" },
    errors: { 404: "no such changeset" },
  },
  ...executorRoutes,
] as const satisfies readonly ServerRoute[];

function openApiPath(path: string): string {
  return path.replace(/:([a-z_]+)/g, "{$1}");
}

function schemaOf(schema: z.ZodType, io: "input" | "output"): unknown {
  return z.toJSONSchema(schema, { io, unrepresentable: "any", target: "openapi-3.0" });
}

/** The OpenAPI 3.0 document of the server API, as checked in as `openapi.json`. */
export function buildOpenApiDocument(version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const errorBody = {
    content: { "application/json": { schema: schemaOf(ErrorResponseSchema, "output") } },
  };
  // Every route as the general shape, its optional fields included.
  const routes: readonly ServerRoute[] = serverRoutes;
  for (const route of routes) {
    const parameters: unknown[] = [...route.path.matchAll(/:([a-z_]+)/g)].map((match) => ({
      name: match[1],
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
    if (route.query) {
      const query = schemaOf(route.query, "input") as {
        properties?: Record<string, unknown>;
        required?: string[];
      };
      for (const [name, schema] of Object.entries(query.properties ?? {})) {
        parameters.push({
          name,
          in: "query",
          required: query.required?.includes(name) ?? false,
          schema,
        });
      }
    }
    const successContent = route.success.schema
      ? {
          content: {
            [route.success.contentType ?? "application/json"]: {
              schema: schemaOf(route.success.schema, "output"),
            },
          },
        }
      : {};
    const responses: Record<string, unknown> = {
      [String(route.success.status)]: {
        description: route.success.description,
        ...successContent,
      },
      "401": { description: "missing or wrong bearer token", ...errorBody },
      "403": {
        description:
          "host_not_allowed: the Host is not one of the server's names; origin_not_allowed: a browser request from another origin",
        ...errorBody,
      },
      ...(route.body
        ? {
            "415": {
              description: "unsupported_media_type: the body is not sent as application/json",
              ...errorBody,
            },
          }
        : {}),
      "500": { description: "unexpected failure (details are in the server log)", ...errorBody },
    };
    for (const [status, description] of Object.entries(route.errors ?? {})) {
      responses[status] = { description, ...errorBody };
    }
    for (const [status, description] of Object.entries(route.success.alsoAnswers ?? {})) {
      responses[status] = { description, ...successContent };
    }
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(route.body
        ? {
            requestBody: {
              required: true,
              content: {
                [route.bodyContentType ?? "application/json"]: {
                  schema: schemaOf(route.body, "input"),
                },
              },
            },
          }
        : {}),
      responses,
      ...(route.websocket ? { "x-websocket": true } : {}),
    };
    const key = openApiPath(route.path);
    paths[key] = { ...(paths[key] ?? {}), [route.method]: operation };
  }
  return {
    openapi: "3.0.3",
    info: {
      title: "Deckhand server API",
      version,
      description:
        "Generated from @deckhand/wire by `pnpm --filter @deckhand/wire generate`; do not edit by hand.",
    },
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
    },
    security: [{ bearer: [] }],
    paths,
  };
}

/** Stable text form of the OpenAPI document. */
export function renderOpenApiDocument(version: string): string {
  return `${JSON.stringify(buildOpenApiDocument(version), null, 2)}\n`;
}

/** One route of the table, with its literal types. */
export type ServerRouteEntry = (typeof serverRoutes)[number];
export type ServerOperationId = ServerRouteEntry["operationId"];
/** The route with operation id `Id`. */
export type ServerRouteOf<Id extends ServerOperationId> = Extract<
  ServerRouteEntry,
  { operationId: Id }
>;

/** The names of a `:param` path's parameters: `/a/:x/b/:y` gives `"x" | "y"`. */
export type PathParameterNames<Path extends string> =
  Path extends `${string}:${infer Name}/${infer Rest}`
    ? Name | PathParameterNames<Rest>
    : Path extends `${string}:${infer Name}`
      ? Name
      : never;

/**
 * What a route's handler receives once the request is validated: its path parameters by name,
 * its query and body as the route's schemas output them (an empty query and no body when the
 * route declares none).
 */
export interface RouteInput<Route extends ServerRoute> {
  params: { [Name in PathParameterNames<Route["path"]>]: string };
  query: Route extends { query: z.ZodType } ? z.output<Route["query"]> : Record<string, never>;
  body: Route extends { body: z.ZodType } ? z.output<Route["body"]> : undefined;
}

/** What a route answers with: its success schema's JSON form, or null for a body-less answer. */
export type RouteResult<Route extends ServerRoute> = Route["success"]["schema"] extends z.ZodType
  ? z.input<Route["success"]["schema"]>
  : null;

/**
 * The route table without its schemas, as `server-route-index.generated.json` holds it: what a
 * client needs to send a request before it has built the schemas that check the answer.
 */
export function renderServerRouteIndex(): string {
  const routes = (serverRoutes as readonly ServerRoute[]).map((route) => ({
    operationId: route.operationId,
    method: route.method,
    path: route.path,
    body: route.body !== undefined,
    ...(route.bodyContentType !== undefined ? { bodyContentType: route.bodyContentType } : {}),
    websocket: route.websocket === true,
  }));
  return `${JSON.stringify(
    {
      $comment:
        "Generated by `pnpm --filter @deckhand/wire generate` from serverRoutes; do not edit.",
      routes,
    },
    null,
    2,
  )}\n`;
}
