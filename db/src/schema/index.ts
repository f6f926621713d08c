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
