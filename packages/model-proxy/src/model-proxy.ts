import {
  errorAnswer,
  httpStatusOf,
  installErrorHandling,
  type NodeHandler,
} from "@deckhand/http-kit";
import { describeError, redactSecrets } from "@deckhand/secrets";
import { WirePath } from "@deckhand/wire";
import { type Context, Hono } from "hono";
import { type DirectEdge, directProxyHandler } from "./direct-handler.ts";
import { type ModelProxyLogger, redactingLogger, silentLogger } from "./logger.ts";
import { ModelProxyError } from "./model-proxy-error.ts";
import type { ModelTokenStore } from "./model-token.ts";
import { ProxyUpstreams } from "./proxy-upstreams.ts";
import type { RateLimitOptions } from "./rate-limit.ts";
import {
  type ProxyContext,
  type ProxyEnvironment,
  type ProxyExchange,
  RequestAuthentication,
} from "./request-authentication.ts";
import { type BudgetCheck, RequestBudget } from "./request-budget.ts";
import { RequestRateLimit } from "./request-rate-limit.ts";
import {
  type AgentAnswer,
  answerResponse,
  ForwardedRequest,
  type ForwardingOptions,
} from "./upstream-forwarding.ts";
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
export class ModelProxy {
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
  secretsOf(presented: readonly string[]): string[] {
    return [...this.#upstreams.keys, ...presented];
  }

  /** The proxy's logger for one request: nothing it presented reaches the log. */
  loggerFor(exchange: { secrets: readonly string[] }): ModelProxyLogger {
    return redactingLogger(this.#logger, () => this.secretsOf(exchange.secrets));
  }

  async #handle(context: Context<ProxyEnvironment, "/:agentType/*">): Promise<Response> {
    const raw = context.req.raw;
    const exchange: ProxyExchange = {
      method: raw.method,
      // Parsed once: authentication reads its query, routing its path, forwarding its search.
      url: new URL(raw.url),
      headers: raw.headers,
      body: async () => new Uint8Array(await raw.arrayBuffer()),
      signal: raw.signal,
      // Kept on the context, where the error handler finds them.
      get secrets() {
        return context.get("secrets") ?? [];
      },
      set secrets(presented) {
        context.set("secrets", presented);
      },
    };
    const answer = await this.serve(exchange, context.req.param("agentType"));
    return answer instanceof Response ? answer : answerResponse(answer);
  }

  /**
   * One request, authenticated, held to its limits, routed and forwarded: a refusal's answer, or
   * the upstream's answer to relay. Throws a ModelProxyError for what `errorAnswer` answers.
   */
  async serve(exchange: ProxyExchange, agentType: string): Promise<Response | AgentAnswer> {
    const started = this.#now();
    const logger = this.loggerFor(exchange);
    const { url } = exchange;
    const { token, record } = await this.#authentication.authenticate(exchange, agentType, logger);
    const refusal = this.#rateLimit.refusal(agentType, record, logger);
    if (refusal !== null) return refusal;
    const route = this.#upstreams.route(agentType, exchange.method, url);
    const overBudget = await this.#budget.refusal(route, record, logger);
    if (overBudget !== null) return overBudget;
    const request = {
      token,
      record,
      route,
      url,
      started,
      logger,
      secrets: () => this.secretsOf(exchange.secrets),
    };
    return new ForwardedRequest(exchange, request, this.#forwarding).forward();
  }

  /**
   * What an error is answered with: a ModelProxyError its status and its message without any
   * secret of the request; anything else a 500 that says nothing of it, its details logged.
   */
  errorAnswer(error: unknown, exchange: { secrets: readonly string[] }, path: string) {
    if (ModelProxyError.isInstance(error)) {
      const status = httpStatusOf(error.code);
      const message = redactSecrets(error.message, this.secretsOf(exchange.secrets));
      return { status, body: { error: { code: error.code, message } } };
    }
    const logger = this.loggerFor(exchange);
    return errorAnswer(error, {
      redact: (message) => redactSecrets(message, this.secretsOf(exchange.secrets)),
      onUnexpectedError: (unexpected) =>
        logger.error("model-provider proxy failed", { path, error: describeError(unexpected) }),
    });
  }

  #errorResponse(error: Error, context: ProxyContext): Response | Promise<Response> {
    const answer = this.errorAnswer(
      error,
      { secrets: context.get("secrets") ?? [] },
      context.req.path,
    );
    return context.json(answer.body, answer.status);
  }
}

/** The model-provider proxy's hono app; its routes already start with `/model-provider`. */
export function createModelProxy(options: ModelProxyOptions): Hono<ProxyEnvironment> {
  return new ModelProxy(options).app;
}

/** One proxy, served two ways: as a hono app, and on Node's request ahead of an app. */
export interface ModelProxyRoutes {
  /** The proxy's hono app, as `createModelProxy` makes it (in-process requests, odd paths). */
  app: Hono<ProxyEnvironment>;
  /**
   * A Node handler for `listen`'s `ahead` that answers the proxy's routes itself, doing what the
   * app around it does to them (`edge`), and streams answers straight to the agent's socket.
   */
  direct(edge: DirectEdge): NodeHandler;
}

export function createModelProxyRoutes(options: ModelProxyOptions): ModelProxyRoutes {
  const proxy = new ModelProxy(options);
  return { app: proxy.app, direct: (edge) => directProxyHandler(proxy, edge) };
}
