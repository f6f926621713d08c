// Requests as a browser (or a rebinding page) sends them, with the headers fetch will not let a
// test set: Host, and Origin on a WebSocket upgrade. For tests of the Host and Origin guard.
import { request as httpRequest } from "node:http";
import WebSocket from "ws";

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * Sends one HTTP request to `url` with exactly `headers` (Host included, which fetch always
 * derives from the URL) and reads the whole answer.
 */
export function rawRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawResponse> {
  const target = new URL(url);
  return new Promise((resolveResponse, rejectResponse) => {
    const request = httpRequest(
      {
        host: target.hostname.replace(/^\[|\]$/g, ""),
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: options.method ?? "GET",
        headers: {
          ...(options.body !== undefined
            ? { "content-length": Buffer.byteLength(options.body) }
            : {}),
          ...options.headers,
        },
      },
      (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          body += chunk;
        });
        response.on("end", () =>
          resolveResponse({ status: response.statusCode ?? 0, headers: response.headers, body }),
        );
        response.on("error", rejectResponse);
      },
    );
    request.on("error", rejectResponse);
    request.end(options.body);
  });
}

/** How a WebSocket upgrade ended: opened (with the first frame, if one came), or refused. */
export type UpgradeOutcome =
  | { opened: true; firstFrame: string | null }
  | { opened: false; status: number; body: string };

/**
 * Tries a WebSocket upgrade with `headers` (Origin, Host) and `protocols`, and closes the socket
 * once it knows the outcome: a refusal's status and body, or that it opened and what it sent
 * first (waiting up to `frameTimeoutMs` for a frame).
 */
export function tryWebSocket(
  url: string,
  options: { headers?: Record<string, string>; protocols?: string[]; frameTimeoutMs?: number } = {},
): Promise<UpgradeOutcome> {
  const socket = new WebSocket(url.replace(/^http/, "ws"), options.protocols ?? [], {
    headers: options.headers ?? {},
  });
  return new Promise((resolveOutcome, rejectOutcome) => {
    socket.once("unexpected-response", (_request, response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        body += chunk;
      });
      response.on("end", () => {
        resolveOutcome({ opened: false, status: response.statusCode ?? 0, body });
        socket.terminate();
      });
    });
    socket.once("open", () => {
      const timer = setTimeout(() => {
        resolveOutcome({ opened: true, firstFrame: null });
        socket.close();
      }, options.frameTimeoutMs ?? 5_000);
      socket.once("message", (data) => {
        clearTimeout(timer);
        resolveOutcome({ opened: true, firstFrame: data.toString() });
        socket.close();
      });
    });
    socket.once("error", (error) => rejectOutcome(error));
  });
}
