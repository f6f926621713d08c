import type { Readable } from "node:stream";
import type { ModelUsageOutcome } from "@deckhand/wire";
import { BodyObserver } from "./body-observer.ts";
import { describeError, type ModelProxyLogger } from "./logger.ts";
import { ModelProxyError } from "./model-proxy-error.ts";
import type { UpstreamRoute } from "./proxy-upstreams.ts";
import type { AuthenticatedRequest, ProxyExchange } from "./request-authentication.ts";
import { upstreamRequestBody } from "./request-body.ts";
import { RequestUsage } from "./request-usage.ts";
import type { UpstreamAnswer, UpstreamTransport } from "./upstream-transport.ts";
import {
  agentResponseHeaders,
  scrubSearch,
  upstreamRequestHeaders,
  upstreamUrl,
} from "./upstreams.ts";
import type { UsageRecorder } from "./usage.ts";

export interface ForwardingOptions {
  transport: UpstreamTransport;
  usage: UsageRecorder;
  now: () => number;
  /** Non-streaming bodies up to this size are parsed for usage; larger ones count bytes only. */
  maxUsageBodyBytes: number;
}

/** One authenticated request, routed to its upstream. */
export interface RoutedRequest extends AuthenticatedRequest {
  route: UpstreamRoute;
  /** The request's URL, parsed once. */
  url: URL;
  /** When the proxy received it. */
  started: number;
  logger: ModelProxyLogger;
  /** The real keys and whatever the request presented: never forwarded back or logged. */
  secrets: () => string[];
}

/**
 * The upstream's answer as the agent gets it: its status, its headers (cleaned), and its body,
 * which `relay` passes through to whatever writes it (a web stream for hono's app, Node's
 * response for the handler ahead of it), observed for usage.
 */
export interface AgentAnswer {
  status: number;
  headers: Headers;
  /** Null when the answer has no body; its usage is then recorded already. */
  relay: ((sink: RelaySink) => Relay) | null;
}

/**
 * Sends one request on to its upstream with the real key (its body and query scrubbed of the
 * scoped token and the job id) and streams the answer back as it arrives, recording its usage
 * however it ends: completed, the agent hanging up, or the upstream failing or breaking off.
 */
export class ForwardedRequest {
  readonly #exchange: ProxyExchange;
  readonly #request: RoutedRequest;
  readonly #options: ForwardingOptions;
  /** The agent going away aborts the upstream request, so a dropped stream stops costing. */
  readonly #abort = new AbortController();

  constructor(exchange: ProxyExchange, request: RoutedRequest, options: ForwardingOptions) {
    this.#exchange = exchange;
    this.#request = request;
    this.#options = options;
  }

  async forward(): Promise<Response | AgentAnswer> {
    const exchange = this.#exchange;
    const { route, token, logger } = this.#request;
    const method = exchange.method;
    const received = method === "GET" || method === "HEAD" ? undefined : await exchange.body();
    const forwarded = this.#upstreamBody(received);
    const target = upstreamUrl(
      route.upstream.baseUrl,
      route.restPath,
      scrubSearch(this.#request.url.search, token),
    );

    const clientSignal = exchange.signal;
    const onClientAbort = () => this.#abort.abort(new Error("the agent closed the connection"));
    clientSignal.addEventListener("abort", onClientAbort, { once: true });
    const usage = new RequestUsage({
      recorder: this.#options.usage,
      logger,
      now: this.#options.now,
      started: this.#request.started,
      record: this.#request.record,
      route,
      requestBytes: received?.byteLength ?? 0,
      onEnd: () => clientSignal.removeEventListener("abort", onClientAbort),
    });

    const requestHeaders = upstreamRequestHeaders(exchange.headers, route.upstream, token);
    // The body goes upstream as the proxy read it: uncompressed.
    if (forwarded?.decoded) requestHeaders.delete("content-encoding");
    let answer: UpstreamAnswer;
    try {
      answer = await this.#options.transport(target, {
        method,
        headers: requestHeaders,
        body: forwarded?.body,
        signal: this.#abort.signal,
      });
    } catch (error) {
      return this.#upstreamFailed(error, usage);
    }
    return this.#answer(answer, usage);
  }

  /**
   * The body as the upstream gets it, with the request's secrets replaced. The job's id goes
   * too: the upstream has no use for it (its header is not forwarded either), and beside the
   * token it is what an environment dump shows of the job.
   */
  #upstreamBody(received: Uint8Array | undefined) {
    if (received === undefined) return undefined;
    const { route, record, logger } = this.#request;
    const contentEncoding = this.#exchange.headers.get("content-encoding") ?? undefined;
    const forwarded = upstreamRequestBody(received, contentEncoding, [
      ...this.#request.secrets(),
      record.jobId,
    ]);
    if (forwarded.redactions > 0) {
      logger.warn("secrets replaced in a model-provider request body", {
        agentType: route.agentType,
        jobId: record.jobId,
        tokenId: record.id,
        redactions: forwarded.redactions,
      });
    }
    return forwarded;
  }

  async #upstreamFailed(error: unknown, usage: RequestUsage): Promise<Response> {
    const { route, logger } = this.#request;
    if (this.#abort.signal.aborted) {
      await usage.finish(499, "client_aborted", 0);
      return new Response(null, { status: 499 });
    }
    logger.error("model-provider upstream unreachable", {
      agentType: route.agentType,
      upstream: route.upstreamName,
      error: describeError(error),
    });
    await usage.finish(502, "upstream_unavailable", 0);
    throw new ModelProxyError(
      "upstream_unavailable",
      `the upstream for agent type "${route.agentType}" could not be reached; try again, and if it persists ask the operator to check its base URL`,
      { cause: error },
    );
  }

  /** The upstream's answer for the agent, its body streamed through and observed for usage. */
  async #answer(answer: UpstreamAnswer, usage: RequestUsage): Promise<AgentAnswer> {
    const { route, logger } = this.#request;
    const headers = agentResponseHeaders(answer.headers, this.#request.secrets());
    const body = answer.body;
    if (!body) {
      await usage.finish(answer.status, "completed", 0);
      return { status: answer.status, headers, relay: null };
    }
    const observer = new BodyObserver({
      contentType: answer.headers.get("content-type") ?? "",
      maxUsageBodyBytes: this.#options.maxUsageBodyBytes,
      counts: usage.counts,
    });
    const options: ObserveOptions = {
      clientGone: () => this.#abort.signal.aborted,
      onUpstreamError: (error) =>
        logger.warn("model-provider upstream broke off mid-stream", {
          agentType: route.agentType,
          upstream: route.upstreamName,
          error: describeError(error),
        }),
      onEnd: (outcome) => {
        if (outcome === "client_aborted") {
          this.#abort.abort(new Error("the agent closed the connection"));
        }
        void usage.finish(answer.status, outcome, observer.bytes);
      },
    };
    return {
      status: answer.status,
      headers,
      relay: (sink) => relayBody(body, observer, options, sink),
    };
  }
}

/** Where `relayBody` passes the upstream's body: the agent's web stream or Node response. */
export interface RelaySink {
  /** Hands on one chunk; false when the agent lags behind and the upstream should pause. */
  push(chunk: Buffer): boolean;
  /** The body ended. */
  close(): void;
  /**
   * The upstream broke off (or the agent went away): break the agent's answer, which is how it
   * learns the answer is incomplete. The error is our own, without a cause: whatever hosts the
   * proxy may print it.
   */
  fail(error: ModelProxyError): void;
}

/** A body being relayed: resumed when the agent catches up, cancelled when it goes away. */
export interface Relay {
  resume(): void;
  /** The agent went away: the upstream's body is dropped and its request aborted. */
  cancel(): void;
}

interface ObserveOptions {
  /** True once the agent has gone away, which also makes the upstream read fail. */
  clientGone: () => boolean;
  onEnd: (outcome: ModelUsageOutcome) => void;
  onUpstreamError: (error: unknown) => void;
}

/**
 * Passes the upstream body through chunk by chunk, as it arrives, showing each to the observer,
 * and pauses it only while the agent lags behind. The ends are told apart, since usage records
 * which it was: `cancel` is the agent hanging up, an error or a close before the end is the
 * upstream breaking off.
 */
function relayBody(
  body: Readable,
  observer: BodyObserver,
  options: ObserveOptions,
  sink: RelaySink,
): Relay {
  let ended = false;
  const end = (outcome: ModelUsageOutcome) => {
    if (ended) return;
    ended = true;
    options.onEnd(outcome);
  };
  const brokeOff = (error: unknown) => {
    if (ended) return;
    if (options.clientGone()) {
      end("client_aborted");
      sink.fail(new ModelProxyError("internal", "the agent closed the connection"));
      return;
    }
    options.onUpstreamError(error);
    end("upstream_aborted");
    sink.fail(
      new ModelProxyError("upstream_unavailable", "the upstream's answer broke off mid-way"),
    );
  };
  body.on("data", (chunk: Buffer) => {
    observer.chunk(chunk);
    if (!sink.push(chunk)) body.pause();
  });
  body.once("end", () => {
    observer.end();
    end("completed");
    sink.close();
  });
  body.once("error", brokeOff);
  body.once("close", () => {
    if (!body.readableEnded) brokeOff(new Error("the upstream closed the stream early"));
  });
  return {
    resume: () => body.resume(),
    cancel: () => {
      end("client_aborted");
      body.destroy();
    },
  };
}

// A few chunks of slack: with the default of one, every chunk would pause the upstream stream
// and the agent's next read resume it, a round of ticks per chunk.
const AGENT_STREAM_SLACK = new CountQueuingStrategy({ highWaterMark: 8 });

/**
 * The answer as a web `Response` for hono's app: the Node stream pushes into the web stream (no
 * promise per chunk on this side) and is paused only while the agent lags a few chunks behind.
 */
export function answerResponse(answer: AgentAnswer): Response {
  const { relay } = answer;
  if (relay === null) return new Response(null, { status: answer.status, headers: answer.headers });
  let relaying: Relay | undefined;
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        relaying = relay({
          push(chunk) {
            controller.enqueue(chunk);
            return (controller.desiredSize ?? 0) > 0;
          },
          close: () => controller.close(),
          fail: (error) => controller.error(error),
        });
      },
      pull() {
        relaying?.resume();
      },
      cancel() {
        relaying?.cancel();
      },
    },
    AGENT_STREAM_SLACK,
  );
  return new Response(stream, { status: answer.status, headers: answer.headers });
}
