import { errorResponse, httpStatusOf, installErrorHandling } from "@deckhand/http-kit";
import { describeError, redactSecrets } from "@deckhand/secrets";
import type { ModelUsageOutcome } from "@deckhand/wire";
import { WireEnv, WireHeader, WirePath } from "@deckhand/wire";
import { type Context, Hono } from "hono";
import { BodyObserver } from "./body-observer.ts";
import { budgetRefusalResponse } from "./budgets/budget-refusal.ts";
import { type LogFields, type ModelProxyLogger, redactingLogger, silentLogger } from "./logger.ts";
import { ModelProxyError } from "./model-proxy-error.ts";
import { type ModelTokenStore, verifyModelToken } from "./model-token.ts";
import { DEFAULT_RATE_LIMIT, type RateLimitOptions, TokenBucketLimiter } from "./rate-limit.ts";
import { upstreamRequestBody } from "./request-body.ts";
import {
  AgentTypeSchema,
  agentResponseHeaders,
  endpointLabels,
  matchEndpoint,
  scrubSearch,
  type UpstreamConfig,
  UpstreamConfigSchema,
  upstreamRequestHeaders,
  upstreamUrl,
} from "./upstreams.ts";
import { UsageAccumulator, type UsageRecorder } from "./usage.ts";

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
  /**
   * Spend budgets (ModelBudgets): asked before each request that costs tokens is forwarded; a
   * reached budget is answered with 402 and the message, in the upstream's error shape.
   */
  budgets?: { check(jobId: string): Promise<{ message: string } | null> };
}

type ProxyEnvironment = { Variables: { secrets: string[] } };

const UNAUTHORIZED_MESSAGE = `missing or invalid model-provider token; send the token from ${WireEnv.modelProviderToken} as "${WireHeader.authorization}: Bearer <token>", "x-api-key: <token>" or "x-goog-api-key: <token>", with ${WireHeader.jobId} set to the job it was minted for`;

/**
 * The token an agent presented, in the form its provider's SDK sends an API key: OpenAI SDKs a
 * bearer token, Anthropic SDKs `x-api-key`, Google's `x-goog-api-key` or the `key` query
 * parameter. An SDK may send the same key in two of these; that is one credential.
 */
function presentedCredentials(
  headers: Headers,
  search: URLSearchParams,
): { token: string | undefined; raw: string[] } {
  const authorization = headers.get(WireHeader.authorization);
  const apiKey = headers.get("x-api-key");
  const googleKey = headers.get("x-goog-api-key");
  const queryKey = search.get("key");
  const raw = [authorization, apiKey, googleKey, queryKey].filter(
    (value): value is string => !!value,
  );
  const bearer = authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
  const candidates = [bearer, apiKey?.trim(), googleKey?.trim(), queryKey?.trim()].filter(
    (value): value is string => !!value,
  );
  // Two different credentials at once is ambiguous; refuse rather than pick one.
  if (new Set(candidates).size !== 1) return { token: undefined, raw };
  return { token: candidates[0], raw };
}

/**
 * The model-provider proxy: a hono app serving `${WirePath.modelProvider}/<agent-type>/...`.
 * It checks the scoped token and job id, forwards to the agent type's upstream with the real key,
 * streams the answer back as it arrives and records usage for the token's job.
 */
export function createModelProxy(options: ModelProxyOptions): Hono<ProxyEnvironment> {
  const upstreams = new Map<string, UpstreamConfig>();
  for (const [agentType, config] of Object.entries(options.upstreams)) {
    if (!AgentTypeSchema.safeParse(agentType).success) {
      throw new ModelProxyError(
        "invalid_request",
        `agent type "${agentType}" is not a valid path segment; use lower-case letters, digits, ".", "_" and "-"`,
      );
    }
    const parsed = UpstreamConfigSchema.safeParse(config);
    if (!parsed.success) {
      // The issues could quote the key; name only the fields.
      const fields = parsed.error.issues.map((issue) => issue.path.join(".")).join(", ");
      throw new ModelProxyError(
        "invalid_request",
        `the upstream for agent type "${agentType}" is invalid (${fields}); give kind "openai", "anthropic" or "gemini", an http(s) baseUrl and a non-empty apiKey`,
      );
    }
    upstreams.set(agentType, parsed.data);
  }
  const upstreamKeys = [...upstreams.values()].map((upstream) => upstream.apiKey);
  const now = options.now ?? Date.now;
  const fetchUpstream = options.fetch ?? globalThis.fetch;
  const limiter =
    options.rateLimit === false
      ? undefined
      : new TokenBucketLimiter(options.rateLimit ?? DEFAULT_RATE_LIMIT);
  const maxUsageBodyBytes = options.maxUsageBodyBytes ?? 4 * 1024 * 1024;
  const baseLogger = options.logger ?? silentLogger;
  const configuredTypes = [...upstreams.keys()].sort().join(", ") || "none";

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
    const { token, raw } = presentedCredentials(
      context.req.raw.headers,
      new URL(context.req.url).searchParams,
    );
    // Whatever the agent sent as a credential is a secret from here on, even if malformed.
    context.set("secrets", raw);
    const logger = loggerFor(context);
    const agentType = context.req.param("agentType");
    const refuse = (reason: string, fields: LogFields = {}): never => {
      logger.warn("model-provider request refused", { agentType, reason, ...fields });
      throw new ModelProxyError("unauthorized", UNAUTHORIZED_MESSAGE);
    };
    if (token === undefined) return refuse("no_token");
    context.set("secrets", [...raw, token]);
    const verification = await verifyModelToken(
      options.tokens,
      token,
      context.req.header(WireHeader.jobId),
      now(),
    );
    if (!verification.ok) {
      return refuse(verification.reason, { tokenId: verification.record?.id });
    }
    const { record } = verification;
    if (limiter) {
      const decision = limiter.take(record.id, now());
      if (!decision.allowed) {
        logger.warn("model-provider request rate limited", {
          agentType,
          jobId: record.jobId,
          tokenId: record.id,
        });
        return context.json(
          {
            error: {
              code: "rate_limited",
              message: `too many model requests for this token; retry after ${decision.retryAfterSeconds} s`,
            },
          },
          429,
          { "Retry-After": String(decision.retryAfterSeconds) },
        );
      }
    }
    const upstream = upstreams.get(agentType);
    if (!upstream) {
      throw new ModelProxyError(
        "not_found",
        `no upstream is configured for agent type "${agentType}"; configured agent types: ${configuredTypes}`,
      );
    }
    const url = new URL(context.req.url);
    const prefix = `${WirePath.modelProvider}/${agentType}`;
    const restPath = url.pathname.startsWith(prefix) ? url.pathname.slice(prefix.length) : "";
    const method = context.req.method;
    const endpoint = matchEndpoint(upstream.kind, method, restPath);
    if (!endpoint) {
      throw new ModelProxyError(
        "not_found",
        `agent type "${agentType}" forwards only ${endpointLabels(upstream.kind).join(", ")}; ${method} ${restPath || "/"} is not one of them`,
      );
    }

    // Listing models and counting tokens cost nothing; every other request is checked.
    if (options.budgets !== undefined && endpoint !== "models" && endpoint !== "count_tokens") {
      const refusal = await options.budgets.check(record.jobId);
      if (refusal !== null) {
        logger.warn("model-provider request refused: budget reached", {
          agentType,
          jobId: record.jobId,
          tokenId: record.id,
          reason: refusal.message,
        });
        return budgetRefusalResponse(upstream.kind, refusal.message);
      }
    }

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
    const upstreamName = upstream.baseUrl.replace(/\/+$/, "");

    // The agent going away aborts the upstream request, so a dropped stream stops costing tokens.
    const abort = new AbortController();
    const clientSignal = context.req.raw.signal;
    const onClientAbort = () => abort.abort(new Error("the agent closed the connection"));
    clientSignal.addEventListener("abort", onClientAbort, { once: true });
    const detach = () => clientSignal.removeEventListener("abort", onClientAbort);

    const counts = new UsageAccumulator();
    let recorded = false;
    const finish = async (
      status: number,
      outcome: ModelUsageOutcome,
      responseBytes: number,
    ): Promise<void> => {
      if (recorded) return;
      recorded = true;
      detach();
      const usage = counts.counts;
      const entry = {
        jobId: record.jobId,
        agentType,
        upstream: upstreamName,
        upstreamKind: upstream.kind,
        endpoint,
        ...(usage.model === undefined ? {} : { model: usage.model }),
        ...(usage.inputTokens === undefined ? {} : { inputTokens: usage.inputTokens }),
        ...(usage.outputTokens === undefined ? {} : { outputTokens: usage.outputTokens }),
        ...(usage.totalTokens === undefined ? {} : { totalTokens: usage.totalTokens }),
        requestBytes,
        responseBytes,
        status,
        outcome,
      };
      const fields = {
        ...entry,
        tokenId: record.id,
        durationMs: now() - started,
      };
      if (outcome === "completed" && status < 400) logger.info("model-provider request", fields);
      else logger.warn("model-provider request did not complete", fields);
      try {
        await options.usage.record(entry);
      } catch (error) {
        logger.error("recording model usage failed", { error: describeError(error) });
      }
    };

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
      counts,
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
