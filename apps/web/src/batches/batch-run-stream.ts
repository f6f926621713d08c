import {
  type BatchRunStreamFrame,
  ServerPath,
  type StoredBatchRunEvent,
  serverPath,
  WireSubprotocol,
} from "@deckhand/wire";
import { storedToken } from "../api.ts";
import type { StreamState } from "../session/session-stream.ts";

export interface BatchRunStreamHandlers {
  /** Each stored event exactly once, in id order, across reconnects. */
  onEvent(event: StoredBatchRunEvent): void;
  onState(state: StreamState): void;
  /** The server's error frame (no such run, say). */
  onError?(message: string): void;
}

const RECONNECT_DELAYS_MS = [250, 500, 1_000, 2_000, 5_000];

/**
 * A batch run's event stream (`deckhand.batch-run-stream.v1`), kept open across dropped
 * connections: each reconnect asks for the events `?after=` the last id delivered, and any event
 * at or below that id is dropped, so nothing is missed or shown twice. The token travels as the
 * `bearer.<token>` subprotocol, as on session streams.
 */
export class BatchRunStream {
  readonly #runId: string;
  readonly #handlers: BatchRunStreamHandlers;
  #socket: WebSocket | null = null;
  #lastEventId = 0;
  #attempt = 0;
  #closed = false;
  #timer: ReturnType<typeof setTimeout> | null = null;

  constructor(runId: string, handlers: BatchRunStreamHandlers) {
    this.#runId = runId;
    this.#handlers = handlers;
    this.#connect();
  }

  get lastEventId(): number {
    return this.#lastEventId;
  }

  #connect(): void {
    this.#handlers.onState(this.#attempt === 0 ? "connecting" : "reconnecting");
    const url = new URL(
      serverPath(ServerPath.batchRunStream, { batch_run_id: this.#runId }),
      window.location.href,
    );
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("after", String(this.#lastEventId));
    const token = storedToken();
    const protocols: string[] = [WireSubprotocol.batchRunStream];
    if (token) protocols.push(`${WireSubprotocol.bearerPrefix}${token}`);
    const socket = new WebSocket(url, protocols);
    this.#socket = socket;
    socket.onmessage = (message) => {
      const frame = JSON.parse(String(message.data)) as BatchRunStreamFrame;
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
