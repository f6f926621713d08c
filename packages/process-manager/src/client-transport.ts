import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";

/** One request of the process client: JSON in, text out. */
export interface TransportRequest {
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string | undefined;
  signal?: AbortSignal | undefined;
}

export interface TransportAnswer {
  status: number;
  text: string;
}

/** Sends a request; rejects only when no answer came (unreachable, reset, aborted). */
export type Transport = (url: URL, request: TransportRequest) => Promise<TransportAnswer>;

/** A transport over a `fetch` implementation, for callers that bring their own. */
export function fetchTransport(fetchImplementation: typeof fetch): Transport {
  return async (url, request) => {
    const init: RequestInit = { method: request.method, headers: request.headers };
    if (request.body !== undefined) init.body = request.body;
    if (request.signal !== undefined) init.signal = request.signal;
    const response = await fetchImplementation(url, init);
    return { status: response.status, text: await response.text() };
  };
}

/**
 * The default transport: node:http(s) over Node's global keep-alive agents. Node's fetch builds
 * WHATWG requests, responses and streams for every call, which costs about 0.3 ms a request —
 * as long as the agent takes to start and reap a short command.
 *
 * A kept-alive connection the agent closed as idle just as a request went out on it is reset
 * before the agent read the request: the request is sent again, once, on a new connection (what
 * Node's documentation prescribes for `reusedSocket`), rather than reported as unreachable.
 */
export const nodeTransport: Transport = (url, request) =>
  sendOnce(url, request).catch((error: unknown) => {
    if (!(error instanceof StaleConnectionError)) throw error;
    return sendOnce(url, request);
  });

/** A reused keep-alive connection was reset before any answer: the request never arrived. */
class StaleConnectionError extends Error {}

function sendOnce(url: URL, request: TransportRequest): Promise<TransportAnswer> {
  return new Promise((resolveAnswer, reject) => {
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    let answered = false;
    const onAnswer = (response: IncomingMessage) => {
      answered = true;
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("error", reject);
      response.on("close", () => {
        if (!response.complete) {
          reject(new Error("the connection closed before the whole answer arrived"));
          return;
        }
        resolveAnswer({
          status: response.statusCode ?? 0,
          text: Buffer.concat(chunks).toString("utf8"),
        });
      });
    };
    const options = { method: request.method, headers: request.headers, signal: request.signal };
    const outgoing = send(url, options, onAnswer);
    outgoing.on("error", (error: NodeJS.ErrnoException) => {
      const stale =
        !answered &&
        outgoing.reusedSocket &&
        error.code === "ECONNRESET" &&
        !request.signal?.aborted;
      reject(stale ? new StaleConnectionError(error.message, { cause: error }) : error);
    });
    outgoing.end(request.body);
  });
}
