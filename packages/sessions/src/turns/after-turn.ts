import type { Logger } from "pino";
import { type WorktreeStatus, worktreeStatus } from "../git.ts";
import type { PendingChangeService } from "../pending-changes/pending-change-service.ts";
import type { SessionLock } from "../session-lock.ts";
import type { SessionWorktreeRow } from "../store/session-rows.ts";
import type { SessionStore } from "../store/session-store.ts";
import { foldAgentCommits } from "./fold-agent-commits.ts";
import type { TurnRef } from "./turn-messages.ts";
import type { TurnStream } from "./turn-stream.ts";

/** A turn that ran on an agent session, as the work after it needs it. */
export interface FinishedTurn extends TurnRef {
  worktree: SessionWorktreeRow;
  agentSessionId: string;
  /** The session branch's commit when the turn began; null when it could not be read. */
  since: string | null;
  stream: TurnStream;
}

export interface AfterTurnOptions {
  store: SessionStore;
  lock: SessionLock;
  pendingChanges: Pick<PendingChangeService, "recordChanges">;
  logger: Logger;
  /** Reads a worktree's status (`worktreeStatus`; tests watch it). */
  readStatus?: (worktreePath: string) => Promise<WorktreeStatus>;
}

/**
 * The work after an agent's turn, still inside the session's lock and as the session's git
 * work: commits it made on the session branch are folded back into the worktree, and the
 * worktree's changes become pending changes credited to it. One `git status` serves both,
 * unless the fold moved commits into the index. Neither fails the turn: a failure is logged.
 */
export class AfterTurn {
  readonly #options: AfterTurnOptions;

  constructor(options: AfterTurnOptions) {
    this.#options = options;
  }

  /**
   * Runs the work after a turn. It may start as soon as the agent is done: the worktree's status
   * is read at once (in the git lock), while the caller still stores what the turn streamed;
   * the rest waits for `stored`, and nothing more is done when it says the turn's events could
   * not be stored (the caller reports that).
   */
  run(turn: FinishedTurn, stored: Promise<boolean> = Promise.resolve(true)): Promise<void> {
    return this.#options.lock.git(turn.sessionId, () => this.#runLocked(turn, stored));
  }

  async #runLocked(turn: FinishedTurn, stored: Promise<boolean>): Promise<void> {
    const { logger } = this.#options;
    const { sessionId } = turn;
    // Read before the wait: the agent is done, and nothing the caller stores meanwhile touches
    // the worktree. Its failure is seen where it is used.
    const read = this.#options.readStatus ?? worktreeStatus;
    const first = read(turn.worktree.path);
    first.catch(() => {});
    if (!(await stored)) return;
    let status: Promise<WorktreeStatus> | undefined = first;
    const readStatus = () => (status ??= read(turn.worktree.path));
    if (turn.since !== null) {
      try {
        if (await this.#foldCommits(turn, turn.since, await readStatus())) status = undefined;
      } catch (error) {
        // The fold may have stopped after moving commits: the record reads the worktree again.
        status = undefined;
        logger.warn({ err: error, sessionId }, "folding the agent's commits failed");
      }
    }
    await turn.stream.settle();
    try {
      await this.#options.pendingChanges.recordChanges(
        {
          sessionId,
          worktreePath: turn.worktree.path,
          agentSession: { id: turn.agentSessionId, agent: turn.agent },
          chatId: turn.chatId,
        },
        (await readStatus()).changes,
        // The turn's events, its end included, come before the pending changes it made.
        () => turn.stream.flush(),
      );
    } catch (error) {
      logger.warn({ err: error, sessionId }, "recording pending changes failed");
    }
  }

  /**
   * Folds the agent's commits, and tells the session what became of them; true when commits
   * were moved into the index (the worktree's status changed).
   */
  async #foldCommits(turn: FinishedTurn, since: string, at: WorktreeStatus): Promise<boolean> {
    const { sessionId, chatId, agent, messageId } = turn;
    const folded = await foldAgentCommits(turn.worktree, since, at);
    if (folded.kind === "moved") {
      await turn.stream.emit({
        type: "error",
        message_id: messageId,
        message: `after ${agent}'s turn, ${folded.reason}`,
      });
      return false;
    }
    if (folded.kind === "unchanged") return false;
    if (folded.folded.length > 0) {
      await turn.stream.flush();
      await this.#options.store.publishEvent(sessionId, chatId, {
        type: "commits_folded",
        chat_id: chatId,
        agent,
        commits: folded.folded.map(({ sha, subject }) => ({ sha, subject })),
      });
    }
    if (folded.kept.length > 0) {
      await turn.stream.emit({
        type: "error",
        message_id: messageId,
        message: `${agent} committed ${folded.kept.map((commit) => commit.sha.slice(0, 12)).join(", ")} on the session branch before a pending change was applied during its turn; those commits stay there, unreviewed`,
      });
    }
    return folded.folded.length > 0;
  }
}
