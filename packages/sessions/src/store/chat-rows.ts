import { chats, type Executor } from "@deckhand/db";
import { asc, eq } from "drizzle-orm";

export type ChatRow = typeof chats.$inferSelect;

/** Queries of `chats`. */
export class ChatRows {
  readonly #executor: Executor;

  constructor(executor: Executor) {
    this.#executor = executor;
  }

  async get(chatId: string): Promise<ChatRow | undefined> {
    const [row] = await this.#executor.select().from(chats).where(eq(chats.id, chatId));
    return row;
  }

  /** A session's chats, oldest first. */
  listOfSession(sessionId: string): Promise<ChatRow[]> {
    return this.#executor
      .select()
      .from(chats)
      .where(eq(chats.sessionId, sessionId))
      .orderBy(asc(chats.createdAt));
  }

  async insert(values: typeof chats.$inferInsert): Promise<ChatRow> {
    const [row] = await this.#executor.insert(chats).values(values).returning();
    return row!;
  }
}
