import { type Executor, messageParts, messages } from "@deckhand/db";
import { redactSecrets, redactValue } from "@deckhand/secrets";
import { type CollectedPart, type PartChanges, TextPartContentSchema } from "@deckhand/wire";
import { and, asc, eq, gte, inArray, isNull, lt, ne, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/pg-core";

export type MessageRow = typeof messages.$inferSelect;
export type MessagePartRow = typeof messageParts.$inferSelect;

/** How a turn's assistant message ended. */
export interface MessageOutcome {
  status: "complete" | "failed" | "cancelled";
  error?: string;
}

/**
 * Queries of `messages` and their `message_parts`. Text that a person wrote or an agent sent is
 * redacted on its way into a row: a pasted model token would otherwise go out on the stream.
 */
export class MessageRows {
  readonly #executor: Executor;

  constructor(executor: Executor) {
    this.#executor = executor;
  }

  async get(messageId: string): Promise<MessageRow | undefined> {
    const [row] = await this.#executor.select().from(messages).where(eq(messages.id, messageId));
    return row;
  }

  async statusOf(messageId: string): Promise<MessageRow["status"] | undefined> {
    const [row] = await this.#executor
      .select({ status: messages.status })
      .from(messages)
      .where(eq(messages.id, messageId));
    return row?.status;
  }

  /** A chat's messages with their parts, oldest first. */
  async listOfChat(chatId: string): Promise<{ message: MessageRow; parts: MessagePartRow[] }[]> {
    const rows = await this.#executor
      .select()
      .from(messages)
      .where(eq(messages.chatId, chatId))
      .orderBy(asc(messages.createdAt), asc(messages.id));
    if (rows.length === 0) return [];
    const parts = await this.#executor
      .select()
      .from(messageParts)
      .where(
        inArray(
          messageParts.messageId,
          rows.map((row) => row.id),
        ),
      );
    return rows.map((message) => ({
      message,
      parts: parts.filter((part) => part.messageId === message.id),
    }));
  }

  /** A complete message of one text part: a person's (`user`) or Deckhand's (`system`). */
  async insertText(values: {
    chatId: string;
    role: "user" | "system";
    agentType: string | null;
    text: string;
  }): Promise<{ message: MessageRow; part: MessagePartRow }> {
    const [message] = await this.#executor
      .insert(messages)
      .values({
        chatId: values.chatId,
        role: values.role,
        agentType: values.agentType,
        status: "complete",
      })
      .returning();
    const [part] = await this.#executor
      .insert(messageParts)
      .values({
        messageId: message!.id,
        position: 0,
        kind: "text",
        content: { text: redactSecrets(values.text) },
      })
      .returning();
    return { message: message!, part: part! };
  }

  /**
   * Inserts a turn's assistant message under its deterministic id; false when it exists already
   * (a task delivered again, or a turn cancelled before it started).
   */
  async insertAssistant(values: {
    id: string;
    chatId: string;
    agentType: string;
    status: "streaming" | "cancelled";
  }): Promise<boolean> {
    const inserted = await this.#executor
      .insert(messages)
      .values({
        ...values,
        role: "assistant",
        ...(values.status === "cancelled" ? { completedAt: new Date() } : {}),
      })
      .onConflictDoNothing()
      .returning({ id: messages.id });
    return inserted.length > 0;
  }

  /**
   * The insert of a turn's streaming assistant message under its deterministic id, unsent: it
   * returns a row only when the message is new, so it can guard the append of `turn_started`
   * (see `appendSessionEvents`'s `onlyIf`).
   */
  insertStreamingAssistant(values: { id: string; chatId: string; agentType: string }) {
    return this.#executor
      .insert(messages)
      .values({ ...values, status: "streaming", role: "assistant" })
      .onConflictDoNothing()
      .returning({ id: messages.id });
  }

  /** Marks an unfinished message cancelled; the turn finishing it keeps that status. */
  async markCancelled(messageId: string): Promise<void> {
    await this.#executor
      .update(messages)
      .set({ status: "cancelled" })
      .where(and(eq(messages.id, messageId), isNull(messages.completedAt)));
  }

  /** Stores what a turn's parts changed since the last store (see `PartCollector`). */
  async storePartChanges(messageId: string, changes: PartChanges): Promise<void> {
    if (changes.truncateFrom !== null) {
      await this.#executor
        .delete(messageParts)
        .where(
          and(
            eq(messageParts.messageId, messageId),
            gte(messageParts.position, changes.truncateFrom),
          ),
        );
    }
    for (const { position, part } of changes.put) {
      const content = redactValue(part.content);
      await this.#executor
        .insert(messageParts)
        .values({ messageId, position, kind: part.kind, content })
        .onConflictDoUpdate({
          target: [messageParts.messageId, messageParts.position],
          set: { kind: part.kind, content },
        });
    }
  }

  /**
   * Ends a message: its status and error, and its parts rewritten whole (so a secret split
   * across deltas is redacted too).
   */
  async finish(messageId: string, outcome: MessageOutcome, parts: CollectedPart[]): Promise<void> {
    await this.rewriteParts(messageId, parts);
    await this.end(messageId, outcome);
  }

  /** Replaces a message's parts with `parts` (redacted whole). */
  async rewriteParts(messageId: string, parts: CollectedPart[]): Promise<void> {
    await this.#executor.delete(messageParts).where(eq(messageParts.messageId, messageId));
    if (parts.length > 0) {
      await this.#executor.insert(messageParts).values(
        parts.map((part, position) => ({
          messageId,
          position,
          kind: part.kind,
          content: redactValue(part.content),
        })),
      );
    }
  }

  /**
   * The update that ends a message with its outcome, unsent: it returns the message's id, so it
   * can guard the append of the event that announces it.
   */
  end(messageId: string, outcome: MessageOutcome) {
    return this.#executor
      .update(messages)
      .set({ status: outcome.status, error: outcome.error ?? null, completedAt: new Date() })
      .where(eq(messages.id, messageId))
      .returning({ id: messages.id });
  }

  /** The text of a user message: its first part, when that is text ("" otherwise). */
  async userMessageText(messageId: string): Promise<string> {
    return (await this.promptOf(messageId)).text;
  }

  /**
   * What Deckhand told the chat before this user message, for the agent it is for when it is
   * that agent's first message in the chat: the chat's system messages (a taken-over batch
   * workspace's context, say), "" when there are none or the agent had an earlier message.
   */
  async contextFor(messageId: string): Promise<string> {
    return (await this.promptOf(messageId)).context;
  }

  /**
   * What a user message asks its agent: its text (`userMessageText`) and the chat's context
   * before it (`contextFor`), read in one query, and a second only on the agent's first message
   * in the chat, for the system messages.
   */
  async promptOf(messageId: string): Promise<{ text: string; context: string }> {
    const earlier = alias(messages, "earlier");
    const firstPart = this.#executor
      .select({ content: messageParts.content })
      .from(messageParts)
      .where(eq(messageParts.messageId, messages.id))
      .orderBy(asc(messageParts.position))
      .limit(1);
    const earlierMessage = this.#executor
      .select({ id: earlier.id })
      .from(earlier)
      .where(
        and(
          eq(earlier.chatId, messages.chatId),
          eq(earlier.role, "user"),
          sql`(${messages.agentType} is null or ${earlier.agentType} = ${messages.agentType})`,
          ne(earlier.id, messages.id),
          lt(earlier.createdAt, messages.createdAt),
        ),
      )
      .limit(1);
    const [message] = await this.#executor
      .select({
        chatId: messages.chatId,
        createdAt: messages.createdAt,
        firstPart: sql<unknown>`(${firstPart})`,
        hasEarlier: sql<boolean>`exists(${earlierMessage})`,
      })
      .from(messages)
      .where(eq(messages.id, messageId));
    if (message === undefined) return { text: "", context: "" };
    const content = TextPartContentSchema.safeParse(message.firstPart);
    const text = content.success ? content.data.text : "";
    if (message.hasEarlier) return { text, context: "" };
    const notes = await this.#executor
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
    const context = notes
      .flatMap((note) => {
        const noteContent = TextPartContentSchema.safeParse(note.content);
        return noteContent.success ? [noteContent.data.text] : [];
      })
      .join("\n\n");
    return { text, context };
  }
}
