// Git in the repositories of code hosts: every command goes through @deckhand/git, and a
// failure becomes a BatchesError that names the repository.
import { errorMessage } from "@deckhand/errors";
import { GitError, type GitResult, remoteUrlPasswords, runGit } from "@deckhand/git";
import { REDACTED } from "@deckhand/secrets";
import { BatchesError } from "./batches-error.ts";

export interface RepositoryGitOptions {
  allowedExitCodes?: readonly number[];
  signal?: AbortSignal | undefined;
  /** The command writes (a worktree, sparse patterns); by default commands only read. */
  writes?: boolean;
  /** Written to git's standard input (a patch for `git apply -`). */
  input?: string;
  /** Bound on git's output, above @deckhand/git's default (a workspace's whole diff). */
  maxOutputBytes?: number;
  /** Variables for git, such as a temporary GIT_INDEX_FILE or a commit identity. */
  environment?: Readonly<Record<string, string>>;
  /** Stop git after this long, instead of @deckhand/git's default (a push may take a while). */
  timeoutMs?: number;
}

/**
 * Runs git in `cwd`, read-only unless `writes`; a failure is a `git_failed` BatchesError whose
 * message starts with `what` (what Deckhand was doing, naming the repository).
 */
export async function repositoryGit(
  cwd: string,
  args: readonly string[],
  what: string,
  options: RepositoryGitOptions = {},
): Promise<GitResult> {
  try {
    return await runGit(args, {
      cwd,
      readOnly: !options.writes,
      ...(options.allowedExitCodes ? { allowedExitCodes: options.allowedExitCodes } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.input !== undefined ? { input: options.input } : {}),
      ...(options.maxOutputBytes !== undefined ? { maxOutputBytes: options.maxOutputBytes } : {}),
      ...(options.environment ? { environment: options.environment } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    });
  } catch (error) {
    if (error instanceof GitError) {
      throw new BatchesError("git_failed", `${what}: ${error.message}`, { cause: error });
    }
    throw error;
  }
}

/**
 * Why a git command against a remote failed, fit for a message: git's own explanation with the
 * password or token of any of `urls` replaced by the redaction marker. `cause` is the error
 * itself only when no URL carries a secret: a GitError names its command, and git may have put
 * the URL in it, so with a secret it stays out of the chain a logger would print.
 */
export function remoteFailure(
  urls: readonly string[],
  error: unknown,
): { detail: string; cause?: unknown } {
  const secrets = urls.flatMap(remoteUrlPasswords);
  let detail =
    error instanceof GitError ? error.stderr.trim() || error.message : errorMessage(error);
  for (const secret of secrets) detail = detail.replaceAll(secret, REDACTED);
  return secrets.length === 0 ? { detail, cause: error } : { detail };
}

/** Splits NUL-separated git output (`-z`) into its entries. */
export function nulSeparated(output: string): string[] {
  return output.split("\0").filter((entry) => entry.length > 0);
}

/** Runs `work` over `items` with at most `limit` at a time, keeping the order of results. */
export async function mapLimited<Item, Result>(
  items: readonly Item[],
  limit: number,
  work: (item: Item) => Promise<Result>,
): Promise<Result[]> {
  const results: Result[] = new Array(items.length);
  let next = 0;
  async function worker(): Promise<void> {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await work(items[index]!);
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
