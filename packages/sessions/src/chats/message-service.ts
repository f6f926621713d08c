import type { Database } from "@deckhand/db";
import type { CreateMessageRequest, CreateMessageResponse, Message } from "@deckhand/wire";
import { type AgentCatalog, checkChoiceInCatalog } from "../agent-choice.ts";
import { requireChat, requireChatOfOpenSession } from "../required-rows.ts";
import { messageResource } from "../resources.ts";
import { SessionStore } from "../store/session-store.ts";

/**
 * Messages of a chat. A person's message asks an agent for a turn: it is stored with the task
 * that runs the turn, and the turn's answer is the assistant message that follows it.
 */
export class MessageService {
  readonly #store: SessionStore;
  readonly #agentCatalog: AgentCatalog | null;

  constructor(db: Database, agentCatalog: AgentCatalog | null) {
    this.#store = new SessionStore(db);
    this.#agentCatalog = agentCatalog;
  }

  /**
   * Stores a user message and, in the same transaction, the task that runs the named agent's
   * turn and the stream event announcing the message: all three happen, or none.
   */
  async create(chatId: string, request: CreateMessageRequest): Promise<CreateMessageResponse> {
    const { chat, session } = await requireChatOfOpenSession(this.#store, chatId);
    if (request.model !== undefined || request.mode !== undefined) {
      await checkChoiceInCatalog(this.#agentCatalog, session.projectId, request);
    }
    // The session's model and mode are its own agent's; another agent keeps its defaults.
    const ownAgent = session.agent === request.agent;
    const model = request.model ?? (ownAgent ? session.model : null);
    const mode = request.mode ?? (ownAgent ? session.mode : null);
    return this.#store.transaction(async (transaction) => {
      const { message: row, part } = await transaction.messages.insertText({
        chatId,
        role: "user",
        agentType: request.agent,
        text: request.text,
      });
      const task = await transaction.turnTasks.enqueue({
        session_id: chat.sessionId,
        chat_id: chatId,
        user_message_id: row.id,
        agent: request.agent,
        model,
        mode,
      });
      const message = messageResource(row, [part]);
      await transaction.appendEvent(chat.sessionId, chatId, { type: "message_created", message });
      return { message, task_id: task.id };
    });
  }

  /** A chat's messages with their parts, oldest first. */
  async list(chatId: string): Promise<Message[]> {
    await requireChat(this.#store, chatId);
    const rows = await this.#store.messages.listOfChat(chatId);
    return rows.map(({ message, parts }) => messageResource(message, parts));
  }
}
