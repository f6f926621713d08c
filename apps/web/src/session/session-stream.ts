import {
  ServerPath,
  type SessionEvent,
  type SessionStreamFrame,
  serverPath,
  WireSubprotocol,
} from "@deckhand/wire";
import { storedToken } from "../api.ts";

export type StreamState = "connecting" | "live" | "reconnecting" | "closed";

export interface SessionStreamHandlers {
  /** Each event exactly once, in id order, across reconnects. */
  onEvent(event: SessionEvent): void;
  onState(state: StreamState): void;
}

const RECONNECT_DELAYS_MS = [250, 500, 1_000, 2_000, 5_000];

/**
 * A session's event stream that survives dropped connections: it reconnects with `?after=` the
 * last event id it delivered, so nothing is missed, and drops any event at or below that id, so
 * nothing is delivered twice. A browser cannot set headers on a WebSocket, so the token travels
 * as the `bearer.<token>` subprotocol beside the stream's own (the server answers with the latter).
 */
export class SessionStream {
  readonly #sessionId: string;
  readonly #handlers: SessionStreamHandlers;
  #socket: WebSocket | null = null;
  #lastEventId = 0;
  #attempt = 0;
  #closed = false;
  #timer: ReturnType<typeof setTimeout> | null = null;

  constructor(sessionId: string, handlers: SessionStreamHandlers) {
    this.#sessionId = sessionId;
    this.#handlers = handlers;
    this.#connect();
  }

  get lastEventId(): number {
    return this.#lastEventId;
  }

  #connect(): void {
    this.#handlers.onState(this.#attempt === 0 ? "connecting" : "reconnecting");
    const url = new URL(
      serverPath(ServerPath.sessionStream, { session_id: this.#sessionId }),
      window.location.href,
    );
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("after", String(this.#lastEventId));
    const token = storedToken();
    const protocols: string[] = [WireSubprotocol.sessionStream];
    if (token) protocols.push(`${WireSubprotocol.bearerPrefix}${token}`);
    const socket = new WebSocket(url, protocols);
    this.#socket = socket;
    socket.onmessage = (message) => {
      const frame = JSON.parse(String(message.data)) as SessionStreamFrame;
      if (frame.type === "ready") {
        this.#attempt = 0;
        this.#handlers.onState("live");
      } else if (frame.type === "event") {
        if (frame.event.id <= this.#lastEventId) return;
        this.#lastEventId = frame.event.id;
        this.#handlers.onEvent(frame.event);
      }
    };
    socket.onclose = () => {
      if (this.#socket !== socket) return;
      this.#socket = null;
      if (this.#closed) return;
      const delay = RECONNECT_DELAYS_MS[Math.min(this.#attempt, RECONNECT_DELAYS_MS.length - 1)]!;
      this.#attempt += 1;
      this.#handlers.onState("reconnecting");
      this.#timer = setTimeout(() => this.#connect(), delay);
    };
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#socket?.close(1000, "page left");
    this.#socket = null;
    this.#handlers.onState("closed");
  }
}
