// The server client's transport over `node:http` (and `node:https`), for short-lived Node
// processes such as the CLI. Node's fetch is undici's, loaded at its first use (about 30 ms of
// CPU before the first request of a process leaves) and it says nothing when a request has been
// written; this transport loads nothing that is not already in Node, and tells the client when
// the request is on its socket so the client's own loading (the route table's schemas) waits
// for that instead of holding the request back.
//
// `node:http` is taken with `process.getBuiltinModule`, not imported: importing it as an ES
// module makes Node fill in every export of its facade, `WebSocket` among them, which loads
// undici (about 30 ms of CPU) and would defeat the point.
import type { ClientRequest, request as httpRequest, IncomingMessage } from "node:http";
import type { ServerTransport, TransportAnswer } from "./server-client.ts";

type RequestFunction = typeof httpRequest;

/** `node:https` only for an https URL: loading TLS is for servers that need it. */
function requestFunctionFor(url: URL): RequestFunction {
  if (url.protocol === "http:") return process.getBuiltinModule("node:http").request;
  if (url.protocol === "https:") return process.getBuiltinModule("node:https").request;
  throw new TypeError(`cannot send a request to ${url.protocol} URLs (http: or https: only)`);
}

/** The network error as a failed fetch reports it: a TypeError whose cause is the error. */
function failed(error: unknown): Error {
  return new TypeError("fetch failed", { cause: error });
}

/**
 * Sends each request on a connection of its own (nothing is kept alive: a kept socket would
 * hold a finished command's process open).
 */
export const nodeHttpTransport: ServerTransport = async (request) => {
  const url = new URL(request.url);
  const send = requestFunctionFor(url);
  return new Promise<TransportAnswer>((resolveAnswer, rejectAnswer) => {
    let outgoing: ClientRequest;
    try {
      outgoing = send(url, {
        method: request.method,
        headers: {
          ...request.headers,
          ...(request.body !== undefined
            ? { "content-length": String(Buffer.byteLength(request.body)) }
            : {}),
        },
        agent: false,
        ...(request.signal !== undefined ? { signal: request.signal } : {}),
      });
    } catch (error) {
      rejectAnswer(failed(error));
      return;
    }
    outgoing.once("error", (error) => {
      rejectAnswer(request.signal?.aborted ? error : failed(error));
    });
    // Written to the socket: the request is out.
    outgoing.once("finish", () => request.onSent());
    outgoing.once("response", (response: IncomingMessage) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.once("error", (error) => rejectAnswer(failed(error)));
      response.once("end", () => {
        resolveAnswer({
          status: response.statusCode ?? 0,
          text: Buffer.concat(chunks).toString("utf8"),
        });
      });
    });
    outgoing.end(request.body);
  });
};
