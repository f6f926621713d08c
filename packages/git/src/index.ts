export { GitError, type GitErrorCode, type GitErrorDetails } from "./git-error.ts";
export {
  branchFromFiles,
  type GitDirectories,
  gitDirectories,
  type HeadFromFiles,
  headFromFiles,
  originUrlFromFiles,
} from "./git-files.ts";
export {
  basicAuthGitEnvironment,
  type GitCredentialEnvironment,
  type RemoteUrlCredentials,
  remoteUrlPasswords,
  separateRemoteCredentials,
} from "./remote-credentials.ts";
export {
  parseRemoteUrl,
  type RemoteUrlParts,
  redactUrl,
  repositoryNameFromUrl,
} from "./remote-url.ts";
export {
  type GitEnvironmentOptions,
  type GitResult,
  type GitRunOptions,
  runGit,
  runGitSync,
} from "./run-git.ts";
