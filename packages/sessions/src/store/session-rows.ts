import { chats, type Executor, projects, sessions, sessionWorktrees } from "@deckhand/db";
import { and, asc, desc, eq, ilike, inArray, isNotNull, isNull, or, sql } from "drizzle-orm";
import type { ChatRow } from "./chat-rows.ts";
import { type SessionState, sessionStates } from "./session-states.ts";

export type SessionRow = typeof sessions.$inferSelect;
export type SessionWorktreeRow = typeof sessionWorktrees.$inferSelect;

/** A session's row with its latest worktree row (the active one, or the removed one once closed). */
export interface SessionWithWorktree {
  session: SessionRow;
  worktree: SessionWorktreeRow | undefined;
}

/** Which sessions of every project a search lists. */
export interface SessionSearch {
  /** `"false"` leaves archived sessions out, `"true"` lists only them, `"any"` both. */
  archived: "true" | "false" | "any";
  /** Each must appear, case-insensitively, in the title, the branch or the project's name. */
  words: readonly string[];
}

/** Queries of `sessions` and their `session_worktrees`. */
export class SessionRows {
  readonly #executor: Executor;

  constructor(executor: Executor) {
    this.#executor = executor;
  }

  /** A session with its latest worktree row, in one query (every turn and message reads it). */
  async get(sessionId: string): Promise<SessionWithWorktree | undefined> {
    const [row] = await this.#executor
      .select()
      .from(sessions)
      .leftJoinLateral(this.#latestWorktree(), sql`true`)
      .where(eq(sessions.id, sessionId));
    if (!row) return undefined;
    return { session: row.sessions, worktree: row.latest_worktree ?? undefined };
  }

  /** A chat with its session and the session's latest worktree row, in one query. */
  async ofChat(chatId: string): Promise<(SessionWithWorktree & { chat: ChatRow }) | undefined> {
    const [row] = await this.#executor
      .select()
      .from(chats)
      .innerJoin(sessions, eq(sessions.id, chats.sessionId))
      .leftJoinLateral(this.#latestWorktree(), sql`true`)
      .where(eq(chats.id, chatId));
    if (!row) return undefined;
    return {
      chat: row.chats,
      session: row.sessions,
      worktree: row.latest_worktree ?? undefined,
    };
  }

  /** The latest worktree row of the session in the query, as a lateral subquery. */
  #latestWorktree() {
    return this.#executor
      .select()
      .from(sessionWorktrees)
      .where(eq(sessionWorktrees.sessionId, sessions.id))
      .orderBy(desc(sessionWorktrees.createdAt))
      .limit(1)
      .as("latest_worktree");
  }

  /** The latest worktree row of each session. */
  async worktreesOf(sessionIds: string[]): Promise<Map<string, SessionWorktreeRow>> {
    const map = new Map<string, SessionWorktreeRow>();
    if (sessionIds.length === 0) return map;
    const rows = await this.#executor
      .select()
      .from(sessionWorktrees)
      .where(inArray(sessionWorktrees.sessionId, sessionIds))
      .orderBy(asc(sessionWorktrees.createdAt));
    // The latest worktree row wins: an active one, or the removed one of a closed session.
    for (const row of rows) map.set(row.sessionId, row);
    return map;
  }

  /** What each session's agents are doing and how far its stream has got (see `sessionStates`). */
  states(list: readonly { id: string; open: boolean }[]): Promise<Map<string, SessionState>> {
    return sessionStates(this.#executor, list);
  }

  /** A project's sessions, newest first. */
  listOfProject(projectId: string): Promise<SessionRow[]> {
    return this.#executor
      .select()
      .from(sessions)
      .where(eq(sessions.projectId, projectId))
      .orderBy(desc(sessions.createdAt));
  }

  /** Sessions of every project that match a search, newest first. */
  async search(search: SessionSearch): Promise<SessionRow[]> {
    const rows = await this.#executor
      .select({ session: sessions })
      .from(sessions)
      .innerJoin(projects, eq(projects.id, sessions.projectId))
      .where(
        and(
          search.archived === "any"
            ? undefined
            : search.archived === "true"
              ? isNotNull(sessions.archivedAt)
              : isNull(sessions.archivedAt),
          ...search.words.map((word) => {
            // The words are the user's text, not patterns.
            const pattern = `%${word.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
            return or(
              ilike(sessions.title, pattern),
              ilike(sessions.branch, pattern),
              ilike(projects.name, pattern),
            );
          }),
        ),
      )
      .orderBy(desc(sessions.createdAt));
    return rows.map((row) => row.session);
  }

  /** Sessions by id, in no particular order; ids naming no session are left out. */
  byIds(sessionIds: readonly string[]): Promise<SessionRow[]> {
    return this.#executor
      .select()
      .from(sessions)
      .where(inArray(sessions.id, [...sessionIds]));
  }

  /** A new session with its worktree row. */
  async insert(
    session: typeof sessions.$inferInsert,
    worktree: Omit<typeof sessionWorktrees.$inferInsert, "sessionId">,
  ): Promise<{ session: SessionRow; worktree: SessionWorktreeRow }> {
    const [sessionRow] = await this.#executor.insert(sessions).values(session).returning();
    const [worktreeRow] = await this.#executor
      .insert(sessionWorktrees)
      .values({ ...worktree, sessionId: sessionRow!.id })
      .returning();
    return { session: sessionRow!, worktree: worktreeRow! };
  }

  /** Archives or unarchives a session; archiving again keeps the first time it was archived. */
  async setArchived(sessionId: string, archived: boolean): Promise<void> {
    await this.#executor
      .update(sessions)
      .set({
        archivedAt: archived ? sql`coalesce(${sessions.archivedAt}, now())` : null,
        updatedAt: new Date(),
      })
      .where(eq(sessions.id, sessionId));
  }

  /** Marks the session closed and its active worktree removed. */
  async close(sessionId: string): Promise<void> {
    await this.#executor
      .update(sessions)
      .set({ status: "closed", closedAt: new Date(), updatedAt: new Date() })
      .where(eq(sessions.id, sessionId));
    await this.#executor
      .update(sessionWorktrees)
      .set({ status: "removed", removedAt: new Date() })
      .where(and(eq(sessionWorktrees.sessionId, sessionId), eq(sessionWorktrees.status, "active")))
      .returning();
  }
}
