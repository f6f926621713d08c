import {
  agentSessions,
  type Executor,
  type PendingChangeStatus,
  pendingChanges,
} from "@deckhand/db";
import { and, asc, eq, inArray, sql } from "drizzle-orm";

export type PendingChangeRow = typeof pendingChanges.$inferSelect;

/** A pending change with the agent it is credited to. */
export interface PendingChangeWithAgent {
  change: PendingChangeRow;
  agent: string;
}

/** Queries of `pending_changes`. */
export class PendingChangeRows {
  readonly #executor: Executor;

  constructor(executor: Executor) {
    this.#executor = executor;
  }

  async get(pendingChangeId: string): Promise<PendingChangeWithAgent | undefined> {
    const [row] = await this.#executor
      .select({ change: pendingChanges, agent: agentSessions.agentType })
      .from(pendingChanges)
      .innerJoin(agentSessions, eq(agentSessions.id, pendingChanges.agentSessionId))
      .where(eq(pendingChanges.id, pendingChangeId));
    return row;
  }

  async statusOf(pendingChangeId: string): Promise<PendingChangeStatus | undefined> {
    const [row] = await this.#executor
      .select({ status: pendingChanges.status })
      .from(pendingChanges)
      .where(eq(pendingChanges.id, pendingChangeId));
    return row?.status;
  }

  /** A session's changes (of one status, or all), oldest first, with their agents. */
  listOfSession(
    sessionId: string,
    status: PendingChangeStatus | undefined,
  ): Promise<PendingChangeWithAgent[]> {
    return this.#executor
      .select({ change: pendingChanges, agent: agentSessions.agentType })
      .from(pendingChanges)
      .innerJoin(agentSessions, eq(agentSessions.id, pendingChanges.agentSessionId))
      .where(
        and(
          eq(pendingChanges.sessionId, sessionId),
          status ? eq(pendingChanges.status, status) : undefined,
        ),
      )
      .orderBy(asc(pendingChanges.createdAt), asc(pendingChanges.path));
  }

  /** The session's changes that wait for review. */
  pendingOf(sessionId: string): Promise<PendingChangeRow[]> {
    return this.#executor
      .select()
      .from(pendingChanges)
      .where(and(eq(pendingChanges.sessionId, sessionId), eq(pendingChanges.status, "pending")));
  }

  async countPending(sessionId: string): Promise<number> {
    const [row] = await this.#executor
      .select({ count: sql<number>`count(*)::int` })
      .from(pendingChanges)
      .where(and(eq(pendingChanges.sessionId, sessionId), eq(pendingChanges.status, "pending")));
    return row?.count ?? 0;
  }

  async insert(values: typeof pendingChanges.$inferInsert): Promise<PendingChangeRow> {
    const [row] = await this.#executor.insert(pendingChanges).values(values).returning();
    return row!;
  }

  /** A pending path's new diff, credited to the agent (and chat) that touched it last. */
  async updateDiff(
    pendingChangeId: string,
    values: { diff: string; agentSessionId: string; chatId: string | null },
  ): Promise<PendingChangeRow> {
    const [row] = await this.#executor
      .update(pendingChanges)
      .set(values)
      .where(eq(pendingChanges.id, pendingChangeId))
      .returning();
    return row!;
  }

  async delete(pendingChangeIds: readonly string[]): Promise<void> {
    if (pendingChangeIds.length === 0) return;
    await this.#executor
      .delete(pendingChanges)
      .where(inArray(pendingChanges.id, [...pendingChangeIds]));
  }

  /**
   * Moves a change from pending to `status`; undefined when it is pending no longer. The
   * conditional update locks the row, so a concurrent claim waits for this transaction and
   * then finds it resolved.
   */
  async claim(
    pendingChangeId: string,
    status: "applied" | "rejected",
  ): Promise<PendingChangeRow | undefined> {
    const [row] = await this.#executor
      .update(pendingChanges)
      .set({ status, resolvedAt: new Date() })
      .where(and(eq(pendingChanges.id, pendingChangeId), eq(pendingChanges.status, "pending")))
      .returning();
    return row;
  }

  /** Rejects every change of the session that still waits (the session is closing). */
  async rejectAllPending(sessionId: string): Promise<void> {
    await this.#executor
      .update(pendingChanges)
      .set({ status: "rejected", resolvedAt: new Date() })
      .where(and(eq(pendingChanges.sessionId, sessionId), eq(pendingChanges.status, "pending")));
  }
}
