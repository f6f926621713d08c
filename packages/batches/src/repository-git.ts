// Git in the repositories of code hosts: every command goes through @deckhand/git, and a
// failure becomes a BatchesError that names the repository.
import { GitError, type GitResult, runGit } from "@deckhand/git";
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
    });
  } catch (error) {
    if (error instanceof GitError) {
      throw new BatchesError("git_failed", `${what}: ${error.message}`, { cause: error });
    }
    throw error;
  }
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
