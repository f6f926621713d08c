import { readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

/**
 * The git directories a worktree's `.git` file points at: its own administrative directory and
 * the repository's common directory (objects, refs, config). A sandbox shows them read-only, so
 * git works inside (status, diff, log) while its configuration and hooks, which Deckhand's own
 * git commands read outside the sandbox, cannot be changed from within. Empty for a directory
 * without a `.git` file (an ordinary clone keeps them in `.git`, shown with the directory).
 */
export function worktreeGitDirectories(worktree: string): string[] {
  const dotGit = join(worktree, ".git");
  try {
    if (!statSync(dotGit).isFile()) return [];
    const match = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(dotGit, "utf8"));
    if (match === null) return [];
    const admin = resolve(worktree, match[1]!);
    const directories = [admin];
    try {
      const common = readFileSync(join(admin, "commondir"), "utf8").trim();
      if (common !== "") directories.push(resolve(admin, common));
    } catch {
      // A separate git directory (`git clone --separate-git-dir`) has no commondir.
    }
    return directories.filter((directory) => {
      try {
        return statSync(directory).isDirectory();
      } catch {
        return false;
      }
    });
  } catch {
    return [];
  }
}
