// Commits Deckhand makes applying a pending change carry a line naming the change; folding an
// agent's commits after its turn recognises them by it and leaves them on the branch.
import type { CommitSummary } from "../git.ts";

/** The line that marks a commit Deckhand made applying a pending change. */
const APPLIED_LINE = "Applied from Deckhand pending change";

/** The message of the commit that applies a pending change to `path`, credited to `agent`. */
export function appliedCommitMessage(agent: string, path: string, pendingChangeId: string): string {
  return `${agent}: update ${path}\n\n${APPLIED_LINE} ${pendingChangeId}.`;
}

/** Whether Deckhand made the commit applying a pending change. */
export function isApplyCommit(commit: CommitSummary): boolean {
  return commit.body.split("\n").some((line) => line.startsWith(`${APPLIED_LINE} `));
}
