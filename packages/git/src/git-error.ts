import { DeckhandError } from "@deckhand/wire";

export type GitErrorCode =
  /** The `git` executable could not be started: it is not installed or not on PATH. */
  | "git_not_found"
  /** Git ran and exited with a code the caller did not allow; `stderr` says why. */
  | "git_failed"
  /** Git ran longer than the caller's timeout and was stopped. */
  | "timed_out"
  /** The caller's abort signal stopped git. */
  | "aborted"
  /** Git wrote more than the caller's output bound; it was stopped rather than cut silently. */
  | "output_too_large"
  /** Git succeeded but printed something the caller could not make sense of. */
  | "unexpected_output";

/** What the failed command was, so a message or a log line can name it. */
export interface GitErrorDetails {
  args: readonly string[];
  cwd: string;
  /** Git's exit code, or null when it never exited on its own (not started, killed). */
  exitCode: number | null;
  /** Git's standard error as far as it was read: git's own explanation of the failure. */
  stderr: string;
}

/** The one error type this package throws; `code` is stable, the message is for people. */
export class GitError extends DeckhandError<GitErrorCode> {
  static override readonly errorName = "GitError";

  readonly args: readonly string[];
  readonly cwd: string;
  readonly exitCode: number | null;
  readonly stderr: string;

  constructor(
    code: GitErrorCode,
    message: string,
    details: GitErrorDetails,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.args = details.args;
    this.cwd = details.cwd;
    this.exitCode = details.exitCode;
    this.stderr = details.stderr;
  }
}
