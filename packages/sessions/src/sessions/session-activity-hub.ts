import type { DbHandle, FeedSubscribeOptions, FeedSubscription } from "@deckhand/db";
import type { Session, SessionActivityEvent } from "@deckhand/wire";
import { SESSION_EVENTS_CHANNEL, sessionEventsNotice } from "../store/session-events.ts";

export interface SessionActivityHubOptions {
  /** Sessions by id, whole (as the API gives them). */
  sessionsById(sessionIds: readonly string[]): Promise<Session[]>;
  /**
   * How long changes are gathered before the changed sessions are read again: an agent
   * streaming deltas notifies per stored batch, and the list needs a frame per change it can
   * show, not per delta. Default 200 ms.
   */
  coalesceMs?: number;
}

interface Subscriber {
  options: FeedSubscribeOptions<SessionActivityEvent>;
  /** The id of the last frame handed to it. */
  cursor: number;
  /** Delivery in order, one frame at a time. */
  delivering: Promise<void>;
  closed: boolean;
}

/**
 * Pushes sessions whose activity, latest event id or archived state changed to the session list's
 * WebSocket clients. It listens on the channel session events already notify (one per stored
 * batch, payload the session id; archiving notifies it too), reads each changed session again
 * once for all subscribers and sends it when it differs from what was last sent. It keeps no
 * log: a subscriber gets changes from when it subscribes, so a client lists sessions once it is
 * `ready`. Frame ids count per subscriber from its `afterId`, which keeps a resuming client's
 * ids growing whichever replica it reaches.
 */
export class SessionActivityHub {
  readonly #handle: DbHandle;
  readonly #options: SessionActivityHubOptions;
  readonly #subscribers = new Set<Subscriber>();
  /** What was last sent of each session, to send only changes. */
  readonly #sent = new Map<string, string>();
  readonly #dirty = new Set<string>();
  #timer: NodeJS.Timeout | null = null;
  #unlisten: (() => Promise<void>) | null = null;

  constructor(handle: DbHandle, options: SessionActivityHubOptions) {
    this.#handle = handle;
    this.#options = options;
  }

  async start(): Promise<void> {
    this.#unlisten = await this.#handle.listen(SESSION_EVENTS_CHANNEL, (payload) => {
      if (this.#subscribers.size === 0) return;
      this.#dirty.add(sessionEventsNotice(payload).key);
      this.#timer ??= setTimeout(() => void this.#flush(), this.#options.coalesceMs ?? 200);
    });
  }

  async stop(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    for (const subscriber of this.#subscribers) subscriber.closed = true;
    this.#subscribers.clear();
    await this.#unlisten?.();
    this.#unlisten = null;
  }

  get subscriberCount(): number {
    return this.#subscribers.size;
  }

  /** The `key` is unused: there is one feed, of every session. */
  subscribe(options: FeedSubscribeOptions<SessionActivityEvent>): FeedSubscription {
    const subscriber: Subscriber = {
      options,
      cursor: options.afterId,
      delivering: Promise.resolve(),
      closed: false,
    };
    this.#subscribers.add(subscriber);
    queueMicrotask(() => {
      if (!subscriber.closed) options.caughtUp?.(subscriber.cursor);
    });
    return {
      close: () => {
        subscriber.closed = true;
        this.#subscribers.delete(subscriber);
        if (this.#subscribers.size === 0) this.#sent.clear();
      },
    };
  }

  async #flush(): Promise<void> {
    this.#timer = null;
    const ids = [...this.#dirty];
    this.#dirty.clear();
    if (ids.length === 0 || this.#subscribers.size === 0) return;
    let sessions: Session[];
    try {
      sessions = await this.#options.sessionsById(ids);
    } catch (error) {
      for (const subscriber of this.#subscribers) subscriber.options.onError?.(error);
      return;
    }
    for (const session of sessions) {
      const json = JSON.stringify(session);
      if (this.#sent.get(session.id) === json) continue;
      this.#sent.set(session.id, json);
      for (const subscriber of this.#subscribers) this.#deliver(subscriber, session);
    }
  }

  #deliver(subscriber: Subscriber, session: Session): void {
    subscriber.delivering = subscriber.delivering.then(async () => {
      if (subscriber.closed) return;
      try {
        subscriber.cursor += 1;
        await subscriber.options.deliver({ id: subscriber.cursor, session });
      } catch (error) {
        if (!subscriber.closed) subscriber.options.onError?.(error);
      }
    });
  }
}
