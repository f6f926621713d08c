import { errorResponse, httpStatusOf, installErrorHandling } from "@deckhand/http-kit";
import { describeError, redactSecrets } from "@deckhand/secrets";
import { WirePath } from "@deckhand/wire";
import { type Context, Hono } from "hono";
import { type ModelProxyLogger, redactingLogger, silentLogger } from "./logger.ts";
import { ModelProxyError } from "./model-proxy-error.ts";
import type { ModelTokenStore } from "./model-token.ts";
import { ProxyUpstreams } from "./proxy-upstreams.ts";
import type { RateLimitOptions } from "./rate-limit.ts";
import {
  type ProxyContext,
  type ProxyEnvironment,
  RequestAuthentication,
} from "./request-authentication.ts";
import { type BudgetCheck, RequestBudget } from "./request-budget.ts";
import { RequestRateLimit } from "./request-rate-limit.ts";
import { ForwardedRequest, type ForwardingOptions } from "./upstream-forwarding.ts";
import { fetchTransport, nodeHttpTransport } from "./upstream-transport.ts";
import type { UpstreamConfig } from "./upstreams.ts";
import type { UsageRecorder } from "./usage.ts";

export interface ModelProxyOptions {
  /** Agent type (the path segment after the proxy's path) → where its requests go. */
  upstreams: Record<string, UpstreamConfig>;
  tokens: ModelTokenStore;
  usage: UsageRecorder;
  /** Per-token request limit; `false` turns it off. Defaults to a burst of 60, 2 per second. */
  rateLimit?: RateLimitOptions | false;
  logger?: ModelProxyLogger;
  /**
   * The fetch used to reach upstreams, for tests. Without it the proxy uses node:http(s) with
   * keep-alive connections, and passes the answer through without a web-stream layer.
   */
  fetch?: typeof globalThis.fetch;
  /** The clock, for tests. */
  now?: () => number;
  /** Non-streaming bodies up to this size are parsed for usage; larger ones count bytes only. */
  maxUsageBodyBytes?: number;
  /**
   * Spend budgets (ModelBudgets): asked before each request that costs tokens is forwarded; a
   * reached budget is answered with 402 and the message, in the upstream's error shape.
   */
  budgets?: BudgetCheck;
}

/**
 * The model-provider proxy: a hono app serving `${WirePath.modelProvider}/<agent-type>/...`.
 * A request is authenticated by its scoped token and job id (RequestAuthentication), held to
 * its token's rate limit (RequestRateLimit), routed to its agent type's upstream
 * (ProxyUpstreams), refused once a spend budget covering its job is reached (RequestBudget),
 * and forwarded with the real key, its answer streamed back as it arrives and its usage
 * recorded for the token's job (ForwardedRequest).
 */
class ModelProxy {
  readonly app = new Hono<ProxyEnvironment>().basePath(WirePath.modelProvider);
  readonly #upstreams: ProxyUpstreams;
  readonly #authentication: RequestAuthentication;
  readonly #rateLimit: RequestRateLimit;
  readonly #budget: RequestBudget;
  readonly #forwarding: ForwardingOptions;
  readonly #logger: ModelProxyLogger;
  readonly #now: () => number;

  constructor(options: ModelProxyOptions) {
    this.#upstreams = new ProxyUpstreams(options.upstreams);
    const now = options.now ?? Date.now;
    this.#now = now;
    this.#authentication = new RequestAuthentication(options.tokens, now);
    this.#rateLimit = new RequestRateLimit(options.rateLimit, now);
    this.#budget = new RequestBudget(options.budgets);
    this.#forwarding = {
      transport: options.fetch ? fetchTransport(options.fetch) : nodeHttpTransport(),
      usage: options.usage,
      now,
      maxUsageBodyBytes: options.maxUsageBodyBytes ?? 4 * 1024 * 1024,
    };
    this.#logger = options.logger ?? silentLogger;

    installErrorHandling(this.app as unknown as Hono);
    this.app.onError((error, context) => this.#errorResponse(error, context));
    this.app.all("/:agentType/*", (context) => this.#handle(context));
    this.app.all("/:agentType", () => {
      throw new ModelProxyError(
        "not_found",
        `append the provider's path to the agent type's URL, e.g. ${WirePath.modelProvider}/<agent-type>/responses; configured agent types: ${this.#upstreams.configuredTypes}`,
      );
    });
  }

  /** The real keys and whatever the request presented as a credential. */
  #secretsOf(context: ProxyContext): string[] {
    return [...this.#upstreams.keys, ...(context.get("secrets") ?? [])];
  }

  #loggerFor(context: ProxyContext): ModelProxyLogger {
    return redactingLogger(this.#logger, () => this.#secretsOf(context));
  }

  async #handle(context: Context<ProxyEnvironment, "/:agentType/*">): Promise<Response> {
    const started = this.#now();
    const logger = this.#loggerFor(context);
    const agentType = context.req.param("agentType");
    // Parsed once: authentication reads its query, routing its path, forwarding its search.
    const url = new URL(context.req.url);
    const { token, record } = await this.#authentication.authenticate(
      context,
      url,
      agentType,
      logger,
    );
    const refusal = this.#rateLimit.refusal(context, agentType, record, logger);
    if (refusal !== null) return refusal;
    const route = this.#upstreams.route(agentType, context.req.method, url);
    const overBudget = await this.#budget.refusal(route, record, logger);
    if (overBudget !== null) return overBudget;
    const request = {
      token,
      record,
      route,
      url,
      started,
      logger,
      secrets: () => this.#secretsOf(context),
    };
    return new ForwardedRequest(context, request, this.#forwarding).forward();
  }

  #errorResponse(error: Error, context: ProxyContext): Response | Promise<Response> {
    if (ModelProxyError.isInstance(error)) {
      const status = httpStatusOf(error.code);
      const message = redactSecrets(error.message, this.#secretsOf(context));
      return context.json({ error: { code: error.code, message } }, status);
    }
    const logger = this.#loggerFor(context);
    return errorResponse(context, error, {
      onUnexpectedError: (unexpected) =>
        logger.error("model-provider proxy failed", {
          path: context.req.path,
          error: describeError(unexpected),
        }),
    });
  }
}

/** The model-provider proxy's hono app; its routes already start with `/model-provider`. */
export function createModelProxy(options: ModelProxyOptions): Hono<ProxyEnvironment> {
  return new ModelProxy(options).app;
}
