import { redactSecrets } from "@deckhand/secrets";
import { DeckhandError } from "@deckhand/wire";

export type CodeHostErrorCode =
  /** A connection's configuration does not parse, or names a URL no client can use. */
  | "invalid_connection"
  /** The environment variable a connection names for its token is unset or empty. */
  | "token_missing"
  /** The host refused the token (401, or a 403 that is no rate limit): missing scope or access. */
  | "unauthorized"
  /** The repository, pull request or branch does not exist on the host (or is hidden from the token). */
  | "not_found"
  /** The host refused the change as it stands: a pull request that cannot be merged, a state clash. */
  | "conflict"
  /** The host's rate limit was still in force after the retries the policy allows. */
  | "rate_limited"
  /** The host kept answering 5xx, or could not be reached, after the retries the policy allows. */
  | "host_unavailable"
  /** The host answered something this client cannot read. */
  | "unexpected_response"
  /** The operation does not exist on this kind of host (reopening a declined Bitbucket pull request). */
  | "unsupported"
  /** The remote branch has commits the push did not expect (a person pushed); nothing was overwritten. */
  | "push_rejected"
  /** `git push` failed for another reason; the message carries git's explanation. */
  | "push_failed";

/** What a failed host request was, for callers that report or retry by themselves. */
export interface CodeHostErrorDetails {
  /** The connection's name. */
  connection?: string;
  /** The HTTP status the host answered with, when there was an answer. */
  status?: number;
  /** When the host's rate limit lifts (epoch milliseconds), when it said. */
  retryAt?: number;
  /** For `push_rejected`: the commits on the remote branch that the push would have dropped. */
  remoteCommits?: readonly RemoteCommit[];
}

/** A commit found on a remote branch, named for a person deciding what to do with it. */
export interface RemoteCommit {
  sha: string;
  author: string;
  subject: string;
}

/**
 * The one error type @deckhand/code-hosts throws. `code` is stable, the message is for people.
 * Messages are redacted with every secret the process remembers (connection tokens are
 * remembered when read), so a host's answer that echoes a token cannot carry it further.
 */
export class CodeHostError extends DeckhandError<CodeHostErrorCode> {
  static override readonly errorName = "CodeHostError";

  readonly connection: string | undefined;
  readonly status: number | undefined;
  readonly retryAt: number | undefined;
  readonly remoteCommits: readonly RemoteCommit[];

  constructor(
    code: CodeHostErrorCode,
    message: string,
    details: CodeHostErrorDetails = {},
    options?: { cause?: unknown },
  ) {
    super(code, redactSecrets(message), options);
    this.connection = details.connection;
    this.status = details.status;
    this.retryAt = details.retryAt;
    this.remoteCommits = details.remoteCommits ?? [];
  }
}
