import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { FeedEvent, FeedSubscribeOptions, FeedSubscription } from "@deckhand/db";
import {
  HttpError,
  keepWebSocketAlive,
  refuseUpgrade,
  upgradeBearerToken,
} from "@deckhand/http-kit";
import type { Logger } from "pino";
import { type WebSocket, WebSocketServer } from "ws";
import { z } from "zod";

/** Above this many buffered bytes the stream waits for the client before reading more events. */
const HIGH_WATER_BYTES = 1024 * 1024;

export interface EventStreamSocketOptions<Event extends FeedEvent> {
  /**
   * The route, as a ServerPath template with one `:param` naming whose events to stream, or
   * none for a stream of one feed (its key is then "").
   */
  path: string;
  /** The WebSocket subprotocol clients offer, e.g. `deckhand.session-stream.v1`. */
  subprotocol: string;
  hub: { subscribe(options: FeedSubscribeOptions<Event>): FeedSubscription };
  /** True when the presented token may read the API; null token means none was presented. */
  authorize(token: string | null): Promise<boolean>;
  /** Throws an HttpError (404) when the session or run does not exist. */
  check(key: string): Promise<void>;
  logger: Logger;
  pingIntervalMs?: number;
}

/** Every stream's query: `after` is the last event id the client has seen. */
const StreamQuerySchema = z.strictObject({
  after: z.coerce.number().int().nonnegative().optional(),
});

/** Frames every event stream sends: an event, `ready` after the backlog, or an error. */
type StreamFrame<Event> =
  | { type: "event"; event: Event }
  | { type: "ready"; last_event_id: number }
  | { type: "error"; error: { code: string; message: string } };

/**
 * Serves an event log (a session's, a batch run's) as a WebSocket: the events after `?after=`
 * first, then a `ready` frame, then live events. Delivery waits while the client's buffer is
 * full, so a slow client slows only itself and still receives every event in order.
 */
export class EventStreamSocket<Event extends FeedEvent> {
  readonly #options: EventStreamSocketOptions<Event>;
  readonly #pattern: RegExp;
  readonly #server: WebSocketServer;
  readonly #clients = new Set<WebSocket>();
  /** Set by close: later upgrades are refused with a 503 rather than served. */
  #closed = false;

  constructor(options: EventStreamSocketOptions<Event>) {
    this.#options = options;
    this.#pattern = new RegExp(`^${options.path.replace(/:[a-z_]+/, "([^/]+)")}$`);
    const subprotocol = options.subprotocol;
    this.#server = new WebSocketServer({
      noServer: true,
      // A browser offers the stream's subprotocol and `bearer.<token>`; the server must answer
      // with one it was offered, and never with the one that carries the token.
      handleProtocols: (protocols) => (protocols.has(subprotocol) ? subprotocol : false),
    });
  }

  get clientCount(): number {
    return this.#clients.size;
  }

  /** Handles an HTTP upgrade; false when the path is not this stream's (someone else's). */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(request.url ?? "/", "http://localhost");
    const match = this.#pattern.exec(url.pathname);
    if (!match) return false;
    const key = match[1] === undefined ? "" : decodeURIComponent(match[1]).toLowerCase();
    socket.on("error", () => socket.destroy());
    if (this.#closed) {
      refuseUpgrade(
        socket,
        503,
        "internal",
        "the server is shutting down; connect again once it is back",
      );
      return true;
    }
    void (async () => {
      if (!(await this.#options.authorize(upgradeBearerToken(request)))) {
        refuseUpgrade(socket, 401, "unauthorized", "missing or wrong bearer token");
        return;
      }
      const query = StreamQuerySchema.safeParse(Object.fromEntries(url.searchParams));
      if (!query.success) {
        refuseUpgrade(
          socket,
          400,
          "invalid_request",
          "after must be a non-negative integer event id",
        );
        return;
      }
      try {
        await this.#options.check(key);
      } catch (error) {
        if (error instanceof HttpError)
          refuseUpgrade(socket, error.status, error.code, error.message);
        else
          refuseUpgrade(socket, 500, "internal", "internal error; the server log has the details");
        return;
      }
      this.#server.handleUpgrade(request, socket, head, (client) =>
        this.#serve(client, key, query.data.after ?? 0),
      );
    })().catch((error: unknown) => {
      this.#options.logger.error({ err: error }, "stream upgrade failed");
      socket.destroy();
    });
    return true;
  }

  #serve(client: WebSocket, key: string, afterId: number): void {
    this.#clients.add(client);
    const send = (frame: StreamFrame<Event>) =>
      new Promise<void>((resolveSend, rejectSend) => {
        client.send(JSON.stringify(frame), (error) => (error ? rejectSend(error) : resolveSend()));
      });
    const drained = async () => {
      while (client.readyState === client.OPEN && client.bufferedAmount > HIGH_WATER_BYTES) {
        await new Promise((resolveWait) => setTimeout(resolveWait, 5));
      }
    };
    const subscription = this.#options.hub.subscribe({
      key,
      afterId,
      deliver: async (event) => {
        if (client.readyState !== client.OPEN) throw new Error("client went away");
        // Not awaiting each send's callback keeps throughput; the buffer check bounds memory.
        client.send(JSON.stringify({ type: "event", event } satisfies StreamFrame<Event>));
        await drained();
      },
      caughtUp: (lastEventId) => {
        void send({ type: "ready", last_event_id: lastEventId }).catch(() => {});
      },
      onError: (error) => {
        this.#options.logger.warn({ err: error, key }, "stream delivery failed");
        void send({
          type: "error",
          error: {
            code: "internal",
            message: "the stream failed; reconnect with the last event id",
          },
        })
          .catch(() => {})
          .finally(() => client.close(1011, "stream failed"));
      },
    });
    keepWebSocketAlive(client, this.#options.pingIntervalMs ?? 30_000);
    client.on("close", () => {
      subscription.close();
      this.#clients.delete(client);
    });
    client.on("error", () => client.terminate());
  }

  /** Closes every client (going away) and the WebSocket server. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const client of this.#clients) client.close(1001, "server shutting down");
    await new Promise((resolveClose) => setTimeout(resolveClose, 50));
    for (const client of this.#clients) client.terminate();
    await new Promise<void>((resolveClose) => this.#server.close(() => resolveClose()));
  }
}
