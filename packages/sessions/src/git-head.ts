// A worktree's HEAD commit read from the repository's files: every agent turn notes where the
// session branch was when it began, and a git process for that costs the server more (a fork of
// a process holding the embedded database blocks its event loop for about 10 ms) than the whole
// read. Only the usual layout is read (@deckhand/git's headFromFiles); anything else is asked of
// git.
import { headFromFiles as readHeadFromFiles } from "@deckhand/git";
import { resolveCommit } from "./git.ts";

/**
 * The commit HEAD is at in `worktree`, as `git rev-parse --verify HEAD^{commit}` says it: null
 * on a branch with no commit yet. Read from the files (HEAD, a loose ref under refs/heads, or
 * packed-refs) when the worktree has the usual layout; git answers otherwise (a reftable
 * repository, a ref it does not find in the files, a layout it does not know).
 */
export async function headCommit(worktree: string): Promise<string | null> {
  return (await headFromFiles(worktree)) ?? resolveCommit(worktree, "HEAD");
}

/** HEAD's commit from the files; undefined when they do not say it plainly. */
export async function headFromFiles(worktree: string): Promise<string | undefined> {
  return readHeadFromFiles(worktree)?.commit;
}
