import {
  type CommitSummary,
  commitsBetween,
  isAncestor,
  resetSoft,
  type WorktreeStatus,
} from "../git.ts";
import { isApplyCommit } from "../pending-changes/applied-commits.ts";

/** What `foldAgentCommits` did with the commits an agent made during its turn. */
export type FoldCommitsResult =
  | { kind: "unchanged" }
  /** `folded` are now staged changes; `kept` stay committed (an apply came after them). */
  | { kind: "folded"; folded: CommitSummary[]; kept: CommitSummary[] }
  /** HEAD left the session branch, or the branch no longer contains the turn's start: left alone. */
  | { kind: "moved"; reason: string };

/**
 * Undoes the commits an agent made on the session branch since `since` (the branch's commit
 * when its turn began) into staged changes, so they become pending changes to review like any
 * other edit. Commits Deckhand made applying pending changes in the meantime stay, and so do
 * agent commits older than such an apply (undoing them would undo the apply). A HEAD that left
 * the session branch, or a branch that no longer contains `since`, is left alone. Run it as the
 * session's git work (see `SessionLock.git`); `at` is where the worktree's HEAD is now (its
 * `git status`).
 */
export async function foldAgentCommits(
  worktree: { path: string; branch: string },
  since: string,
  at: Pick<WorktreeStatus, "branch" | "head">,
): Promise<FoldCommitsResult> {
  const { branch, head } = at;
  if (branch !== worktree.branch) {
    return {
      kind: "moved",
      reason: `HEAD left the session branch ${worktree.branch}: it is at ${branch === null ? "a detached commit" : `branch ${branch}`} (${head?.slice(0, 12) ?? "no commit"}); Deckhand left it there`,
    };
  }
  if (head === since) return { kind: "unchanged" };
  if (head === null || !(await isAncestor(worktree.path, since, head))) {
    return {
      kind: "moved",
      reason: `the session branch ${worktree.branch} was rewritten: it no longer contains ${since.slice(0, 12)}, where the turn began; Deckhand left it at ${head?.slice(0, 12) ?? "no commit"}`,
    };
  }
  const commits = await commitsBetween(worktree.path, since, head);
  let base = since;
  let firstFolded = 0;
  commits.forEach((commit, index) => {
    if (isApplyCommit(commit)) {
      base = commit.sha;
      firstFolded = index + 1;
    }
  });
  const folded = commits.slice(firstFolded);
  const kept = commits.slice(0, firstFolded).filter((commit) => !isApplyCommit(commit));
  if (folded.length > 0) await resetSoft(worktree.path, base);
  return { kind: "folded", folded, kept };
}
