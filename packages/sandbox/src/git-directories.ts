import { gitDirectories } from "@deckhand/git";

/**
 * The git directories a worktree's `.git` file points at: its own administrative directory and
 * the repository's common directory (objects, refs, config). A sandbox shows them read-only, so
 * git works inside (status, diff, log) while its configuration and hooks, which Deckhand's own
 * git commands read outside the sandbox, cannot be changed from within. Empty for a directory
 * without a `.git` file (an ordinary clone keeps them in `.git`, shown with the directory).
 */
export function worktreeGitDirectories(worktree: string): string[] {
  const directories = gitDirectories(worktree);
  if (directories === undefined || !directories.linked) return [];
  const { gitDirectory, commonDirectory } = directories;
  return gitDirectory === commonDirectory ? [gitDirectory] : [gitDirectory, commonDirectory];
}
