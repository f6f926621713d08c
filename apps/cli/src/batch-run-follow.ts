// Follows a batch run's event stream to its end, for a server named by --server and for the one
// the CLI starts in its own process alike. Requests go through the server client; the stream is
// a WebSocket this module opens and opens again after a break. The frames' schema is loaded when
// a run is followed, not with this module: a `--server` command sends its run's request first
// (the server client loads the schemas while it is out).
import { ServerApiError, type ServerClient } from "@deckhand/server-client";
import type {
  BatchRunStreamFrame,
  BatchRunStreamFrameSchema,
  StoredBatchRunEvent,
} from "@deckhand/wire";
import { WireSubprotocol } from "@deckhand/wire/no-schemas";

/** The run's stream broke and did not come back within the reconnection window. */
export class RunStreamLostError extends Error {
  override readonly name = "RunStreamLostError";
  readonly code = "stream_lost";
}

export interface FollowOptions {
  /** The last event id already seen; the stream starts after it. */
  after?: number;
  onEvent(event: StoredBatchRunEvent): void;
  /** Stops following (the promise then resolves without a `run_finished`). */
  signal?: AbortSignal;
  /** How long to keep reconnecting after the stream broke; 30 s by default. */
  reconnectForMs?: number;
}

/** How a stream connection ended. */
type StreamEnd = { finished: true } | { finished: false; reason: string };

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolveDelay) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolveDelay();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** The server a run is followed on: its client and token, and Node's WebSocket unless a test says. */
export interface RunStreamServer {
  client: ServerClient;
  token: string | null;
  WebSocket?: typeof WebSocket;
}

/** Follows batch runs on one server. */
export class BatchRunFollower {
  readonly #client: ServerClient;
  readonly #token: string | null;
  readonly #WebSocket: typeof WebSocket | undefined;

  constructor(server: RunStreamServer) {
    this.#client = server.client;
    this.#token = server.token;
    // Node's WebSocket is read when a stream opens, not here: reading the global loads undici
    // (tens of milliseconds), which must not hold back the run's request.
    this.#WebSocket = server.WebSocket;
  }

  /**
   * Delivers the run's events in order, each once, until its `run_finished` event. A stream
   * that breaks (a server restart, a network hiccup) is opened again after the last event seen,
   * for `reconnectForMs` after the last event arrived.
   */
  async follow(runId: string, options: FollowOptions): Promise<void> {
    let last = options.after ?? 0;
    let lastProgress = Date.now();
    let attempt = 0;
    const reconnectForMs = options.reconnectForMs ?? 30_000;
    const { BatchRunStreamFrameSchema: frameSchema } = await import("@deckhand/wire");
    for (;;) {
      if (options.signal?.aborted) return;
      const end = await this.#stream(runId, last, frameSchema, options.signal, (event) => {
        // The server never repeats an event after the cursor; this keeps that true across
        // reconnections whatever happens.
        if (event.id <= last) return false;
        last = event.id;
        lastProgress = Date.now();
        attempt = 0;
        options.onEvent(event);
        return event.event.type === "run_finished";
      });
      if (end.finished || options.signal?.aborted) return;
      if (Date.now() - lastProgress > reconnectForMs) {
        throw new RunStreamLostError(`lost the stream of batch run ${runId} (${end.reason})`);
      }
      // A 404 or 401 is final: the GET says so with the server's own message. A server that is
      // away (restarting) is tried again until the window closes.
      await this.#client
        .getBatchRun({ params: { batch_run_id: runId } })
        .catch((error: unknown) => {
          if (!(error instanceof ServerApiError && (error.status === 0 || error.status >= 500))) {
            throw error;
          }
        });
      attempt += 1;
      await delay(Math.min(100 * 2 ** attempt, 2_000), options.signal);
    }
  }

  /** One connection of the run stream; `onEvent` returns true at the last event. */
  #stream(
    runId: string,
    after: number,
    frameSchema: typeof BatchRunStreamFrameSchema,
    signal: AbortSignal | undefined,
    onEvent: (event: StoredBatchRunEvent) => boolean,
  ): Promise<StreamEnd> {
    return new Promise((resolveEnd, rejectEnd) => {
      // A WebSocket cannot carry headers from every client; the token travels as a second
      // subprotocol, which the server never answers with.
      const protocols: string[] = [WireSubprotocol.batchRunStream];
      if (this.#token) protocols.push(`${WireSubprotocol.bearerPrefix}${this.#token}`);
      const url = this.#client.streamBatchRun.url({
        params: { batch_run_id: runId },
        query: after > 0 ? { after } : {},
      });
      const WebSocketClass = this.#WebSocket ?? WebSocket;
      const socket = new WebSocketClass(url, protocols);
      const { OPEN, CONNECTING } = WebSocketClass;
      let settled = false;
      const settle = (end: StreamEnd | { error: unknown }) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener("abort", abort);
        if (socket.readyState === OPEN || socket.readyState === CONNECTING) {
          socket.close();
        }
        if ("error" in end) rejectEnd(end.error);
        else resolveEnd(end);
      };
      const abort = () => settle({ finished: false, reason: "stopped" });
      signal?.addEventListener("abort", abort, { once: true });
      socket.addEventListener("message", (message) => {
        if (settled) return;
        let frame: BatchRunStreamFrame;
        try {
          frame = frameSchema.parse(JSON.parse(String(message.data)));
        } catch {
          settle({ finished: false, reason: "the server sent a frame this client does not read" });
          return;
        }
        if (frame.type === "error") {
          settle({ finished: false, reason: frame.error.message });
          return;
        }
        if (frame.type !== "event") return;
        try {
          if (onEvent(frame.event)) settle({ finished: true });
        } catch (error) {
          settle({ error });
        }
      });
      socket.addEventListener("close", (event) =>
        settle({ finished: false, reason: `closed with code ${event.code}` }),
      );
      socket.addEventListener("error", () =>
        settle({ finished: false, reason: "the connection failed" }),
      );
    });
  }
}
