import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { type ServerType, serve } from "@hono/node-server";
import { refuseUpgrade } from "./upgrade-refusal.ts";

export interface Listening {
  server: ServerType;
  /** The port actually bound (useful with port 0). */
  port: number;
  /** `http://host:port`, IPv6 hosts in brackets. */
  url: string;
}

/**
 * Node's limit on a request's line and headers together (its `maxHeaderSize` default, 16 KiB);
 * a longer request is answered 414 or 431 by `answerClientError`.
 */
export const MAX_HEADER_BYTES = 16 * 1024;

/** Node's parser error for a request line and headers over `maxHeaderSize`. */
const HEADER_OVERFLOW = "HPE_HEADER_OVERFLOW";

/**
 * Answers a request Node's HTTP parser refused (Node's own answer is a bare 400 or 431, or a reset
 * when the client is still sending) in the API's error shape: 414 `uri_too_long` when the request
 * line alone is over the limit, 431 `headers_too_large` when the headers are, 400 otherwise. The
 * socket is ended, not destroyed, and drained for a moment, so the client reads the answer
 * instead of a connection reset.
 */
export function answerClientError(
  error: Error & { code?: string; rawPacket?: unknown },
  socket: Socket,
): void {
  // A response still being written on this connection (pipelining) must not be interleaved with
  // this one; Node marks it as the socket's `_httpMessage`, and its own handler checks the same.
  const responding = (socket as Socket & { _httpMessage?: unknown })._httpMessage;
  if (!socket.writable || socket.destroyed || responding) {
    socket.destroy();
    return;
  }
  if (error.code === HEADER_OVERFLOW) {
    const packet = Buffer.isBuffer(error.rawPacket) ? error.rawPacket.toString("latin1") : "";
    const lineEnd = packet.indexOf("\r\n");
    const requestLineTooLong = lineEnd === -1 || lineEnd > MAX_HEADER_BYTES / 2;
    if (requestLineTooLong) {
      refuseUpgrade(
        socket,
        414,
        "uri_too_long",
        `the request line is longer than this server accepts (${MAX_HEADER_BYTES / 1024} KiB with the headers); send long values in a request body`,
      );
    } else {
      refuseUpgrade(
        socket,
        431,
        "headers_too_large",
        `the request headers are larger than this server accepts (${MAX_HEADER_BYTES / 1024} KiB with the request line); send fewer or shorter headers`,
      );
    }
  } else {
    refuseUpgrade(
      socket,
      400,
      "invalid_request",
      `malformed HTTP request (${error.code ?? error.message})`,
    );
  }
  // Reading what the client still sends keeps the kernel from answering it with a reset, which
  // would discard the response before the client reads it.
  socket.resume();
  setTimeout(() => socket.destroy(), 1_000).unref();
}

/**
 * Serves a fetch handler on host:port and resolves once it listens. A failure to listen (port
 * taken, address unavailable) rejects with whatever `describeFailure` makes of it, so each app
 * can raise its own error type. Requests Node cannot parse are answered by `answerClientError`.
 */
/**
 * A handler that answers some requests on Node's request and response itself, ahead of the app
 * (the model proxy's streams): true when it took the request, false to hand it to the app.
 */
export type NodeHandler = (request: IncomingMessage, response: ServerResponse) => boolean;

export function listen(
  fetch: (request: Request) => Response | Promise<Response>,
  address: { host: string; port: number },
  describeFailure: (error: Error) => Error,
  ahead?: NodeHandler,
): Promise<Listening> {
  return new Promise((resolveListening, reject) => {
    const server = serve(
      {
        fetch,
        hostname: address.host,
        port: address.port,
        serverOptions: { maxHeaderSize: MAX_HEADER_BYTES },
      },
      () => {
        const port = (server.address() as AddressInfo).port;
        const host = address.host.includes(":") ? `[${address.host}]` : address.host;
        resolveListening({ server, port, url: `http://${host}:${port}` });
      },
    );
    if (ahead) {
      // The handler goes before the app's own listener (what `serve` installed).
      const app = server.listeners("request")[0] as RequestListener;
      server.removeAllListeners("request");
      server.on("request", (request: IncomingMessage, response: ServerResponse) => {
        if (!ahead(request, response)) app(request, response);
      });
    }
    server.on("clientError", (error: Error, socket: Socket) => answerClientError(error, socket));
    server.once("error", (error) => reject(describeFailure(error)));
  });
}
