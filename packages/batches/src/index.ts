export {
  type AcpAgentStepOptions,
  type AcpStepProviders,
  DEFAULT_ACP_STEP_PERMISSIONS,
} from "./acp-agent-step.ts";
export {
  type AppliedChangeset,
  type ApplyChangesetOptions,
  type ApplyConflictPolicy,
  applyChangeset,
} from "./apply-changeset.ts";
export {
  BATCH_RECOVERY_INTERVAL_MS,
  type BatchWorker,
  type BatchWorkerOptions,
  batchDirectories,
  type CreateBatchRunServiceOptions,
  createBatchRunService,
  type ExecutorConfig,
  readExecutorConfig,
  startBatchWorker,
} from "./batch-executor.ts";
export {
  appendRunEvents,
  BATCH_RUN_EVENTS_CHANNEL,
  createRunEventHub,
  readRunEvents,
} from "./batch-run-events.ts";
export {
  BATCH_APPLY_TASK,
  BATCH_WORKSPACE_TASK,
  BatchRunService,
  type BatchRunServiceOptions,
  codingAgentOptions,
} from "./batch-run-service.ts";
export { BatchesError, type BatchesErrorCode } from "./batches-error.ts";
export {
  BatchSpend,
  type BatchSpendOptions,
  createModelSpend,
  workspaceBudgetOf,
} from "./budgets/batch-spend.ts";
export { buildChangesets, type WorkspaceOutcome } from "./build-changesets.ts";
export { checkoutWorkspace, type WorkspaceCheckout } from "./checkout-workspace.ts";
export { type CodeHost, CodeHostSchema, CodeHostsSchema } from "./code-host-config.ts";
export { codeHostSecrets, type GitEnvironmentFor } from "./code-host-credentials.ts";
export {
  type CodingAgentOptions,
  DEFAULT_CONTAINER_INSTALL_DIRECTORY,
  type ModelProviderAccess,
  type ModelProviderJobLease,
} from "./coding-agent-step.ts";
export { DatabaseStepCache } from "./database-step-cache.ts";
export { type KubernetesRunnerSource, kubernetesRunnerSource } from "./kubernetes-step.ts";
export {
  type ChangesetHookName,
  createHookRunner,
  DEFAULT_HOOK_ATTEMPTS,
  type HookRunInput,
  type HookRunner,
  type HookRunnerOptions,
  hookLimit,
} from "./publishing/changeset-hooks.ts";
export {
  CHANGESET_TRACKING_TASK,
  ChangesetPublisher,
  type ChangesetPublisherOptions,
  DEFAULT_TRACKING_INTERVAL_MS,
  type PublishRunResult,
} from "./publishing/changeset-publisher.ts";
export { CHANGESET_ROLLOUT_TASK } from "./publishing/changeset-rollout.ts";
export { CodeHostAccess, type CodeHostAccessOptions } from "./publishing/code-host-access.ts";
export {
  type LoadRepositoriesOptions,
  loadRepositories,
  locateRepository,
  type Repository,
  type RepositoryHost,
} from "./repositories.ts";
export {
  type ContentPattern,
  type ParseRepositoryQueryOptions,
  type PatternFilter,
  type PatternType,
  parseRepositoryQuery,
  type RepositoryQuery,
} from "./repository-query.ts";
export {
  type ResolveWorkspacesOptions,
  type ResolveWorkspacesResult,
  resolveWorkspaces,
  type Workspace,
  type WorkspaceRepository,
  type WorkspaceStep,
} from "./resolve-workspaces.ts";
export {
  cachedStepCount,
  DEFAULT_WORKSPACE_TIMEOUT_MS,
  type RunWorkspaceOptions,
  runWorkspace,
  type StepRecord,
  type WorkspaceRunResult,
  workspaceRef,
} from "./run-workspace.ts";
export { type CachedStepResult, MemoryStepCache, type StepCache } from "./step-cache.ts";
export type { StepRuntimeChoice } from "./step-placement.ts";
export {
  type ChangedFile,
  type ChangedFileStatus,
  templateChangedFiles,
} from "./workspace-diff.ts";
export type {
  OpenWorkspaceSessionRequest,
  WorkspaceSession,
  WorkspaceSessionRepository,
  WorkspaceSessions,
  WorkspaceSessionWork,
} from "./workspace-takeover.ts";
