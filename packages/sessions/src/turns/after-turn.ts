import type { Logger } from "pino";
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
  pendingChanges: Pick<PendingChangeService, "record">;
  logger: Logger;
}

/**
 * The work after an agent's turn, still inside the session's lock: commits it made on the
 * session branch are folded back into the worktree, and the worktree's changes become pending
 * changes credited to it. Neither fails the turn: a failure is logged.
 */
export class AfterTurn {
  readonly #options: AfterTurnOptions;

  constructor(options: AfterTurnOptions) {
    this.#options = options;
  }

  async run(turn: FinishedTurn): Promise<void> {
    const { logger } = this.#options;
    const { sessionId } = turn;
    if (turn.since !== null) {
      const since = turn.since;
      try {
        await this.#foldCommits(turn, since);
      } catch (error) {
        logger.warn({ err: error, sessionId }, "folding the agent's commits failed");
      }
    }
    await turn.stream.flush();
    await this.#options.pendingChanges
      .record({
        sessionId,
        worktreePath: turn.worktree.path,
        agentSession: { id: turn.agentSessionId, agent: turn.agent },
        chatId: turn.chatId,
      })
      .catch((error: unknown) =>
        logger.warn({ err: error, sessionId }, "recording pending changes failed"),
      );
  }

  /** Folds the agent's commits, and tells the session what became of them. */
  async #foldCommits(turn: FinishedTurn, since: string): Promise<void> {
    const { sessionId, chatId, agent, messageId } = turn;
    const folded = await this.#options.lock.git(sessionId, () =>
      foldAgentCommits(turn.worktree, since),
    );
    if (folded.kind === "moved") {
      await turn.stream.emit({
        type: "error",
        message_id: messageId,
        message: `after ${agent}'s turn, ${folded.reason}`,
      });
    } else if (folded.kind === "folded") {
      if (folded.folded.length > 0) {
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
    }
  }
}
