import { errorResponse, httpStatusOf, installErrorHandling } from "@deckhand/http-kit";
import { describeError, redactSecrets } from "@deckhand/secrets";
import type { ModelUsageOutcome } from "@deckhand/wire";
import { WirePath } from "@deckhand/wire";
import { type Context, Hono } from "hono";
import { BodyObserver } from "./body-observer.ts";
import { type ModelProxyLogger, redactingLogger, silentLogger } from "./logger.ts";
import { ModelProxyError } from "./model-proxy-error.ts";
import type { ModelTokenStore } from "./model-token.ts";
import { ProxyUpstreams } from "./proxy-upstreams.ts";
import type { RateLimitOptions } from "./rate-limit.ts";
import { type ProxyEnvironment, RequestAuthentication } from "./request-authentication.ts";
import { upstreamRequestBody } from "./request-body.ts";
import { RequestRateLimit } from "./request-rate-limit.ts";
import { RequestUsage } from "./request-usage.ts";
import {
  agentResponseHeaders,
  scrubSearch,
  type UpstreamConfig,
  upstreamRequestHeaders,
  upstreamUrl,
} from "./upstreams.ts";
import type { UsageRecorder } from "./usage.ts";

export interface ModelProxyOptions {
  /** Agent type (the path segment after the proxy's path) → where its requests go. */
  upstreams: Record<string, UpstreamConfig>;
  tokens: ModelTokenStore;
  usage: UsageRecorder;
  /** Per-token request limit; `false` turns it off. Defaults to a burst of 60, 2 per second. */
  rateLimit?: RateLimitOptions | false;
  logger?: ModelProxyLogger;
  /** The fetch used to reach upstreams, for tests. */
  fetch?: typeof globalThis.fetch;
  /** The clock, for tests. */
  now?: () => number;
  /** Non-streaming bodies up to this size are parsed for usage; larger ones count bytes only. */
  maxUsageBodyBytes?: number;
}

/**
 * The model-provider proxy: a hono app serving `${WirePath.modelProvider}/<agent-type>/...`.
 * It checks the scoped token and job id, forwards to the agent type's upstream with the real key,
 * streams the answer back as it arrives and records usage for the token's job.
 */
export function createModelProxy(options: ModelProxyOptions): Hono<ProxyEnvironment> {
  const upstreams = new ProxyUpstreams(options.upstreams);
  const upstreamKeys = upstreams.keys;
  const now = options.now ?? Date.now;
  const fetchUpstream = options.fetch ?? globalThis.fetch;
  const authentication = new RequestAuthentication(options.tokens, now);
  const rateLimit = new RequestRateLimit(options.rateLimit, now);
  const maxUsageBodyBytes = options.maxUsageBodyBytes ?? 4 * 1024 * 1024;
  const baseLogger = options.logger ?? silentLogger;
  const configuredTypes = upstreams.configuredTypes;

  const app = new Hono<ProxyEnvironment>().basePath(WirePath.modelProvider);
  const secretsOf = (context: Context<ProxyEnvironment>) => [
    ...upstreamKeys,
    ...(context.get("secrets") ?? []),
  ];
  const loggerFor = (context: Context<ProxyEnvironment>) =>
    redactingLogger(baseLogger, () => secretsOf(context));

  installErrorHandling(app as unknown as Hono);
  app.onError((error, context) => {
    const logger = loggerFor(context);
    if (ModelProxyError.isInstance(error)) {
      const status = httpStatusOf(error.code);
      const message = redactSecrets(error.message, secretsOf(context));
      return context.json({ error: { code: error.code, message } }, status);
    }
    return errorResponse(context, error, {
      onUnexpectedError: (unexpected) =>
        logger.error("model-provider proxy failed", {
          path: context.req.path,
          error: describeError(unexpected),
        }),
    });
  });

  app.all("/:agentType/*", async (context) => {
    const started = now();
    const logger = loggerFor(context);
    const agentType = context.req.param("agentType");
    const { token, record } = await authentication.authenticate(context, agentType, logger);
    const refusal = rateLimit.refusal(context, agentType, record, logger);
    if (refusal !== null) return refusal;
    const url = new URL(context.req.url);
    const method = context.req.method;
    const route = upstreams.route(agentType, method, url);
    const { upstream, restPath, upstreamName } = route;

    const received =
      method === "GET" || method === "HEAD"
        ? undefined
        : new Uint8Array(await context.req.raw.arrayBuffer());
    const requestBytes = received?.byteLength ?? 0;
    // The job's id goes too: the upstream has no use for it (its header is not forwarded either),
    // and beside the token it is what an environment dump shows of the job.
    const forwarded =
      received === undefined
        ? undefined
        : upstreamRequestBody(received, context.req.header("content-encoding"), [
            ...secretsOf(context),
            record.jobId,
          ]);
    if (forwarded !== undefined && forwarded.redactions > 0) {
      logger.warn("secrets replaced in a model-provider request body", {
        agentType,
        jobId: record.jobId,
        tokenId: record.id,
        redactions: forwarded.redactions,
      });
    }
    const body = forwarded?.body;
    const target = upstreamUrl(upstream.baseUrl, restPath, scrubSearch(url.search, token));

    // The agent going away aborts the upstream request, so a dropped stream stops costing tokens.
    const abort = new AbortController();
    const clientSignal = context.req.raw.signal;
    const onClientAbort = () => abort.abort(new Error("the agent closed the connection"));
    clientSignal.addEventListener("abort", onClientAbort, { once: true });
    const detach = () => clientSignal.removeEventListener("abort", onClientAbort);

    const usage = new RequestUsage({
      recorder: options.usage,
      logger,
      now,
      started,
      record,
      route,
      requestBytes,
      onEnd: detach,
    });
    const finish = (status: number, outcome: ModelUsageOutcome, responseBytes: number) =>
      usage.finish(status, outcome, responseBytes);

    const upstreamFailed = async (error: unknown): Promise<Response> => {
      if (abort.signal.aborted) {
        await finish(499, "client_aborted", 0);
        return new Response(null, { status: 499 });
      }
      logger.error("model-provider upstream unreachable", {
        agentType,
        upstream: upstreamName,
        error: describeError(error),
      });
      await finish(502, "upstream_unavailable", 0);
      throw new ModelProxyError(
        "upstream_unavailable",
        `the upstream for agent type "${agentType}" could not be reached; try again, and if it persists ask the operator to check its base URL`,
        { cause: error },
      );
    };
    const requestHeaders = upstreamRequestHeaders(context.req.raw.headers, upstream, token);
    // The body goes upstream as the proxy read it: uncompressed.
    if (forwarded?.decoded) requestHeaders.delete("content-encoding");
    const upstreamBrokeOff = (error: unknown) =>
      logger.warn("model-provider upstream broke off mid-stream", {
        agentType,
        upstream: upstreamName,
        error: describeError(error),
      });

    let response: Response;
    try {
      response = await fetchUpstream(target, {
        method,
        headers: requestHeaders,
        ...(body === undefined ? {} : { body }),
        signal: abort.signal,
        redirect: "manual",
      });
    } catch (error) {
      return upstreamFailed(error);
    }

    const headers = agentResponseHeaders(response.headers, secretsOf(context));
    if (!response.body) {
      await finish(response.status, "completed", 0);
      return new Response(null, { status: response.status, headers });
    }
    const observer = new BodyObserver({
      contentType: response.headers.get("content-type") ?? "",
      maxUsageBodyBytes,
      counts: usage.counts,
    });
    const observed = observeBody(response.body, observer, {
      clientGone: () => abort.signal.aborted,
      onUpstreamError: upstreamBrokeOff,
      onEnd: (outcome) => {
        if (outcome === "client_aborted") abort.abort(new Error("the agent closed the connection"));
        void finish(response.status, outcome, observer.bytes);
      },
    });
    return new Response(observed, { status: response.status, headers });
  });

  app.all("/:agentType", () => {
    throw new ModelProxyError(
      "not_found",
      `append the provider's path to the agent type's URL, e.g. ${WirePath.modelProvider}/<agent-type>/responses; configured agent types: ${configuredTypes}`,
    );
  });

  return app;
}

interface ObserveOptions {
  /** True once the agent has gone away, which also makes the upstream read fail. */
  clientGone: () => boolean;
  onEnd: (outcome: ModelUsageOutcome) => void;
  onUpstreamError: (error: unknown) => void;
}

/**
 * Passes the upstream body through chunk by chunk, as it arrives, showing each to the observer.
 * A pull-based stream rather than a TransformStream: a transformer's single `cancel` hook cannot
 * tell the agent hanging up from the upstream breaking off, and usage records which it was.
 */
function observeBody(
  body: ReadableStream<Uint8Array>,
  observer: BodyObserver,
  options: ObserveOptions,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let ended = false;
  const end = (outcome: ModelUsageOutcome) => {
    if (ended) return;
    ended = true;
    options.onEnd(outcome);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let result: Awaited<ReturnType<typeof reader.read>>;
      try {
        result = await reader.read();
      } catch (error) {
        if (options.clientGone()) {
          end("client_aborted");
          controller.error(new ModelProxyError("internal", "the agent closed the connection"));
          return;
        }
        options.onUpstreamError(error);
        end("upstream_aborted");
        // Breaking the agent's stream is how it learns the answer is incomplete. The error is
        // our own, without a cause: whatever hosts the app may print it.
        controller.error(
          new ModelProxyError("upstream_unavailable", "the upstream's answer broke off mid-way"),
        );
        return;
      }
      if (result.done) {
        observer.end();
        end("completed");
        controller.close();
        return;
      }
      observer.chunk(result.value);
      controller.enqueue(result.value);
    },
    async cancel(reason) {
      end("client_aborted");
      await reader.cancel(reason).catch(() => {});
    },
  });
}
