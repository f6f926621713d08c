import {
  type Database,
  type DbHandle,
  type Executor,
  sessionEvents,
  type Transaction,
} from "@deckhand/db";
import { redactSecrets } from "@deckhand/model-proxy";
import type { SessionEvent, SessionEventPayload } from "@deckhand/wire";
import { and, asc, eq, gt, sql } from "drizzle-orm";

/** NOTIFY channel announcing a new session event; the payload is the session id. */
export const SESSION_EVENTS_CHANNEL = "deckhand_session_events";

type EventRow = typeof sessionEvents.$inferSelect;

function toSessionEvent(row: EventRow): SessionEvent {
  return {
    id: row.id,
    session_id: row.sessionId,
    chat_id: row.chatId,
    created_at: row.createdAt.toISOString(),
    event: row.payload as SessionEventPayload,
  };
}

/**
 * Appends one event to a session's log. Call it inside the transaction that makes the change the
 * event describes. A per-session advisory lock makes appends to one session commit in id order,
 * so a reader that has seen id N can never later find a smaller id committed behind it.
 */
export async function appendSessionEvent(
  transaction: Transaction,
  sessionId: string,
  chatId: string | null,
  event: SessionEventPayload,
): Promise<SessionEvent> {
  await transaction.execute(sql`select pg_advisory_xact_lock(hashtextextended(${sessionId}, 0))`);
  // Agents echo what they see; a model token in a tool's output must not reach a row or a frame.
  const payload = JSON.parse(redactSecrets(JSON.stringify(event))) as SessionEventPayload;
  const [row] = await transaction
    .insert(sessionEvents)
    .values({ sessionId, chatId, type: event.type, payload })
    .returning();
  // Delivered on commit, so a listener never wakes for an event it cannot read yet.
  await transaction.execute(sql`select pg_notify(${SESSION_EVENTS_CHANNEL}, ${sessionId})`);
  return toSessionEvent(row!);
}

/** Appends in a transaction of its own (for events that change nothing else). */
export function publishSessionEvent(
  db: Database,
  sessionId: string,
  chatId: string | null,
  event: SessionEventPayload,
): Promise<SessionEvent> {
  return db.transaction((transaction) => appendSessionEvent(transaction, sessionId, chatId, event));
}

/** Events of a session after `afterId`, oldest first. */
export async function readSessionEvents(
  executor: Executor,
  sessionId: string,
  afterId: number,
  limit = 1_000,
): Promise<SessionEvent[]> {
  const rows = await executor
    .select()
    .from(sessionEvents)
    .where(and(eq(sessionEvents.sessionId, sessionId), gt(sessionEvents.id, afterId)))
    .orderBy(asc(sessionEvents.id))
    .limit(limit);
  return rows.map(toSessionEvent);
}

export interface SessionSubscription {
  /** Stops delivery; idempotent. */
  close(): void;
}

export interface SubscribeOptions {
  sessionId: string;
  /** The last event id the subscriber has; delivery starts after it. */
  afterId: number;
  /** Called once per event, in id order, never twice for one id. May apply back-pressure. */
  deliver(event: SessionEvent): Promise<void> | void;
  /** Called once the backlog present at subscription time has been delivered. */
  caughtUp?(lastEventId: number): void;
  onError?(error: unknown): void;
}

interface Subscriber {
  options: SubscribeOptions;
  cursor: number;
  /** Set while a read-and-deliver pass runs; a wake during it schedules one more pass. */
  running: boolean;
  again: boolean;
  closed: boolean;
}

/**
 * Fans persisted session events out to live subscribers (WebSocket clients). One LISTEN per
 * process wakes the subscribers of a session; each then reads from the database after its own
 * cursor, so every replica serves every event and a slow client never loses one. A slow poll is
 * the fallback for notifications lost while the listening connection was being re-established.
 */
export class SessionStreamHub {
  readonly #handle: DbHandle;
  readonly #pollIntervalMs: number;
  readonly #subscribers = new Map<string, Set<Subscriber>>();
  #unlisten: (() => Promise<void>) | null = null;
  #poll: NodeJS.Timeout | null = null;

  constructor(handle: DbHandle, options: { pollIntervalMs?: number } = {}) {
    this.#handle = handle;
    this.#pollIntervalMs = options.pollIntervalMs ?? 2_000;
  }

  async start(): Promise<void> {
    this.#unlisten = await this.#handle.listen(SESSION_EVENTS_CHANNEL, (sessionId) =>
      this.#wake(sessionId),
    );
    this.#poll = setInterval(() => {
      for (const sessionId of this.#subscribers.keys()) this.#wake(sessionId);
    }, this.#pollIntervalMs);
    this.#poll.unref();
  }

  async stop(): Promise<void> {
    if (this.#poll) clearInterval(this.#poll);
    this.#poll = null;
    for (const set of this.#subscribers.values())
      for (const subscriber of set) subscriber.closed = true;
    this.#subscribers.clear();
    await this.#unlisten?.();
    this.#unlisten = null;
  }

  get subscriberCount(): number {
    let count = 0;
    for (const set of this.#subscribers.values()) count += set.size;
    return count;
  }

  subscribe(options: SubscribeOptions): SessionSubscription {
    const subscriber: Subscriber = {
      options,
      cursor: options.afterId,
      running: false,
      again: false,
      closed: false,
    };
    let set = this.#subscribers.get(options.sessionId);
    if (!set) {
      set = new Set();
      this.#subscribers.set(options.sessionId, set);
    }
    set.add(subscriber);
    void this.#pump(subscriber, true);
    return {
      close: () => {
        subscriber.closed = true;
        const current = this.#subscribers.get(options.sessionId);
        current?.delete(subscriber);
        if (current?.size === 0) this.#subscribers.delete(options.sessionId);
      },
    };
  }

  #wake(sessionId: string): void {
    const set = this.#subscribers.get(sessionId);
    if (!set) return;
    for (const subscriber of set) void this.#pump(subscriber, false);
  }

  async #pump(subscriber: Subscriber, initial: boolean): Promise<void> {
    if (subscriber.running) {
      subscriber.again = true;
      return;
    }
    subscriber.running = true;
    try {
      do {
        subscriber.again = false;
        for (;;) {
          if (subscriber.closed) return;
          const events = await readSessionEvents(
            this.#handle.db,
            subscriber.options.sessionId,
            subscriber.cursor,
          );
          for (const event of events) {
            if (subscriber.closed) return;
            await subscriber.options.deliver(event);
            subscriber.cursor = event.id;
          }
          if (events.length < 1_000) break;
        }
        if (initial) {
          initial = false;
          subscriber.options.caughtUp?.(subscriber.cursor);
        }
      } while (subscriber.again && !subscriber.closed);
    } catch (error) {
      if (!subscriber.closed) subscriber.options.onError?.(error);
    } finally {
      subscriber.running = false;
    }
  }
}
