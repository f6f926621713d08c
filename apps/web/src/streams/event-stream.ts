import { WireSubprotocol } from "@deckhand/wire";
import { connectionState, reportTrouble, subscribeConnection } from "../connection.ts";
import { storedToken } from "../token.ts";

export type StreamState = "connecting" | "live" | "reconnecting" | "closed";

/** What every Deckhand event stream sends: an event, `ready` after the backlog, or an error. */
type EventStreamFrame<Event> =
  | { type: "event"; event: Event }
  | { type: "ready"; last_event_id: number }
  | { type: "error"; error: { code: string; message: string } };

export interface EventStreamHandlers<Event> {
  /** Each event exactly once, in id order, across reconnects. */
  onEvent(event: Event): void;
  onState(state: StreamState): void;
  /** The server's error frame (no such run, say). */
  onError?(message: string): void;
}

export interface EventStreamOptions {
  /** The stream's path, e.g. `server.streamSession.url({params: {session_id}})`. */
  path: string;
  /** The stream's own subprotocol, e.g. `WireSubprotocol.sessionStream`. */
  subprotocol: string;
}

const RECONNECT_DELAYS_MS = [250, 500, 1_000, 2_000, 5_000];

/**
 * An event stream (a session's, a batch run's) that survives dropped connections: it reconnects
 * with `?after=` the last event id it delivered, so nothing is missed, and drops any event at or
 * below that id, so nothing is delivered twice. A browser cannot set headers on a WebSocket, so
 * the token travels as the `bearer.<token>` subprotocol beside the stream's own (the server
 * answers with the latter).
 */
export class EventStream<Event extends { id: number }> {
  readonly #options: EventStreamOptions;
  readonly #handlers: EventStreamHandlers<Event>;
  #socket: WebSocket | null = null;
  #lastEventId = 0;
  #attempt = 0;
  #closed = false;
  #timer: ReturnType<typeof setTimeout> | null = null;
  readonly #unsubscribe: () => void;

  constructor(options: EventStreamOptions, handlers: EventStreamHandlers<Event>) {
    this.#options = options;
    this.#handlers = handlers;
    // Once the server is back, a stream waiting to reconnect does so at once, not after its
    // back-off.
    let reachable = connectionState().reachable;
    this.#unsubscribe = subscribeConnection(() => {
      const now = connectionState().reachable;
      if (now && !reachable && this.#timer !== null) {
        clearTimeout(this.#timer);
        this.#timer = null;
        this.#connect();
      }
      reachable = now;
    });
    this.#connect();
  }

  get lastEventId(): number {
    return this.#lastEventId;
  }

  #connect(): void {
    this.#handlers.onState(this.#attempt === 0 ? "connecting" : "reconnecting");
    const url = new URL(this.#options.path, window.location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("after", String(this.#lastEventId));
    const token = storedToken();
    const protocols: string[] = [this.#options.subprotocol];
    if (token) protocols.push(`${WireSubprotocol.bearerPrefix}${token}`);
    const socket = new WebSocket(url, protocols);
    this.#socket = socket;
    socket.onmessage = (message) => {
      const frame = JSON.parse(String(message.data)) as EventStreamFrame<Event>;
      if (frame.type === "ready") {
        this.#attempt = 0;
        this.#handlers.onState("live");
      } else if (frame.type === "event") {
        if (frame.event.id <= this.#lastEventId) return;
        this.#lastEventId = frame.event.id;
        this.#handlers.onEvent(frame.event);
      } else {
        this.#handlers.onError?.(frame.error.message);
      }
    };
    socket.onclose = () => {
      if (this.#socket !== socket) return;
      this.#socket = null;
      if (this.#closed) return;
      const delay = RECONNECT_DELAYS_MS[Math.min(this.#attempt, RECONNECT_DELAYS_MS.length - 1)]!;
      this.#attempt += 1;
      this.#handlers.onState("reconnecting");
      // A dropped stream may be a server going away: the banner finds out.
      reportTrouble();
      this.#timer = setTimeout(() => {
        this.#timer = null;
        this.#connect();
      }, delay);
    };
  }

  close(): void {
    this.#closed = true;
    this.#unsubscribe();
    if (this.#timer) clearTimeout(this.#timer);
    this.#socket?.close(1000, "page left");
    this.#socket = null;
    this.#handlers.onState("closed");
  }
}
