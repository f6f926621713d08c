// The proxy's routes answered on Node's request and response themselves, ahead of hono's app: an
// upstream's stream is written to the agent's socket as it arrives, without the web `Request`,
// the web stream and `@hono/node-server`'s read loop between them (a promise and objects per
// chunk). What the app's middleware does for these routes is done here by the same functions:
// the Host/Origin check (`OriginPolicy.refusal`), the body limit (`bodyTooLarge`), the security
// headers (`securityHeaderSetter`) and the request log line (`requestLogEntry`).
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  type BodyLimitOptions,
  bodyTooLarge,
  type HeaderTarget,
  HttpError,
  type NodeHandler,
  type OriginPolicy,
  type RequestLogEntry,
  requestLogEntry,
} from "@deckhand/http-kit";
import { WirePath } from "@deckhand/wire";
import type { ModelProxy } from "./model-proxy.ts";
import type { ProxyExchange } from "./request-authentication.ts";
import type { AgentAnswer } from "./upstream-forwarding.ts";

/** What the app around the proxy does to its requests, done by the handler ahead of it. */
export interface DirectEdge {
  /** The Host and Origin check of `guardOrigin`; none where the app has none. */
  originPolicy?: OriginPolicy;
  /** The body limit of `limitBody`. */
  bodyLimit: BodyLimitOptions;
  /** The headers of `securityHeaders`, set on every answer's head (`securityHeaderSetter`). */
  securityHeaders?: (target: HeaderTarget) => void;
  /** The line `logRequests` writes, once the answer's head is written. */
  logRequest?: (entry: RequestLogEntry) => void;
}

/**
 * The paths the handler takes: an agent type (as `AgentTypeSchema` spells it) and a path after
 * it. Anything else (the bare prefix, an agent type alone, an escaped name) goes to the app,
 * whose answers for them stay as they are.
 */
const PROXY_PATH = new RegExp(
  `^${WirePath.modelProvider.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/([a-z0-9][a-z0-9._-]*)/`,
);

/** How much of the answer may wait in the agent's socket before the upstream is paused. */
const RELAY_SLACK_BYTES = 256 * 1024;

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * A Node request handler for the proxy's routes (`listen`'s `ahead`): true when it took the
 * request. It takes only a request whose path is already canonical (the URL parser changes
 * nothing in it) and that names its Host, so it reads exactly what the app would have.
 */
export function directProxyHandler(proxy: ModelProxy, edge: DirectEdge): NodeHandler {
  return (incoming, outgoing) => {
    const raw = incoming.url;
    const host = incoming.headers.host;
    if (raw === undefined || host === undefined) return false;
    const match = PROXY_PATH.exec(raw);
    if (match === null) return false;
    let url: URL;
    try {
      url = new URL(raw, `http://${host}`);
    } catch {
      return false;
    }
    const query = raw.indexOf("?");
    const rawPath = query === -1 ? raw : raw.slice(0, query);
    if (url.pathname !== rawPath) return false;
    void new DirectExchange(proxy, edge, incoming, outgoing, url).run(match[1]!);
    return true;
  };
}

/** One request through the handler, from its checks to its answer's end. */
class DirectExchange implements ProxyExchange {
  readonly method: string;
  readonly url: URL;
  readonly headers = new Headers();
  readonly signal: AbortSignal;
  secrets: string[] = [];
  readonly #proxy: ModelProxy;
  readonly #edge: DirectEdge;
  readonly #incoming: IncomingMessage;
  readonly #outgoing: ServerResponse;
  readonly #started = performance.now();

  constructor(
    proxy: ModelProxy,
    edge: DirectEdge,
    incoming: IncomingMessage,
    outgoing: ServerResponse,
    url: URL,
  ) {
    this.#proxy = proxy;
    this.#edge = edge;
    this.#incoming = incoming;
    this.#outgoing = outgoing;
    this.method = incoming.method ?? "GET";
    this.url = url;
    const raw = incoming.rawHeaders;
    for (let index = 0; index + 1 < raw.length; index += 2) {
      this.headers.append(raw[index]!, raw[index + 1]!);
    }
    // The agent going away before its answer ends aborts the upstream request.
    const gone = new AbortController();
    this.signal = gone.signal;
    outgoing.once("close", () => {
      if (!outgoing.writableFinished) gone.abort(new Error("the agent closed the connection"));
    });
  }

  async run(agentType: string): Promise<void> {
    try {
      this.#checkEdge();
      const answer = await this.#proxy.serve(this, agentType);
      if (answer instanceof Response) await this.#send(answer);
      else this.#relay(answer);
    } catch (error) {
      this.#fail(error);
    }
  }

  /** `guardOrigin`'s check, then `limitBody`'s on a declared length, before anything is read. */
  #checkEdge(): void {
    const headers = this.#incoming.headers;
    const refusal = this.#edge.originPolicy?.refusal({
      method: this.method,
      host: headers.host,
      origin: single(headers.origin),
      fetchSite: single(headers["sec-fetch-site"]),
    });
    if (refusal) throw new HttpError(403, refusal.code, refusal.message);
    const declared = headers["content-length"];
    if (declared !== undefined && Number(declared) > this.#edge.bodyLimit.maxBytes) {
      throw bodyTooLarge(this.#edge.bodyLimit);
    }
  }

  /** The whole body, refused with 413 as soon as it passes the limit. */
  body(): Promise<Uint8Array> {
    const incoming = this.#incoming;
    const limit = this.#edge.bodyLimit;
    return new Promise((resolveBody, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      incoming.on("data", (chunk: Buffer) => {
        size += chunk.byteLength;
        if (size > limit.maxBytes) {
          incoming.removeAllListeners("data");
          reject(bodyTooLarge(limit));
          return;
        }
        chunks.push(chunk);
      });
      incoming.once("end", () =>
        resolveBody(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)),
      );
      incoming.once("error", reject);
      incoming.once("aborted", () => reject(new Error("the agent closed the connection")));
    });
  }

  /** Writes the head: the answer's headers, the app's security headers, then the log line. */
  #writeHead(status: number, headers: Iterable<[string, string]>, length?: number): void {
    const outgoing = this.#outgoing;
    for (const [name, value] of headers) outgoing.setHeader(name, value);
    if (length !== undefined) outgoing.setHeader("content-length", length);
    this.#edge.securityHeaders?.({
      has: (name) => outgoing.hasHeader(name),
      set: (name, value) => outgoing.setHeader(name, value),
    });
    outgoing.writeHead(status);
    this.#edge.logRequest?.(requestLogEntry(this.method, this.url.pathname, status, this.#started));
  }

  /** A refusal the proxy made (429, 402, 499) or an empty answer: small, sent whole. */
  async #send(answer: Response): Promise<void> {
    const body = answer.body === null ? undefined : Buffer.from(await answer.arrayBuffer());
    if (this.#outgoing.destroyed) return;
    this.#writeHead(answer.status, answer.headers, body?.byteLength ?? 0);
    this.#outgoing.end(body);
  }

  /** The upstream's answer, written to the agent's socket as it arrives, with backpressure. */
  #relay(answer: AgentAnswer): void {
    const outgoing = this.#outgoing;
    if (outgoing.destroyed) {
      answer.relay?.({ push: () => false, close() {}, fail() {} }).cancel();
      return;
    }
    this.#writeHead(answer.status, answer.headers);
    if (answer.relay === null) {
      outgoing.end();
      return;
    }
    const relay = answer.relay({
      // Node's response takes 16 KiB before it asks to wait, less than one upstream read: a
      // little more slack spares a pause, a drain and a resume per chunk.
      push: (chunk) => outgoing.write(chunk) || outgoing.writableLength < RELAY_SLACK_BYTES,
      close: () => outgoing.end(),
      // The head is out: breaking the connection is how the agent learns the answer is cut.
      fail: () => outgoing.destroy(),
    });
    outgoing.on("drain", () => relay.resume());
    outgoing.once("close", () => {
      if (!outgoing.writableFinished) relay.cancel();
    });
  }

  /** An error's answer, as the app's error handler gives it; a broken stream once the head is out. */
  #fail(error: unknown): void {
    const outgoing = this.#outgoing;
    if (outgoing.headersSent || outgoing.destroyed) {
      outgoing.destroy();
      return;
    }
    const answer = this.#proxy.errorAnswer(error, this, this.url.pathname);
    const headers: [string, string][] = [["content-type", "application/json"]];
    // As `limitBody` does: the rest of an oversized body is not read.
    if (HttpError.isInstance(error) && error.code === "body_too_large") {
      headers.push(["connection", "close"]);
    }
    const body = Buffer.from(JSON.stringify(answer.body));
    this.#writeHead(answer.status, headers, body.byteLength);
    outgoing.end(body);
  }
}
