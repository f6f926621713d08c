import {
  type AgentEvent,
  type CollectedPart,
  type Message,
  PartCollector,
  type PermissionOptionKind,
  type SessionEvent,
} from "@deckhand/wire";

/** A message part as the server stores it, positionless: wire's typed union by `kind`. */
export type ViewPart = CollectedPart;

/** A copy of a part with its own content object, so memoised views see that it changed. */
function copyPart(part: CollectedPart): ViewPart {
  return { ...part, content: { ...part.content } } as ViewPart;
}

export interface ViewMessage {
  id: string;
  role: Message["role"];
  agent: string | null;
  status: Message["status"];
  error: string | null;
  parts: ViewPart[];
}

export interface PendingPermission {
  requestId: string;
  messageId: string;
  agent: string;
  title: string;
  toolCallId: string | null;
  options: { option_id: string; name: string; kind: PermissionOptionKind }[];
}

type Listener = () => void;

function sameContent(left: ViewPart["content"], right: ViewPart["content"]): boolean {
  return JSON.stringify(left) === JSON.stringify(right);
}

/**
 * What the chat screen shows of one chat, kept current by the session's events.
 *
 * Finished messages are the server's stored parts (`GET /api/chats/:id/messages`). A message
 * still streaming is rebuilt from its live events with @deckhand/wire's PartCollector (the fold
 * the server stores), a display-only preview that the stored parts replace once its turn
 * finishes.
 */
export class SessionModel {
  readonly chatId: string;
  #stored = new Map<string, ViewMessage>();
  #live = new Map<string, ViewMessage>();
  /** The fold of each live message's events. */
  #collectors = new Map<string, PartCollector>();
  #order: string[] = [];
  readonly activeTurns = new Map<string, string>();
  readonly permissions = new Map<string, PendingPermission>();
  /** Bumped whenever pending changes may have changed: the review panel refetches. */
  pendingChangesVersion = 0;
  /** Bumped when a turn finishes: stored messages are refetched. */
  messagesVersion = 0;
  #listeners = new Set<Listener>();
  #snapshot: ViewMessage[] = [];
  #flushScheduled = false;

  constructor(chatId: string) {
    this.chatId = chatId;
  }

  subscribe(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Listeners hear of changes at most once per animation frame: an answer streams as thousands
   * of small deltas, and rendering after each one would make long tasks of what one frame's
   * render does once.
   */
  #changed(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    const flush = () => {
      this.#flushScheduled = false;
      this.#flush();
    };
    if (typeof requestAnimationFrame === "function") requestAnimationFrame(flush);
    else setTimeout(flush, 0);
  }

  #flush(): void {
    this.#snapshot = this.#order.map((id) => {
      const stored = this.#stored.get(id);
      const live = this.#live.get(id);
      if (stored && (!live || (stored.status !== "pending" && stored.status !== "streaming")))
        return stored;
      return live ?? stored!;
    });
    for (const listener of this.#listeners) listener();
  }

  /** The messages in order; a new array after each change (for useSyncExternalStore). */
  messages = (): ViewMessage[] => this.#snapshot;

  #remember(id: string): void {
    if (!this.#order.includes(id)) this.#order.push(id);
  }

  /**
   * Takes the server's messages. A part equal to the one already shown (stored, or streamed
   * live) keeps its object, and an unchanged message keeps its own, so refetching a long chat
   * re-renders only what changed.
   */
  setStoredMessages(messages: Message[]): void {
    for (const message of messages) {
      const previous = this.#stored.get(message.id);
      const shown = previous ?? this.#live.get(message.id);
      const parts = message.parts.map((part, index): ViewPart => {
        const { position: _position, ...positionless } = part;
        const old = shown?.parts[index];
        return old && old.kind === part.kind && sameContent(old.content, part.content)
          ? old
          : positionless;
      });
      const unchanged =
        previous !== undefined &&
        previous.status === message.status &&
        previous.error === message.error &&
        previous.agent === message.agent &&
        previous.parts.length === parts.length &&
        parts.every((part, index) => part === previous.parts[index]);
      if (!unchanged)
        this.#stored.set(message.id, {
          id: message.id,
          role: message.role,
          agent: message.agent,
          status: message.status,
          error: message.error,
          parts,
        });
      this.#remember(message.id);
    }
    this.#changed();
  }

  apply(sessionEvent: SessionEvent): void {
    const event = sessionEvent.event;
    if (sessionEvent.chat_id !== null && sessionEvent.chat_id !== this.chatId) return;
    switch (event.type) {
      case "message_created":
        this.setStoredMessages([event.message]);
        return;
      case "turn_started":
        this.activeTurns.set(event.message_id, event.agent);
        if (!this.#live.has(event.message_id)) {
          this.#live.set(event.message_id, {
            id: event.message_id,
            role: "assistant",
            agent: event.agent,
            status: "streaming",
            error: null,
            parts: [],
          });
        }
        this.#remember(event.message_id);
        break;
      case "turn_finished": {
        this.activeTurns.delete(event.message_id);
        const live = this.#live.get(event.message_id);
        if (live) this.#live.set(live.id, { ...live, status: event.status });
        for (const [id, permission] of this.permissions)
          if (permission.messageId === event.message_id) this.permissions.delete(id);
        this.messagesVersion += 1;
        this.pendingChangesVersion += 1;
        break;
      }
      case "permission_request":
        this.permissions.set(event.request_id, {
          requestId: event.request_id,
          messageId: event.message_id,
          agent:
            this.activeTurns.get(event.message_id) ?? this.#live.get(event.message_id)?.agent ?? "",
          title: event.title,
          toolCallId: event.tool_call_id,
          options: event.options,
        });
        this.#fold(event);
        break;
      case "permission_resolved":
        this.permissions.delete(event.request_id);
        this.#fold(event);
        break;
      case "pending_changes":
      case "pending_change_resolved":
      case "commits_folded":
        this.pendingChangesVersion += 1;
        break;
      default:
        if ("message_id" in event) this.#fold(event as AgentEvent);
        else return;
    }
    this.#changed();
  }

  /**
   * Folds one agent event into its live message with wire's PartCollector, the fold the server
   * stores, so the preview and the stored parts cannot disagree. The collector changes its parts
   * in place; each part it reports changed is copied, so memoised views see exactly the parts
   * that changed and no others.
   */
  #fold(event: AgentEvent): void {
    if (!("message_id" in event) || event.message_id === null) return;
    const message = this.#live.get(event.message_id);
    if (!message) return;
    let collector = this.#collectors.get(message.id);
    if (!collector) {
      collector = new PartCollector();
      this.#collectors.set(message.id, collector);
    }
    collector.add(event);
    const changes = collector.takeChanges();
    let { status } = message;
    if (event.type === "turn_end" && event.stop_reason === "cancelled") status = "cancelled";
    if (changes.truncateFrom === null && changes.put.length === 0 && status === message.status)
      return;
    const parts = message.parts.slice(0, changes.truncateFrom ?? undefined);
    for (const { position, part } of changes.put) parts[position] = copyPart(part);
    this.#live.set(message.id, { ...message, parts, status, error: collector.lastError });
  }
}
