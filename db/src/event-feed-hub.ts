// A fan-out of an append-only event log (rows with growing ids, keyed by a session or a run) to
// live subscribers: WebSocket clients of session streams and batch-run streams share it.
import type { DbHandle, Executor } from "./client.ts";

/** What a feed carries: anything with the log's growing id. */
export interface FeedEvent {
  id: number;
}

/** Reads a key's events after `afterId`, oldest first, at most `limit`. */
export type ReadFeedEvents<Event extends FeedEvent> = (
  executor: Executor,
  key: string,
  afterId: number,
  limit: number,
) => Promise<Event[]>;

/**
 * What a notification on the channel says: the key that has new events and, when the writer
 * could send them, the events themselves with the key's last event id before them.
 */
export interface FeedNotice<Event extends FeedEvent> {
  key: string;
  /** The key's last event id before `events` (0 for none), as the writer saw it. */
  previousId?: number;
  /** The events just committed, in id order. */
  events?: Event[];
}

export interface EventFeedHubOptions<Event extends FeedEvent> {
  /** The NOTIFY channel whose payload is the key that has new events. */
  channel: string;
  read: ReadFeedEvents<Event>;
  /**
   * Reads a notification's payload; without it the payload is the key. A notice that carries
   * its events spares the feed its read when they follow what it has read.
   */
  notice?: (payload: string) => FeedNotice<Event>;
  /** The fallback read of every feed, for notifications lost while reconnecting. Default 2 s. */
  pollIntervalMs?: number;
}

export interface FeedSubscription {
  /** Stops delivery; idempotent. */
  close(): void;
}

export interface FeedSubscribeOptions<Event extends FeedEvent> {
  /** The session, run, ... whose events to follow. */
  key: string;
  /** The last event id the subscriber has; delivery starts after it. */
  afterId: number;
  /** Called once per event, in id order, never twice for one id. May apply back-pressure. */
  deliver(event: Event): Promise<void> | void;
  /** Called once the backlog present at subscription time has been delivered. */
  caughtUp?(lastEventId: number): void;
  onError?(error: unknown): void;
}

const PAGE = 1_000;

/**
 * How many feeds this process has open per channel and key, over every hub. A writer asks
 * (`EventFeedHub.followed`) before it pays for a notice that carries its events: with nobody
 * here following the key, a bare key does as well (a hub elsewhere reads on it, as a hub does
 * for any notice without events).
 */
const openFeeds = new Map<string, Map<string, number>>();

function countFeed(channel: string, key: string, change: 1 | -1): void {
  let keys = openFeeds.get(channel);
  if (!keys) {
    keys = new Map();
    openFeeds.set(channel, keys);
  }
  const count = (keys.get(key) ?? 0) + change;
  if (count > 0) keys.set(key, count);
  else keys.delete(key);
}
/** A live subscriber further behind than this reads from the database again, at its own pace. */
const MAX_QUEUED = 5_000;

interface Subscriber<Event extends FeedEvent> {
  options: FeedSubscribeOptions<Event>;
  /** The id of the last event delivered (or skipped as already seen). */
  cursor: number;
  /**
   * `catching_up`: reads the database itself until it reaches the feed. `live`: receives what
   * the feed reads, through `queue`.
   */
  mode: "catching_up" | "live";
  queue: Event[];
  delivering: boolean;
  announced: boolean;
  closed: boolean;
}

/** One per key with subscribers: reads each new event once for all of them. */
interface Feed<Event extends FeedEvent> {
  key: string;
  subscribers: Set<Subscriber<Event>>;
  /** The highest event id the feed has read (and handed to live subscribers). */
  readId: number;
  reading: boolean;
  again: boolean;
}

/**
 * Fans persisted events out to live subscribers (WebSocket clients). One LISTEN per
 * process wakes a key's feed, which reads the new events once and hands them to every
 * subscriber that is live; a subscriber that connects with an older cursor (or falls far
 * behind) first reads the backlog itself, then joins the feed. Every event comes from the
 * database, so every replica serves every event, and ids only grow, so nothing is delivered
 * twice. A slow poll covers notifications lost while the listening connection reconnects.
 */
export class EventFeedHub<Event extends FeedEvent> {
  readonly #handle: DbHandle;
  readonly #channel: string;
  readonly #read: ReadFeedEvents<Event>;
  readonly #notice: (payload: string) => FeedNotice<Event>;
  readonly #pollIntervalMs: number;
  readonly #feeds = new Map<string, Feed<Event>>();
  #unlisten: (() => Promise<void>) | null = null;
  #poll: NodeJS.Timeout | null = null;

  /**
   * Whether a hub of this process has a feed for `key` on `channel`: only then can a notice's
   * events spare a read here. Elsewhere (another replica on PostgreSQL) a notice without them
   * makes that replica's feed read, as the slow poll would.
   */
  static followed(channel: string, key: string): boolean {
    return openFeeds.get(channel)?.has(key) ?? false;
  }

  constructor(handle: DbHandle, options: EventFeedHubOptions<Event>) {
    this.#handle = handle;
    this.#channel = options.channel;
    this.#read = options.read;
    this.#notice = options.notice ?? ((key) => ({ key }));
    this.#pollIntervalMs = options.pollIntervalMs ?? 2_000;
  }

  async start(): Promise<void> {
    this.#unlisten = await this.#handle.listen(this.#channel, (payload) => {
      const notice = this.#notice(payload);
      const feed = this.#feeds.get(notice.key);
      if (feed) this.#noticed(feed, notice);
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
      countFeed(this.#channel, feed.key, -1);
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

  subscribe(options: FeedSubscribeOptions<Event>): FeedSubscription {
    let feed = this.#feeds.get(options.key);
    if (!feed) {
      // A new feed starts where the first subscriber starts; it reads forward from there.
      feed = {
        key: options.key,
        subscribers: new Set(),
        readId: options.afterId,
        reading: false,
        again: false,
      };
      this.#feeds.set(options.key, feed);
      countFeed(this.#channel, options.key, 1);
    }
    const subscriber: Subscriber<Event> = {
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
        const current = this.#feeds.get(options.key);
        current?.subscribers.delete(subscriber);
        if (current?.subscribers.size === 0) {
          this.#feeds.delete(options.key);
          countFeed(this.#channel, options.key, -1);
        }
      },
    };
  }

  /**
   * A notice of new events: when it carries them and they follow what the feed has read (the
   * writer's previous id is the feed's), they are handed on as if read; otherwise the feed
   * reads. Decided synchronously, and never while a read is in flight (which reads again): so
   * notices, delivered in commit order, can only advance the feed over events it has seen. A
   * writer that saw an older previous id than the truth (PostgreSQL's statement snapshot
   * predates the lock it waited for) only makes the feed read.
   */
  #noticed(feed: Feed<Event>, notice: FeedNotice<Event>): void {
    const events = notice.events;
    if (events !== undefined && events.length > 0 && !feed.reading) {
      if (events.at(-1)!.id <= feed.readId) return;
      if (notice.previousId === feed.readId) {
        this.#hand(feed, events);
        return;
      }
    }
    void this.#readFeed(feed);
  }

  /** Queues events the feed has read (or been sent) for every live subscriber. */
  #hand(feed: Feed<Event>, events: Event[]): void {
    feed.readId = events.at(-1)!.id;
    for (const subscriber of feed.subscribers) {
      if (subscriber.mode !== "live" || subscriber.closed) continue;
      for (const event of events) if (event.id > subscriber.cursor) subscriber.queue.push(event);
      if (subscriber.queue.length > MAX_QUEUED) {
        // Too far behind to buffer: drop the queue and let it read the database itself.
        subscriber.queue = [];
        subscriber.mode = "catching_up";
        void this.#catchUp(feed, subscriber);
      } else {
        void this.#drain(subscriber);
      }
    }
  }

  /** Reads what is new for the key once and queues it for every live subscriber. */
  async #readFeed(feed: Feed<Event>): Promise<void> {
    if (feed.reading) {
      feed.again = true;
      return;
    }
    feed.reading = true;
    try {
      do {
        feed.again = false;
        for (;;) {
          const events = await this.#read(this.#handle.db, feed.key, feed.readId, PAGE);
          if (events.length === 0) break;
          this.#hand(feed, events);
          if (events.length < PAGE) break;
        }
      } while (feed.again && this.#feeds.get(feed.key) === feed);
    } catch (error) {
      for (const subscriber of feed.subscribers) subscriber.options.onError?.(error);
    } finally {
      feed.reading = false;
    }
  }

  /** Delivers a subscriber's own reads until it reaches the feed, then makes it live. */
  async #catchUp(feed: Feed<Event>, subscriber: Subscriber<Event>): Promise<void> {
    try {
      // After an overflow the queue's last delivery may still be running; let it finish, so
      // the cursor is settled before reading from it.
      while (subscriber.delivering) await new Promise((resolveWait) => setTimeout(resolveWait, 1));
      for (;;) {
        if (subscriber.closed) return;
        const events = await this.#read(this.#handle.db, feed.key, subscriber.cursor, PAGE);
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

  async #drain(subscriber: Subscriber<Event>): Promise<void> {
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
