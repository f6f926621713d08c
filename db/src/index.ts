export {
  type CreateDbOptions,
  createDb,
  type Database,
  type DbHandle,
  type DbKind,
  type Executor,
  migrationsFolder,
  type NotificationHandler,
  type QueryResult,
  type Schema,
  type Transaction,
} from "./client.ts";
export { DataDirLockedError, LOCK_FILE_NAME } from "./data-dir-lock.ts";
export { DbError, type DbErrorCode } from "./errors.ts";
export {
  type EnqueueOptions,
  type EnqueueResult,
  enqueue,
  TASK_CHANNEL,
} from "./queue/enqueue.ts";
export { type TaskContext, type TaskDefinition, TaskRegistry } from "./queue/registry.ts";
export { TaskWorker, type WorkerOptions } from "./queue/worker.ts";
export {
  type AgentSessionStatus,
  agentSessionStatuses,
  agentSessions,
  type PendingChangeStatus,
  pendingChangeStatuses,
  pendingChanges,
  permissionRules,
  type RememberedPermissionAnswer,
  rememberedPermissions,
} from "./schema/agents.ts";
export {
  type BatchRunStatus,
  batchRunStatuses,
  batchRuns,
  batchSpecs,
  type ChangesetStatus,
  changesetStatuses,
  changesets,
  stepResults,
  type WorkspaceStatus,
  workspaceStatuses,
  workspaces,
} from "./schema/batches.ts";
export {
  chats,
  type MessagePartKind,
  type MessageRole,
  type MessageStatus,
  messagePartKinds,
  messageParts,
  messageRoles,
  messageStatuses,
  messages,
  sessionEvents,
} from "./schema/chats.ts";
export {
  apiTokens,
  modelTokens,
  modelUsage,
} from "./schema/model-provider.ts";
export {
  type ApprovalPolicyName,
  approvalPolicies,
  projects,
  type SessionStatus,
  sessionStatuses,
  sessions,
  sessionWorktrees,
  type WorktreeStatus,
  worktreeStatuses,
} from "./schema/projects.ts";
export {
  type ProviderProbeStatus,
  providerProbeStatuses,
  providerProbes,
} from "./schema/providers.ts";
export {
  type TaskStatus,
  taskStatuses,
  tasks,
} from "./schema/tasks.ts";
