export { BatchesError, type BatchesErrorCode } from "./batches-error.ts";
export { checkoutWorkspace, type WorkspaceCheckout } from "./checkout-workspace.ts";
export { type CodeHost, CodeHostSchema, CodeHostsSchema } from "./code-host-config.ts";
export {
  type LoadRepositoriesOptions,
  loadRepositories,
  type Repository,
  type RepositoryHost,
} from "./repositories.ts";
export { redactUrl, repositoryNameFromUrl } from "./repository-name.ts";
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
