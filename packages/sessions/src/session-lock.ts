import { SessionsError } from "./sessions-error.ts";

/** The wait for a turn's place was given up: its signal aborted first. */
export const ABORTED = Symbol("aborted");

/**
 * The one per-session lock of this process, shared by the session service and the turn runner.
 * It orders two kinds of holders of a session:
 *
 * - a turn: the whole of one agent turn. Turns of a session run one after another, whichever
 *   agent they are for: the agents share the worktree, and what changed during a turn is
 *   credited to the agent that ran it. (The queue's serial key orders turns across processes;
 *   this keeps the rule for turns run here without one.)
 * - git work: a short section that reads or changes the worktree and its rows (recording or
 *   folding a turn's changes, applying or rejecting a pending change, closing the session). Git
 *   work runs one at a time, in order; a turn's own git work runs within the turn.
 *
 * Applying or rejecting a pending change is refused (`busy`) while a turn of the session runs or
 * waits here: the agent may be editing that very path, and waiting would hold the request for
 * as long as the turn lasts. Closing does not wait for a turn: it is how a user stops one.
 */
export class SessionLock {
  /** The tail of each queue, by `turn:<session>` or `git:<session>`. */
  readonly #tails = new Map<string, Promise<void>>();
  /** Turns of each session that hold or wait for the lock here. */
  readonly #turns = new Map<string, number>();

  /**
   * Runs a turn once the session's earlier turns are done. Gives up waiting (without running
   * `work`) when `signal` aborts first: a cancelled turn does not wait for its turn to come.
   */
  async turn<Result>(
    sessionId: string,
    signal: AbortSignal,
    work: () => Promise<Result>,
  ): Promise<Result | typeof ABORTED> {
    this.#turns.set(sessionId, (this.#turns.get(sessionId) ?? 0) + 1);
    try {
      return await this.#queue(`turn:${sessionId}`, signal, work);
    } finally {
      const left = (this.#turns.get(sessionId) ?? 1) - 1;
      if (left === 0) this.#turns.delete(sessionId);
      else this.#turns.set(sessionId, left);
    }
  }

  /** Runs git work on the session once its earlier git work is done. */
  async git<Result>(sessionId: string, work: () => Promise<Result>): Promise<Result> {
    const result = await this.#queue(`git:${sessionId}`, undefined, work);
    return result as Result;
  }

  /**
   * Runs git work that must not interleave with an agent's turn; `what` names it in the refusal.
   * Checked before waiting and again once its place comes (a turn may have begun meanwhile).
   */
  async gitOutsideTurns<Result>(
    sessionId: string,
    what: string,
    work: () => Promise<Result>,
  ): Promise<Result> {
    this.#refuseDuringTurn(sessionId, what);
    return this.git(sessionId, async () => {
      this.#refuseDuringTurn(sessionId, what);
      return work();
    });
  }

  /** Whether a turn of the session runs or waits in this process. */
  turnActive(sessionId: string): boolean {
    return this.#turns.has(sessionId);
  }

  #refuseDuringTurn(sessionId: string, what: string): void {
    if (!this.turnActive(sessionId)) return;
    throw new SessionsError(
      "busy",
      `an agent's turn is running in session ${sessionId}; ${what} once it has finished (or cancel it)`,
    );
  }

  async #queue<Result>(
    key: string,
    signal: AbortSignal | undefined,
    work: () => Promise<Result>,
  ): Promise<Result | typeof ABORTED> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release: () => void = () => {};
    const done = new Promise<void>((resolveDone) => {
      release = resolveDone;
    });
    const tail = previous.then(() => done);
    this.#tails.set(key, tail);
    let onAbort: (() => void) | null = null;
    try {
      const acquired = await Promise.race([
        previous.then(() => true),
        new Promise<false>((resolveAbort) => {
          if (!signal) return;
          onAbort = () => resolveAbort(false);
          if (signal.aborted) onAbort();
          else signal.addEventListener("abort", onAbort, { once: true });
        }),
      ]);
      if (!acquired || signal?.aborted) return ABORTED;
      return await work();
    } finally {
      if (onAbort) signal?.removeEventListener("abort", onAbort);
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}
