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
} from "./agents.ts";
export {
  type BatchRunAction,
  type BatchRunStatus,
  batchRunActions,
  batchRunEvents,
  batchRunStatuses,
  batchRuns,
  batchSpecs,
  type ChangesetApplyOperation,
  type ChangesetExternalState,
  type ChangesetPublicationState,
  type ChangesetStatus,
  changesetApplyOperations,
  changesetEvents,
  changesetExternalStates,
  changesetPublicationStates,
  changesetPublications,
  changesetStatuses,
  changesets,
  stepResults,
  type WorkspaceStatus,
  type WorkspaceStepOutcome,
  workspaceStatuses,
  workspaceStepOutcomes,
  workspaceSteps,
  workspaces,
} from "./batches.ts";
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
} from "./chats.ts";
export { executorTokens } from "./executors.ts";
export {
  apiTokens,
  modelTokens,
  modelUsage,
} from "./model-provider.ts";
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
} from "./projects.ts";
export {
  type ProviderProbeStatus,
  providerProbeStatuses,
  providerProbes,
} from "./providers.ts";
export {
  type TaskStatus,
  taskStatuses,
  tasks,
} from "./tasks.ts";
