export type {
  ChecksState,
  CodeHostCapabilities,
  CodeHostClient,
  CreatePullRequestInput,
  Mergeability,
  MergeInput,
  MergeMethod,
  PullRequest,
  PullRequestState,
  PullRequestStatus,
  ReviewState,
  UpdatePullRequestInput,
} from "./code-host-client.ts";
export {
  CodeHostError,
  type CodeHostErrorCode,
  type CodeHostErrorDetails,
  type RemoteCommit,
} from "./code-host-error.ts";
export {
  apiBase,
  CODE_HOST_TYPES,
  type CodeHostConnection,
  CodeHostConnectionSchema,
  CodeHostConnectionsSchema,
  type CodeHostType,
  connectionName,
  DEFAULT_PUBLISH_RATE,
  describeConnection,
  parseCodeHostConnection,
} from "./connection.ts";
export {
  type CodeHostClientOptions,
  connectionPolicy,
  createCodeHostClient,
} from "./create-client.ts";
export type { FetchFunction } from "./host-fetch.ts";
export {
  type PublishedPullRequest,
  type PublishPullRequestInput,
  publishPullRequest,
} from "./publish-pull-request.ts";
export {
  gitAuthEnvironment,
  type PushBranchOptions,
  type PushBranchResult,
  pushBranch,
} from "./push-branch.ts";
export { cloneUrl, type RepositoryOnHost, resolveRepository } from "./remote-url.ts";
export {
  type Clock,
  type PolicyRequest,
  RequestPolicy,
  type RequestPolicyOptions,
  type RequestWaitEvent,
  type RequestWaitReason,
} from "./request-policy.ts";
