export { GitError, type GitErrorCode, type GitErrorDetails } from "./git-error.ts";
export {
  type GitEnvironmentOptions,
  type GitResult,
  type GitRunOptions,
  runGit,
  runGitSync,
} from "./run-git.ts";
