export {
  type CreateDbOptions,
  createDb,
  type Database,
  type DbHandle,
  type DbKind,
  type Executor,
  type NotificationHandler,
  type QueryResult,
  type Schema,
  type Transaction,
} from "./client.ts";
export { DataDirLockedError } from "./data-dir-lock.ts";
export { DbError, type DbErrorCode } from "./errors.ts";
export {
  EventFeedHub,
  type EventFeedHubOptions,
  type FeedEvent,
  type FeedNotice,
  type FeedSubscribeOptions,
  type FeedSubscription,
  type ReadFeedEvents,
} from "./event-feed-hub.ts";
export { GroupCommitWriter, type GroupCommitWriterOptions } from "./group-commit-writer.ts";
export {
  type EnqueueOptions,
  type EnqueueResult,
  enqueue,
  enqueueAll,
} from "./queue/enqueue.ts";
export {
  type ClaimedTask,
  claimTasks,
  completeTask,
  failExhaustedLeases,
  failTask,
  releaseTasks,
  renewLeases,
  retryDelayMs,
  type TaskLease,
} from "./queue/leases.ts";
export { type TaskContext, type TaskDefinition, TaskRegistry } from "./queue/registry.ts";
export { TaskWorker, type WorkerOptions } from "./queue/worker.ts";
export {
  agentSessions,
  type PendingChangeStatus,
  pendingChangeStatuses,
  pendingChanges,
  permissionRules,
  rememberedPermissions,
} from "./schema/agents.ts";
export {
  type BatchRunAction,
  type BatchRunStatus,
  batchRunEvents,
  batchRuns,
  batchSpecs,
  type ChangesetApplyOperation,
  type ChangesetExternalState,
  type ChangesetPublicationState,
  type ChangesetStatus,
  changesetEvents,
  changesetExternalStates,
  changesetPublications,
  changesets,
  stepResults,
  type WorkspaceStatus,
  type WorkspaceStepOutcome,
  workspaceSteps,
  workspaces,
} from "./schema/batches.ts";
export {
  chats,
  type MessagePartKind,
  messagePartKinds,
  messageParts,
  messages,
  sessionEvents,
} from "./schema/chats.ts";
export { executorTokens } from "./schema/executors.ts";
export {
  apiTokens,
  modelTokens,
  modelUsage,
} from "./schema/model-provider.ts";
export { projects, sessions, sessionWorktrees } from "./schema/projects.ts";
export { providerProbes } from "./schema/providers.ts";
export { tasks } from "./schema/tasks.ts";
