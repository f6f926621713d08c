// How a forwarded request reaches its upstream. By default over node:http(s) with keep-alive
// agents, so the answer arrives as a Node stream the proxy can pipe to the agent as it is: the
// platform fetch would wrap every chunk in a web stream (and a promise per read) only for the
// proxy to unwrap it again. A fetch given in the options (tests, an embedding that routes
// requests its own way) is still honoured; its body is adapted to the same Node stream.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { Readable, type Transform } from "node:stream";
import type { ReadableStream as NodeWebReadableStream } from "node:stream/web";
import {
  createBrotliDecompress,
  createGunzip,
  createInflate,
  createZstdDecompress,
} from "node:zlib";
import { codingsToUndo } from "./content-codings.ts";

export interface UpstreamRequest {
  method: string;
  headers: Headers;
  body: Uint8Array | undefined;
  signal: AbortSignal;
}

/** The upstream's answer: its status, its headers, and its body already decoded. */
export interface UpstreamAnswer {
  status: number;
  headers: Headers;
  /** Null when the answer has no body (HEAD, 204, 304). */
  body: Readable | null;
}

/** Sends one request and resolves with the answer's head; rejects when no answer came. */
export type UpstreamTransport = (url: string, request: UpstreamRequest) => Promise<UpstreamAnswer>;

/** What the platform fetch asks for and decodes; the node:http transport does the same. */
const ACCEPTED_ENCODINGS = "gzip, deflate, br";

const decoders: Record<string, () => Transform> = {
  gzip: createGunzip,
  "x-gzip": createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
  zstd: createZstdDecompress,
};

/**
 * The body decoded as fetch would (codings undone from the last listed). An unknown coding
 * leaves the body as it came, as fetch does.
 */
function decodedBody(message: IncomingMessage): Readable {
  const codings = codingsToUndo(message.headers["content-encoding"]);
  if (codings.length === 0 || codings.some((coding) => decoders[coding] === undefined)) {
    return message;
  }
  let body: Readable = message;
  for (const coding of codings) {
    const decoder = decoders[coding]!();
    const source = body;
    // A broken upstream stream or bad compressed data both end the decoded body in an error.
    source.once("error", (error) => decoder.destroy(error));
    body = source.pipe(decoder);
  }
  return body;
}

/** The answer's headers as fetch shows them: repeated ones appended, names lower-cased. */
function answerHeaders(message: IncomingMessage): Headers {
  const headers = new Headers();
  const raw = message.rawHeaders;
  for (let index = 0; index + 1 < raw.length; index += 2) {
    headers.append(raw[index]!, raw[index + 1]!);
  }
  return headers;
}

/**
 * The default transport: node:http(s) over keep-alive connections (one pool per proxy), no
 * redirects followed, the agent's abort destroying the request.
 */
export function nodeHttpTransport(): UpstreamTransport {
  const agents = {
    "http:": new HttpAgent({ keepAlive: true }),
    "https:": new HttpsAgent({ keepAlive: true }),
  };
  return (url, upstreamRequest) =>
    new Promise((resolveAnswer, reject) => {
      const target = new URL(url);
      const secure = target.protocol === "https:";
      const headers: Record<string, string> = {};
      for (const [name, value] of upstreamRequest.headers) headers[name] = value;
      headers["accept-encoding"] = ACCEPTED_ENCODINGS;
      const { body } = upstreamRequest;
      if (body !== undefined) headers["content-length"] = String(body.byteLength);
      const send = secure ? httpsRequest : httpRequest;
      const outgoing = send(
        target,
        {
          method: upstreamRequest.method,
          headers,
          agent: secure ? agents["https:"] : agents["http:"],
          signal: upstreamRequest.signal,
        },
        (message) => {
          const status = message.statusCode ?? 502;
          const empty = upstreamRequest.method === "HEAD" || status === 204 || status === 304;
          if (empty) message.resume();
          resolveAnswer({
            status,
            headers: answerHeaders(message),
            body: empty ? null : decodedBody(message),
          });
        },
      );
      outgoing.once("error", reject);
      outgoing.end(body);
    });
}

/** A transport over a fetch function: its web body adapted to a Node stream. */
export function fetchTransport(fetch: typeof globalThis.fetch): UpstreamTransport {
  return async (url, upstreamRequest) => {
    const response = await fetch(url, {
      method: upstreamRequest.method,
      headers: upstreamRequest.headers,
      ...(upstreamRequest.body === undefined ? {} : { body: upstreamRequest.body }),
      signal: upstreamRequest.signal,
      redirect: "manual",
    });
    return {
      status: response.status,
      headers: response.headers,
      // The DOM and Node typings name the same web stream twice.
      body:
        response.body === null ? null : Readable.fromWeb(response.body as NodeWebReadableStream),
    };
  };
}
