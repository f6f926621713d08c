// The batch engine's public surface: what the server, `deckhand executor`, the CLI and library
// users (docs/batch-changes.md) import, and the types their signatures name. Everything else is
// the package's own.
export type { AcpAgentStepOptions, AcpStepProviders } from "./acp-agent-step.ts";
export {
  type AppliedChangeset,
  type ApplyChangesetOptions,
  type ApplyConflictPolicy,
  applyChangeset,
} from "./apply-changeset.ts";
export {
  type BatchWorker,
  type BatchWorkerOptions,
  type CreateBatchRunServiceOptions,
  configuredRepositories,
  createBatchRunService,
  type ExecutorConfig,
  readExecutorConfig,
  startBatchWorker,
} from "./batch-executor.ts";
export { createRunEventHub } from "./batch-run-events.ts";
export { BatchRunService, type BatchRunServiceOptions } from "./batch-run-service.ts";
export { BatchesError, type BatchesErrorCode } from "./batches-error.ts";
export { BatchSpend, type BatchSpendOptions, createModelSpend } from "./budgets/batch-spend.ts";
export { buildChangesets, type WorkspaceOutcome } from "./build-changesets.ts";
export { checkoutWorkspace, type WorkspaceCheckout } from "./checkout-workspace.ts";
export { type CodeHost, CodeHostSchema, CodeHostsSchema } from "./code-host-config.ts";
export { codeHostSecrets, type GitEnvironmentFor } from "./code-host-credentials.ts";
export type {
  CodingAgentOptions,
  ModelProviderAccess,
  ModelProviderJobLease,
} from "./coding-agent-step.ts";
export { DatabaseStepCache } from "./database-step-cache.ts";
export {
  type BatchDirectories,
  batchDirectories,
  type ContainerAccess,
  ExecutionEnvironment,
  type ExecutionEnvironmentOptions,
} from "./execution-environment.ts";
export { ExecutorJobs, type ExecutorJobsOptions, executorName } from "./executor-jobs.ts";
export {
  type ExecutorApiClient,
  type HttpExecutor,
  type HttpExecutorOptions,
  startHttpExecutor,
} from "./http-executor.ts";
export type { ChangesetHookName, HookRunInput, HookRunner } from "./publishing/changeset-hooks.ts";
export {
  ChangesetPublisher,
  type ChangesetPublisherOptions,
  type PublishRunResult,
} from "./publishing/changeset-publisher.ts";
export { CodeHostAccess, type CodeHostAccessOptions } from "./publishing/code-host-access.ts";
export {
  type LoadRepositoriesOptions,
  loadRepositories,
  type Repository,
  type RepositoryHost,
} from "./repositories.ts";
export {
  RepositorySource,
  type RepositorySourceOptions,
  type ResolvedWorkspaces,
  type WorkspaceSelection,
} from "./repository-source.ts";
export {
  BatchIgnoreMemory,
  type ResolveWorkspacesOptions,
  type ResolveWorkspacesResult,
  resolveWorkspaces,
  type Workspace,
  type WorkspaceRepository,
  type WorkspaceStep,
} from "./resolve-workspaces.ts";
export { workspaceJobId } from "./run-store.ts";
export { type RunWorkspaceOptions, runWorkspace } from "./run-workspace.ts";
export {
  type CachedStepResult,
  MemoryStepCache,
  type NewestCachedStep,
  type StepCache,
} from "./step-cache.ts";
export type { ImageLookups, StepRuntimeChoice } from "./step-placement.ts";
export { cachedStepCounts, type StepPlanOptions } from "./step-plan.ts";
export { type CodingAgentPreview, previewCodingAgentScript } from "./step-preparation.ts";
export type { StepCheckout } from "./step-runner.ts";
export type { ChangedFile, ChangedFileStatus } from "./workspace-diff.ts";
export type { RunBudgets } from "./workspace-job.ts";
export type { StepRecord, WorkspaceRunResult } from "./workspace-run-report.ts";
export type {
  OpenWorkspaceSessionRequest,
  WorkspaceSession,
  WorkspaceSessionRepository,
  WorkspaceSessions,
  WorkspaceSessionWork,
} from "./workspace-takeover.ts";
