import type { IncomingHttpHeaders } from "node:http";
import { type ErrorCode, WireHeader, WireSubprotocol } from "@deckhand/wire";
import { bearerTokenOf } from "./bearer-auth.ts";
import type { HttpStatusOf } from "./error-status.ts";

const REASONS: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  413: "Content Too Large",
  414: "URI Too Long",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/**
 * The token of a WebSocket upgrade: from `Authorization: Bearer`, or else from a
 * `bearer.<token>` subprotocol, because a browser cannot set headers on a WebSocket.
 */
export function upgradeBearerToken(request: { headers: IncomingHttpHeaders }): string | null {
  const header = request.headers[WireHeader.authorization.toLowerCase()];
  const fromHeader = bearerTokenOf(typeof header === "string" ? header : undefined);
  if (fromHeader !== null) return fromHeader;
  const bearer = String(request.headers["sec-websocket-protocol"] ?? "")
    .split(",")
    .map((value) => value.trim())
    .find((value) => value.startsWith(WireSubprotocol.bearerPrefix));
  return bearer ? bearer.slice(WireSubprotocol.bearerPrefix.length) : null;
}

/**
 * Refuses a WebSocket upgrade before it happens with a plain HTTP response in the API's error
 * shape, so a client learns why without a socket; a 401 carries `WWW-Authenticate: Bearer` as
 * the HTTP API's does. The connection is closed after the response.
 */
export function refuseUpgrade<Code extends ErrorCode>(
  socket: { end(response: string): unknown },
  status: HttpStatusOf<Code>,
  code: Code,
  message: string,
): void {
  const body = JSON.stringify({ error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status] ?? "Error"}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n${status === 401 ? "WWW-Authenticate: Bearer\r\n" : ""}\r\n${body}`,
  );
}
