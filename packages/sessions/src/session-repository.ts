import {
  agentSessions,
  chats,
  type Database,
  messageParts,
  messages,
  pendingChanges,
  projects,
  sessions,
  sessionWorktrees,
} from "@deckhand/db";
import { TextPartContentSchema } from "@deckhand/wire";
import { and, asc, desc, eq, inArray, isNotNull, lt, ne } from "drizzle-orm";

export type ProjectRow = typeof projects.$inferSelect;
export type SessionRow = typeof sessions.$inferSelect;
export type SessionWorktreeRow = typeof sessionWorktrees.$inferSelect;
export type ChatRow = typeof chats.$inferSelect;
export type PendingChangeRow = typeof pendingChanges.$inferSelect;

/** A session's row with its latest worktree row (the active one, or the removed one once closed). */
export interface SessionWithWorktree {
  session: SessionRow;
  worktree: SessionWorktreeRow | undefined;
}

/** A pending change with the agent it is credited to. */
export interface PendingChangeWithAgent {
  change: PendingChangeRow;
  agent: string;
}

/**
 * Reads of the session domain's rows over the @deckhand/db schema, typed as drizzle infers them.
 * Absent rows are `undefined`: whether that is an error, and which, is the caller's decision.
 * Ids are taken as given; callers check that an id from outside is a UUID first.
 */
export class SessionRepository {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async project(projectId: string): Promise<ProjectRow | undefined> {
    const [row] = await this.#db.select().from(projects).where(eq(projects.id, projectId));
    return row;
  }

  async session(sessionId: string): Promise<SessionWithWorktree | undefined> {
    const [session] = await this.#db.select().from(sessions).where(eq(sessions.id, sessionId));
    if (!session) return undefined;
    return { session, worktree: (await this.worktreesOf([sessionId])).get(sessionId) };
  }

  /** The latest worktree row of each session. */
  async worktreesOf(sessionIds: string[]): Promise<Map<string, SessionWorktreeRow>> {
    const map = new Map<string, SessionWorktreeRow>();
    if (sessionIds.length === 0) return map;
    const rows = await this.#db
      .select()
      .from(sessionWorktrees)
      .where(inArray(sessionWorktrees.sessionId, sessionIds))
      .orderBy(asc(sessionWorktrees.createdAt));
    // The latest worktree row wins: an active one, or the removed one of a closed session.
    for (const row of rows) map.set(row.sessionId, row);
    return map;
  }

  async chat(chatId: string): Promise<ChatRow | undefined> {
    const [row] = await this.#db.select().from(chats).where(eq(chats.id, chatId));
    return row;
  }

  async pendingChange(pendingChangeId: string): Promise<PendingChangeWithAgent | undefined> {
    const [row] = await this.#db
      .select({ change: pendingChanges, agent: agentSessions.agentType })
      .from(pendingChanges)
      .innerJoin(agentSessions, eq(agentSessions.id, pendingChanges.agentSessionId))
      .where(eq(pendingChanges.id, pendingChangeId));
    return row;
  }

  /** The text of a user message: its first part, when that is text ("" otherwise). */
  async userMessageText(messageId: string): Promise<string> {
    const [part] = await this.#db
      .select({ content: messageParts.content })
      .from(messageParts)
      .where(eq(messageParts.messageId, messageId))
      .orderBy(asc(messageParts.position))
      .limit(1);
    const content = TextPartContentSchema.safeParse(part?.content);
    return content.success ? content.data.text : "";
  }

  /**
   * What Deckhand told the chat before this user message, for the agent it is for when it is
   * that agent's first message in the chat: the chat's system messages (a taken-over batch
   * workspace's context, say), "" when there are none or the agent had an earlier message.
   */
  async contextFor(messageId: string): Promise<string> {
    const [message] = await this.#db.select().from(messages).where(eq(messages.id, messageId));
    if (message === undefined) return "";
    const [earlier] = await this.#db
      .select({ id: messages.id })
      .from(messages)
      .where(
        and(
          eq(messages.chatId, message.chatId),
          eq(messages.role, "user"),
          message.agentType === null ? undefined : eq(messages.agentType, message.agentType),
          ne(messages.id, message.id),
          lt(messages.createdAt, message.createdAt),
        ),
      )
      .limit(1);
    if (earlier !== undefined) return "";
    const notes = await this.#db
      .select({ content: messageParts.content })
      .from(messages)
      .innerJoin(messageParts, eq(messageParts.messageId, messages.id))
      .where(
        and(
          eq(messages.chatId, message.chatId),
          eq(messages.role, "system"),
          lt(messages.createdAt, message.createdAt),
        ),
      )
      .orderBy(asc(messages.createdAt), asc(messageParts.position));
    return notes
      .flatMap((note) => {
        const content = TextPartContentSchema.safeParse(note.content);
        return content.success ? [content.data.text] : [];
      })
      .join("\n\n");
  }

  /** The agent's own session id stored on an agent session row, if it has one. */
  async resumeIdOf(agentSessionId: string): Promise<string | null> {
    const [row] = await this.#db
      .select({ resumeSessionId: agentSessions.resumeSessionId })
      .from(agentSessions)
      .where(eq(agentSessions.id, agentSessionId));
    return row?.resumeSessionId ?? null;
  }

  /** The agent's own session id from its latest run in this session, to resume. */
  async latestResumeId(sessionId: string, agent: string): Promise<string | null> {
    const [row] = await this.#db
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
}
