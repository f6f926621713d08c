import type { Database, PendingChangeStatus } from "@deckhand/db";
import type { PendingChange } from "@deckhand/wire";
import { type ChangedPath, changedPaths, commitPath, diffPath, restorePath } from "../git.ts";
import { requireOpenSession, requirePendingChange, requireSession } from "../required-rows.ts";
import { pendingChangeResource } from "../resources.ts";
import type { SessionLock } from "../session-lock.ts";
import { SessionsError } from "../sessions-error.ts";
import type { PendingChangeRow } from "../store/pending-change-rows.ts";
import { SessionStore, type SessionTransaction } from "../store/session-store.ts";
import { appliedCommitMessage } from "./applied-commits.ts";

/** What an agent's turn left in a session's worktree, to record as pending changes. */
export interface RecordedWork {
  sessionId: string;
  /** The session's worktree, where the agent worked. */
  worktreePath: string;
  /** The agent session the changes are credited to, and its agent. */
  agentSession: { id: string; agent: string };
  chatId: string | null;
}

/**
 * Pending changes: what an agent changed in a session's worktree, one per path, waiting for a
 * person to apply it (commit it on the session branch) or reject it (restore the path).
 */
export class PendingChangeService {
  readonly #store: SessionStore;
  readonly #lock: SessionLock;

  constructor(db: Database, lock: SessionLock) {
    this.#store = new SessionStore(db);
    this.#lock = lock;
  }

  async list(sessionId: string, status: PendingChangeStatus | undefined): Promise<PendingChange[]> {
    await requireSession(this.#store, sessionId);
    const rows = await this.#store.pendingChanges.listOfSession(sessionId, status);
    return rows.map((row) => pendingChangeResource(row.change, row.agent));
  }

  /**
   * Turns the worktree's uncommitted changes into pending changes attributed to an agent: one
   * per path, its diff against the session branch. A path already pending gets its diff updated
   * and is attributed to the agent that touched it last; a pending path that is clean again is
   * dropped. Announced on the session stream.
   */
  async record(work: RecordedWork): Promise<PendingChange[]> {
    return this.#lock.git(work.sessionId, async () =>
      this.recordChanges(work, await changedPaths(work.worktreePath)),
    );
  }

  /**
   * `record` for a caller that holds the session's git lock (see `SessionLock.git`) and has just
   * read the worktree's changed paths (`changes`), as the work after a turn has. `beforeWrite`
   * runs only when something may be written, first (a turn stores its own events then, so they
   * come before the changes').
   */
  async recordChanges(
    work: RecordedWork,
    changes: readonly ChangedPath[],
    beforeWrite?: () => Promise<void>,
  ): Promise<PendingChange[]> {
    const { sessionId, worktreePath } = work;
    // A clean worktree with nothing pending (most turns that only answer) has nothing to write.
    if (
      changes.length === 0 &&
      (await this.#store.pendingChanges.pendingOf(sessionId)).length === 0
    )
      return [];
    const diffs = await Promise.all(
      changes.map(async (change) => ({
        path: change.path,
        diff: await diffPath(worktreePath, change),
      })),
    );
    await beforeWrite?.();
    return this.#store.transaction(async (transaction) => {
      const recorded = await recordDiffs(transaction, work, diffs);
      if (recorded.length > 0) {
        await transaction.appendEvent(sessionId, work.chatId, {
          type: "pending_changes",
          chat_id: work.chatId,
          agent: work.agentSession.agent,
          pending_change_ids: recorded.map((row) => row.id),
        });
      }
      return recorded.map((row) => pendingChangeResource(row, work.agentSession.agent));
    });
  }

  /** Commits the change's path on the session branch. */
  async apply(pendingChangeId: string): Promise<{ pendingChange: PendingChange; commit: string }> {
    const result = await this.#resolve(pendingChangeId, "applied", (worktree, path, agent) =>
      commitPath(worktree, path, appliedCommitMessage(agent, path, pendingChangeId)),
    );
    return { pendingChange: result.pendingChange, commit: result.commit! };
  }

  /** Restores the change's path as the session branch has it. */
  async reject(pendingChangeId: string): Promise<PendingChange> {
    const result = await this.#resolve(pendingChangeId, "rejected", async (worktree, path) => {
      await restorePath(worktree, path);
      return null;
    });
    return result.pendingChange;
  }

  async #resolve(
    pendingChangeId: string,
    status: "applied" | "rejected",
    gitWork: (worktree: string, path: string, agent: string) => Promise<string | null>,
  ): Promise<{ pendingChange: PendingChange; commit: string | null }> {
    const first = await requirePendingChange(this.#store, pendingChangeId);
    const what = `${status === "applied" ? "apply" : "reject"} pending change ${pendingChangeId}`;
    return this.#lock.gitOutsideTurns(first.change.sessionId, what, async () => {
      const { change, agent } = await requirePendingChange(this.#store, pendingChangeId);
      if (change.status !== "pending") {
        throw new SessionsError(
          "conflict",
          `pending change ${pendingChangeId} is ${change.status} already`,
        );
      }
      const { worktree } = await requireOpenSession(this.#store, change.sessionId);
      const stillChanged = (await changedPaths(worktree.path)).some(
        (changed) => changed.path === change.path,
      );
      if (!stillChanged) {
        throw new SessionsError(
          "conflict",
          `${change.path} no longer differs from the session branch; list pending changes again`,
        );
      }
      // The session lock only serialises this process. Another replica may resolve the same
      // change at once, so the transition is claimed in SQL first: the conditional update locks
      // the row, a concurrent one waits for this transaction and then finds it no longer
      // pending. The git work runs inside the transaction, so a failure leaves it pending.
      // (Only `transaction` is used in here: on PGlite a query outside it would wait forever.)
      return this.#store.transaction(async (transaction) => {
        const claimed = await transaction.pendingChanges.claim(pendingChangeId, status);
        if (!claimed) {
          const now = await transaction.pendingChanges.statusOf(pendingChangeId);
          throw new SessionsError(
            "conflict",
            now
              ? `pending change ${pendingChangeId} is ${now} already`
              : `pending change ${pendingChangeId} was superseded; list pending changes again`,
          );
        }
        const commit = await gitWork(worktree.path, change.path, agent);
        await transaction.appendEvent(change.sessionId, change.chatId, {
          type: "pending_change_resolved",
          pending_change_id: pendingChangeId,
          status,
        });
        return { pendingChange: pendingChangeResource(claimed, agent), commit };
      });
    });
  }
}

/**
 * Brings the session's pending rows in line with the worktree's diffs: new paths inserted,
 * changed diffs updated (credited to this agent), clean paths dropped. Returns the rows it
 * inserted or updated.
 */
async function recordDiffs(
  transaction: SessionTransaction,
  work: RecordedWork,
  diffs: readonly { path: string; diff: string }[],
): Promise<PendingChangeRow[]> {
  const agentSessionId = work.agentSession.id;
  const pending = await transaction.pendingChanges.pendingOf(work.sessionId);
  const byPath = new Map(pending.map((row) => [row.path, row]));
  const recorded: PendingChangeRow[] = [];
  for (const { path, diff } of diffs) {
    const existing = byPath.get(path);
    byPath.delete(path);
    if (existing && existing.diff === diff) continue;
    recorded.push(
      existing
        ? await transaction.pendingChanges.updateDiff(existing.id, {
            diff,
            agentSessionId,
            chatId: work.chatId,
          })
        : await transaction.pendingChanges.insert({
            sessionId: work.sessionId,
            agentSessionId,
            chatId: work.chatId,
            path,
            diff,
          }),
    );
  }
  await transaction.pendingChanges.delete([...byPath.values()].map((row) => row.id));
  return recorded;
}
