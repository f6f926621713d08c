export { GitError, type GitErrorCode, type GitErrorDetails } from "./git-error.ts";
export {
  GIT_RUN_DEFAULTS,
  type GitEnvironmentOptions,
  type GitResult,
  type GitRunOptions,
  gitEnvironment,
  REPOSITORY_LOCATING_VARIABLES,
  runGit,
  runGitSync,
} from "./run-git.ts";
