import type { Database } from "@deckhand/db";
import { redactSecrets } from "@deckhand/secrets";
import type { Chat, CreateChatRequest } from "@deckhand/wire";
import { notFound, requireChat, requireOpenSession, requireSession } from "../required-rows.ts";
import { chatResource } from "../resources.ts";
import { SessionStore } from "../store/session-store.ts";

/** Chats: the conversations of a session, each with any of its agents; one may branch another. */
export class ChatService {
  readonly #store: SessionStore;

  constructor(db: Database) {
    this.#store = new SessionStore(db);
  }

  async create(sessionId: string, request: CreateChatRequest): Promise<Chat> {
    await requireOpenSession(this.#store, sessionId);
    if (request.parent_chat_id !== undefined) {
      const parent = await requireChat(this.#store, request.parent_chat_id);
      if (parent.sessionId !== sessionId) throw notFound("chat", request.parent_chat_id);
    }
    const row = await this.#store.chats.insert({
      sessionId,
      title: redactSecrets(request.title ?? ""),
      parentChatId: request.parent_chat_id,
    });
    return chatResource(row);
  }

  /** A session's chats, oldest first. */
  async list(sessionId: string): Promise<Chat[]> {
    await requireSession(this.#store, sessionId);
    return (await this.#store.chats.listOfSession(sessionId)).map(chatResource);
  }
}
