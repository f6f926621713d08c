import type { BatchRunService } from "@deckhand/batches";
import type { EventFeedHub } from "@deckhand/db";
import {
  admitUpgrade,
  type Listening,
  listen,
  type NodeHandler,
  type OriginPolicy,
  refuseUpgrade,
  tokenMatches,
} from "@deckhand/http-kit";
import type { SessionActivityHub, SessionDomain, SessionStreamHub } from "@deckhand/sessions";
import {
  ServerPath,
  type SessionActivityEvent,
  type SessionEvent,
  type StoredBatchRunEvent,
  WireSubprotocol,
} from "@deckhand/wire";
import type { Logger } from "pino";
import type { ApiTokenStore } from "./api-tokens.ts";
import { batchesErrorToHttp } from "./batches-http-errors.ts";
import type { ServerConfig } from "./config.ts";
import { EventStreamSocket } from "./event-stream-socket.ts";
import { ServerError } from "./server-error.ts";
import { sessionsErrorToHttp } from "./sessions-http-errors.ts";

/** What shutdown gives HTTP requests still in flight once no task runs any more. */
const HTTP_SHUTDOWN_GRACE_MS = 2_000;

/** The event feeds the WebSocket streams serve. */
export interface StreamHubs {
  sessions: SessionStreamHub;
  activity: SessionActivityHub;
  runs: EventFeedHub<StoredBatchRunEvent>;
}

export interface ServerHttpInput {
  config: ServerConfig;
  /** The app: what HTTP requests are answered with. */
  fetch: (request: Request) => Response | Promise<Response>;
  /** Answers some requests on Node's request before the app (the model proxy's streams). */
  ahead?: NodeHandler;
  originPolicy: OriginPolicy;
  hubs: StreamHubs;
  sessions: SessionDomain;
  batches: BatchRunService;
  apiTokens: ApiTokenStore;
  logger: Logger;
}

/**
 * The server's listener: the app over HTTP and the three WebSocket streams (a session's events,
 * a batch run's, the sessions' activity) on its upgrades, each for an authorized client of the
 * server's own origin.
 */
export class ServerHttp {
  readonly server: Listening["server"];
  readonly port: number;
  readonly url: string;
  readonly #streams: readonly { close(): Promise<void> }[];

  private constructor(listening: Listening, streams: readonly { close(): Promise<void> }[]) {
    this.server = listening.server;
    this.port = listening.port;
    this.url = listening.url;
    this.#streams = streams;
  }

  static async listen(input: ServerHttpInput): Promise<ServerHttp> {
    const { config, logger } = input;
    const listening = await listen(
      input.fetch,
      config,
      (error) =>
        new ServerError(
          "listen_failed",
          `cannot listen on ${config.host}:${config.port}: ${error.message}; choose another --listen address`,
          { cause: error },
        ),
      input.ahead,
    );
    const streams = eventStreams(input);
    listening.server.on("upgrade", (request, socket, head) => {
      // The streams carry transcripts and run logs: a page of another origin (or a rebinding
      // one) must not open one, whatever token it may hold.
      const refused = (refusal: { code: string }) =>
        logger.info(
          { path: new URL(request.url ?? "/", "http://x").pathname, code: refusal.code },
          "WebSocket upgrade refused",
        );
      if (!admitUpgrade(input.originPolicy, request, socket, refused)) return;
      if (!streams.some((stream) => stream.handleUpgrade(request, socket, head))) {
        refuseUpgrade(
          socket,
          404,
          "not_found",
          `no WebSocket endpoint at ${new URL(request.url ?? "/", "http://x").pathname}`,
        );
      }
    });
    return new ServerHttp(listening, streams);
  }

  /**
   * Browsers hear of the shutdown at once: their streams close (they reconnect to the next
   * server from their last event id).
   */
  async closeStreams(): Promise<void> {
    await Promise.all(this.#streams.map((stream) => stream.close()));
  }

  /** No new connections; requests in flight get a short grace, then are cut. */
  async stop(): Promise<void> {
    const server = this.server;
    const stopped = new Promise<void>((resolveClose) => server.close(() => resolveClose()));
    if ("closeIdleConnections" in server) server.closeIdleConnections();
    const grace = new Promise<void>((resolveGrace) =>
      setTimeout(resolveGrace, HTTP_SHUTDOWN_GRACE_MS).unref(),
    );
    await Promise.race([stopped, grace]);
    if ("closeAllConnections" in server) server.closeAllConnections();
    await stopped;
  }
}

/** The WebSocket streams, in the order an upgrade tries them. */
function eventStreams(input: ServerHttpInput) {
  const { config, hubs, logger, apiTokens } = input;
  const authorize = async (token: string | null) => {
    if (!config.requireAuth) return true;
    if (token === null) return false;
    if (config.adminToken !== null && tokenMatches(config.adminToken, token)) return true;
    return apiTokens.verify(token);
  };
  return [
    new EventStreamSocket<SessionEvent>({
      path: ServerPath.sessionStream,
      subprotocol: WireSubprotocol.sessionStream,
      hub: hubs.sessions,
      logger: logger.child({ component: "session-stream" }),
      authorize,
      check: async (sessionId) => {
        await input.sessions.sessions.get(sessionId).catch((error: unknown) => {
          throw sessionsErrorToHttp(error);
        });
      },
    }),
    new EventStreamSocket<StoredBatchRunEvent>({
      path: ServerPath.batchRunStream,
      subprotocol: WireSubprotocol.batchRunStream,
      hub: hubs.runs,
      logger: logger.child({ component: "batch-run-stream" }),
      authorize,
      check: async (runId) => {
        await input.batches.getRun(runId).catch((error: unknown) => {
          throw batchesErrorToHttp(error);
        });
      },
    }),
    new EventStreamSocket<SessionActivityEvent>({
      path: ServerPath.sessionActivity,
      subprotocol: WireSubprotocol.sessionActivity,
      hub: hubs.activity,
      logger: logger.child({ component: "session-activity" }),
      authorize,
      check: async () => {},
    }),
  ];
}
