import { agentSessions, type Executor } from "@deckhand/db";
import { and, asc, desc, eq, isNotNull, ne, sql } from "drizzle-orm";

/** An agent session as a turn needs it: its row id and the agent's own id to resume. */
export interface AgentSessionRef {
  id: string;
  resumeSessionId: string | null;
}

/**
 * Queries of `agent_sessions`: one row per run of an agent in a session (per chat when the agent
 * keeps one per chat), `closed` once its backend is gone.
 */
export class AgentSessionRows {
  readonly #executor: Executor;

  constructor(executor: Executor) {
    this.#executor = executor;
  }

  /** The live agent session of (session, agent, chat), created on first use. */
  async ensure(sessionId: string, agent: string, chatId: string | null): Promise<AgentSessionRef> {
    const chatCondition =
      chatId === null ? sql`${agentSessions.chatId} is null` : eq(agentSessions.chatId, chatId);
    const find = async () => {
      const [row] = await this.#executor
        .select({ id: agentSessions.id, resumeSessionId: agentSessions.resumeSessionId })
        .from(agentSessions)
        .where(
          and(
            eq(agentSessions.sessionId, sessionId),
            eq(agentSessions.agentType, agent),
            chatCondition,
            sql`${agentSessions.status} <> 'closed'`,
          ),
        );
      return row;
    };
    const existing = await find();
    if (existing) return existing;
    const [inserted] = await this.#executor
      .insert(agentSessions)
      .values({ sessionId, agentType: agent, chatId })
      .onConflictDoNothing()
      .returning({ id: agentSessions.id, resumeSessionId: agentSessions.resumeSessionId });
    return inserted ?? (await find())!;
  }

  /** The agent's own session id from its latest run in this session, to resume. */
  async latestResumeId(sessionId: string, agent: string): Promise<string | null> {
    const [row] = await this.#executor
      .select({ resumeSessionId: agentSessions.resumeSessionId })
      .from(agentSessions)
      .where(
        and(
          eq(agentSessions.sessionId, sessionId),
          eq(agentSessions.agentType, agent),
          isNotNull(agentSessions.resumeSessionId),
        ),
      )
      .orderBy(desc(agentSessions.lastActiveAt))
      .limit(1);
    return row?.resumeSessionId ?? null;
  }

  /** The session an agent session ran in, and its agent. */
  async owner(agentSessionId: string): Promise<{ sessionId: string; agent: string } | undefined> {
    const [row] = await this.#executor
      .select({ sessionId: agentSessions.sessionId, agent: agentSessions.agentType })
      .from(agentSessions)
      .where(eq(agentSessions.id, agentSessionId));
    return row;
  }

  /** Every agent session the session ran (closed ones too), oldest first. */
  listOfSession(
    sessionId: string,
  ): Promise<{ id: string; agent: string; chatId: string | null }[]> {
    return this.#executor
      .select({
        id: agentSessions.id,
        agent: agentSessions.agentType,
        chatId: agentSessions.chatId,
      })
      .from(agentSessions)
      .where(eq(agentSessions.sessionId, sessionId))
      .orderBy(asc(agentSessions.createdAt), asc(agentSessions.id));
  }

  /** A turn began on the agent's session `resumeSessionId`. */
  async markActive(agentSessionId: string, resumeSessionId: string): Promise<void> {
    await this.#executor
      .update(agentSessions)
      .set({
        status: "active",
        resumeSessionId,
        lastActiveAt: new Date(),
        updatedAt: new Date(),
      })
      .where(eq(agentSessions.id, agentSessionId));
  }

  /** A turn ended: the agent waits for the next (idle), or its process died (crashed). */
  async markTurnEnded(agentSessionId: string, status: "idle" | "crashed"): Promise<void> {
    await this.#executor
      .update(agentSessions)
      .set({ status, lastActiveAt: new Date(), updatedAt: new Date() })
      .where(eq(agentSessions.id, agentSessionId));
  }

  /** The agent died between turns; false when the row said so already (or is closed). */
  async markCrashed(agentSessionId: string): Promise<boolean> {
    const updated = await this.#executor
      .update(agentSessions)
      .set({ status: "crashed", updatedAt: new Date() })
      .where(
        and(
          eq(agentSessions.id, agentSessionId),
          ne(agentSessions.status, "crashed"),
          ne(agentSessions.status, "closed"),
        ),
      )
      .returning({ id: agentSessions.id });
    return updated.length > 0;
  }

  /** Its backend is gone: the row is history, unless a turn still marks it active. */
  async markClosed(agentSessionId: string): Promise<void> {
    await this.#executor
      .update(agentSessions)
      .set({ status: "closed", updatedAt: new Date() })
      .where(and(eq(agentSessions.id, agentSessionId), ne(agentSessions.status, "active")));
  }

  /** Closes every agent session of a session (the session is closing). */
  async closeAllOf(sessionId: string): Promise<void> {
    await this.#executor
      .update(agentSessions)
      .set({ status: "closed", updatedAt: new Date() })
      .where(eq(agentSessions.sessionId, sessionId));
  }
}
