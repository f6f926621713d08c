import {
  type Database,
  type DbHandle,
  type Executor,
  sessionEvents,
  type Transaction,
} from "@deckhand/db";
import { redactValue } from "@deckhand/secrets";
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

/** Appends one event to a session's log, as `appendSessionEvents` does. */
export async function appendSessionEvent(
  transaction: Transaction,
  sessionId: string,
  chatId: string | null,
  event: SessionEventPayload,
): Promise<SessionEvent> {
  const [appended] = await appendSessionEvents(transaction, sessionId, [{ chatId, event }]);
  return appended!;
}

/**
 * Appends events to one session's log in one statement, in the given order. Call it inside the
 * transaction that makes the change the events describe. A per-session advisory lock makes
 * appends to one session commit in id order, so a reader that has seen id N can never later find
 * a smaller id committed behind it.
 */
export async function appendSessionEvents(
  transaction: Transaction,
  sessionId: string,
  entries: readonly { chatId: string | null; event: SessionEventPayload }[],
): Promise<SessionEvent[]> {
  if (entries.length === 0) return [];
  await transaction.execute(sql`select pg_advisory_xact_lock(hashtextextended(${sessionId}, 0))`);
  const rows = await transaction
    .insert(sessionEvents)
    .values(
      entries.map(({ chatId, event }) => ({
        sessionId,
        chatId,
        type: event.type,
        // Agents echo what they see; a model token or one of Deckhand's own secrets in a tool's
        // output must not reach a row or a frame.
        payload: redactValue(event),
      })),
    )
    .returning();
  // Delivered on commit, so a listener never wakes for an event it cannot read yet.
  await transaction.execute(sql`select pg_notify(${SESSION_EVENTS_CHANNEL}, ${sessionId})`);
  // A multi-row insert assigns the identity values in the order of its VALUES list.
  return rows.map(toSessionEvent).sort((left, right) => left.id - right.id);
}

export interface SessionEventWriterOptions<
  Event extends SessionEventPayload = SessionEventPayload,
> {
  /** Most events written in one transaction. */
  maxBatch?: number;
  /**
   * How many events may wait unwritten before `append` makes its caller wait for the database:
   * back-pressure for an agent that produces events faster than they can be stored.
   */
  highWaterMark?: number;
  /**
   * Runs inside each batch's transaction, after its events are appended: for state that must
   * commit with the events that describe it (an assistant message's parts).
   */
  onBatch?: (transaction: Transaction, entries: readonly QueuedEvent<Event>[]) => Promise<void>;
}

export interface QueuedEvent<Event extends SessionEventPayload = SessionEventPayload> {
  chatId: string | null;
  event: Event;
}

/**
 * Writes one session's events in the order they are appended, with group commit: events that
 * arrive while a write is in flight go into the next transaction together. An agent streaming
 * thousands of deltas thus costs a transaction per batch, not per delta, and never waits for the
 * database unless it runs `highWaterMark` events ahead. Nothing is sent to clients before it is
 * stored: streams read from the database. `flush` resolves once everything appended is stored
 * and rejects with the first write error (the events of a failed batch are not retried).
 */
/** `Event` narrows what may be appended, so `onBatch` gets the events as their own type. */
export class SessionEventWriter<Event extends SessionEventPayload = SessionEventPayload> {
  readonly #db: Database;
  readonly #sessionId: string;
  readonly #maxBatch: number;
  readonly #highWaterMark: number;
  readonly #onBatch: SessionEventWriterOptions<Event>["onBatch"];
  #queue: QueuedEvent<Event>[] = [];
  #writing: Promise<void> | null = null;
  #failure: unknown = null;
  #drained: (() => void)[] = [];

  constructor(db: Database, sessionId: string, options: SessionEventWriterOptions<Event> = {}) {
    this.#db = db;
    this.#sessionId = sessionId;
    this.#maxBatch = options.maxBatch ?? 500;
    this.#highWaterMark = options.highWaterMark ?? 2_000;
    this.#onBatch = options.onBatch;
  }

  /** Queues an event; waits only when the queue is past its high-water mark. */
  async append(chatId: string | null, event: Event): Promise<void> {
    if (this.#failure !== null) throw this.#failure;
    this.#queue.push({ chatId, event });
    this.#writing ??= this.#writeAll();
    if (this.#queue.length > this.#highWaterMark) {
      await new Promise<void>((resolveDrained) => this.#drained.push(resolveDrained));
      if (this.#failure !== null) throw this.#failure;
    }
  }

  /** Resolves when every appended event is stored; rejects if a write failed. */
  async flush(): Promise<void> {
    while (this.#writing) await this.#writing;
    if (this.#failure !== null) throw this.#failure;
  }

  async #writeAll(): Promise<void> {
    try {
      while (this.#queue.length > 0 && this.#failure === null) {
        const batch = this.#queue.splice(0, this.#maxBatch);
        try {
          await this.#db.transaction(async (transaction) => {
            await appendSessionEvents(transaction, this.#sessionId, batch);
            await this.#onBatch?.(transaction, batch);
          });
        } catch (error) {
          this.#failure = error;
          this.#queue = [];
        }
        if (this.#queue.length <= this.#highWaterMark) {
          for (const resolveDrained of this.#drained.splice(0)) resolveDrained();
        }
      }
    } finally {
      for (const resolveDrained of this.#drained.splice(0)) resolveDrained();
      this.#writing = null;
    }
  }
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

const PAGE = 1_000;
/** A live subscriber further behind than this reads from the database again, at its own pace. */
const MAX_QUEUED = 5_000;

interface Subscriber {
  options: SubscribeOptions;
  /** The id of the last event delivered (or skipped as already seen). */
  cursor: number;
  /**
   * `catching_up`: reads the database itself until it reaches the feed. `live`: receives what
   * the feed reads, through `queue`.
   */
  mode: "catching_up" | "live";
  queue: SessionEvent[];
  delivering: boolean;
  announced: boolean;
  closed: boolean;
}

/** One per session with subscribers: reads each new event once for all of them. */
interface Feed {
  sessionId: string;
  subscribers: Set<Subscriber>;
  /** The highest event id the feed has read (and handed to live subscribers). */
  readId: number;
  reading: boolean;
  again: boolean;
}

/**
 * Fans persisted session events out to live subscribers (WebSocket clients). One LISTEN per
 * process wakes a session's feed, which reads the new events once and hands them to every
 * subscriber that is live; a subscriber that connects with an older cursor (or falls far
 * behind) first reads the backlog itself, then joins the feed. Every event comes from the
 * database, so every replica serves every event, and ids only grow, so nothing is delivered
 * twice. A slow poll covers notifications lost while the listening connection reconnects.
 */
export class SessionStreamHub {
  readonly #handle: DbHandle;
  readonly #pollIntervalMs: number;
  readonly #feeds = new Map<string, Feed>();
  #unlisten: (() => Promise<void>) | null = null;
  #poll: NodeJS.Timeout | null = null;

  constructor(handle: DbHandle, options: { pollIntervalMs?: number } = {}) {
    this.#handle = handle;
    this.#pollIntervalMs = options.pollIntervalMs ?? 2_000;
  }

  async start(): Promise<void> {
    this.#unlisten = await this.#handle.listen(SESSION_EVENTS_CHANNEL, (sessionId) => {
      const feed = this.#feeds.get(sessionId);
      if (feed) void this.#readFeed(feed);
    });
    this.#poll = setInterval(() => {
      for (const feed of this.#feeds.values()) void this.#readFeed(feed);
    }, this.#pollIntervalMs);
    this.#poll.unref();
  }

  async stop(): Promise<void> {
    if (this.#poll) clearInterval(this.#poll);
    this.#poll = null;
    for (const feed of this.#feeds.values()) {
      for (const subscriber of feed.subscribers) subscriber.closed = true;
    }
    this.#feeds.clear();
    await this.#unlisten?.();
    this.#unlisten = null;
  }

  get subscriberCount(): number {
    let count = 0;
    for (const feed of this.#feeds.values()) count += feed.subscribers.size;
    return count;
  }

  subscribe(options: SubscribeOptions): SessionSubscription {
    let feed = this.#feeds.get(options.sessionId);
    if (!feed) {
      // A new feed starts where the first subscriber starts; it reads forward from there.
      feed = {
        sessionId: options.sessionId,
        subscribers: new Set(),
        readId: options.afterId,
        reading: false,
        again: false,
      };
      this.#feeds.set(options.sessionId, feed);
    }
    const subscriber: Subscriber = {
      options,
      cursor: options.afterId,
      mode: "catching_up",
      queue: [],
      delivering: false,
      announced: false,
      closed: false,
    };
    feed.subscribers.add(subscriber);
    void this.#catchUp(feed, subscriber);
    return {
      close: () => {
        subscriber.closed = true;
        subscriber.queue = [];
        const current = this.#feeds.get(options.sessionId);
        current?.subscribers.delete(subscriber);
        if (current?.subscribers.size === 0) this.#feeds.delete(options.sessionId);
      },
    };
  }

  /** Reads what is new for the session once and queues it for every live subscriber. */
  async #readFeed(feed: Feed): Promise<void> {
    if (feed.reading) {
      feed.again = true;
      return;
    }
    feed.reading = true;
    try {
      do {
        feed.again = false;
        for (;;) {
          const events = await readSessionEvents(
            this.#handle.db,
            feed.sessionId,
            feed.readId,
            PAGE,
          );
          if (events.length === 0) break;
          feed.readId = events.at(-1)!.id;
          for (const subscriber of feed.subscribers) {
            if (subscriber.mode !== "live" || subscriber.closed) continue;
            for (const event of events)
              if (event.id > subscriber.cursor) subscriber.queue.push(event);
            if (subscriber.queue.length > MAX_QUEUED) {
              // Too far behind to buffer: drop the queue and let it read the database itself.
              subscriber.queue = [];
              subscriber.mode = "catching_up";
              void this.#catchUp(feed, subscriber);
            } else {
              void this.#drain(subscriber);
            }
          }
          if (events.length < PAGE) break;
        }
      } while (feed.again && this.#feeds.get(feed.sessionId) === feed);
    } catch (error) {
      for (const subscriber of feed.subscribers) subscriber.options.onError?.(error);
    } finally {
      feed.reading = false;
    }
  }

  /** Delivers a subscriber's own reads until it reaches the feed, then makes it live. */
  async #catchUp(feed: Feed, subscriber: Subscriber): Promise<void> {
    try {
      // After an overflow the queue's last delivery may still be running; let it finish, so
      // the cursor is settled before reading from it.
      while (subscriber.delivering) await new Promise((resolveWait) => setTimeout(resolveWait, 1));
      for (;;) {
        if (subscriber.closed) return;
        const events = await readSessionEvents(
          this.#handle.db,
          feed.sessionId,
          subscriber.cursor,
          PAGE,
        );
        for (const event of events) {
          if (subscriber.closed) return;
          await subscriber.options.deliver(event);
          subscriber.cursor = event.id;
        }
        // Checked right after a read, before anything else runs: the feed has read at most up
        // to here, so from now on the feed hands this subscriber everything after its cursor.
        if (events.length < PAGE && subscriber.cursor >= feed.readId) {
          subscriber.mode = "live";
          break;
        }
      }
      if (!subscriber.announced) {
        subscriber.announced = true;
        subscriber.options.caughtUp?.(subscriber.cursor);
      }
      // Events that arrived while this subscriber was reading are the feed's to fetch.
      void this.#readFeed(feed);
    } catch (error) {
      if (!subscriber.closed) subscriber.options.onError?.(error);
    }
  }

  async #drain(subscriber: Subscriber): Promise<void> {
    if (subscriber.delivering) return;
    subscriber.delivering = true;
    try {
      while (subscriber.queue.length > 0 && !subscriber.closed && subscriber.mode === "live") {
        const event = subscriber.queue.shift()!;
        if (event.id <= subscriber.cursor) continue;
        await subscriber.options.deliver(event);
        subscriber.cursor = event.id;
      }
    } catch (error) {
      if (!subscriber.closed) subscriber.options.onError?.(error);
    } finally {
      subscriber.delivering = false;
    }
  }
}
