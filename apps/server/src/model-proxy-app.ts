// The model-provider proxy's routes, as `deckhand up`'s app serves them and as the CLI's
// batch-only runner serves them alone, on a loopback listener it starts only when a step of its
// run first needs the proxy (a codingAgent or acp step's model token).
import {
  type BodyLimitOptions,
  guardOrigin,
  limitBody,
  type NodeHandler,
  type OriginPolicy,
} from "@deckhand/http-kit";
import {
  createModelProxyRoutes,
  type ModelBudgets,
  type ModelProxyLogger,
  type ModelProxyRoutes,
  type ModelTokenStore,
  type UpstreamConfig,
  type UsageRecorder,
} from "@deckhand/model-proxy";
import { WirePath } from "@deckhand/wire";
import { Hono } from "hono";
import type { Logger } from "pino";
import type { ServerConfig } from "./config.ts";

/**
 * The largest request the model proxy forwards: 32 MiB, the request size limit of the Anthropic
 * Messages API (OpenAI's is larger still), since an agent's request carries its whole
 * conversation, images included, and a bigger one would be refused upstream anyway.
 */
export const MODEL_PROXY_MAX_BODY_BYTES = 32 * 1024 * 1024;

export interface ModelProxyRoutesOptions {
  modelUpstreams: Record<string, UpstreamConfig>;
  modelTokens: ModelTokenStore;
  modelUsage: UsageRecorder;
  /** The proxy refuses what a reached budget covers. */
  budgets?: ModelBudgets;
  rateLimit?: NonNullable<ServerConfig["modelProxyRateLimit"]>;
  logger: Logger;
  fetch?: typeof globalThis.fetch;
}

/** pino takes fields first; the proxy's logger interface takes the message first. */
function proxyLogger(logger: Logger): ModelProxyLogger {
  return {
    info: (message, fields) => logger.info(fields ?? {}, message),
    warn: (message, fields) => logger.warn(fields ?? {}, message),
    error: (message, fields) => logger.error(fields ?? {}, message),
  };
}

/** The body limit of the proxy's requests (before anything reads a body). */
export const MODEL_PROXY_BODY_LIMIT: BodyLimitOptions = { maxBytes: MODEL_PROXY_MAX_BODY_BYTES };

/** The body limit of the proxy's requests, as the app's middleware. */
export function limitModelProxyBody() {
  return limitBody(MODEL_PROXY_BODY_LIMIT);
}

/**
 * The proxy at `WirePath.modelProvider` and below, in the app; its `direct` handler answers the
 * same routes on Node's request ahead of the app (see `listen`).
 */
export function mountModelProxy(app: Hono, options: ModelProxyRoutesOptions): ModelProxyRoutes {
  const routes = createModelProxyRoutes({
    upstreams: options.modelUpstreams,
    tokens: options.modelTokens,
    usage: options.modelUsage,
    ...(options.budgets ? { budgets: options.budgets } : {}),
    ...(options.rateLimit != null ? { rateLimit: options.rateLimit } : {}),
    logger: proxyLogger(options.logger.child({ component: "model-proxy" })),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const proxy = routes.app;
  // The proxy keeps its own error handling (redaction, its 401 text), so hand it the request whole.
  app.all(WirePath.modelProvider, (context) => proxy.fetch(context.req.raw));
  app.all(`${WirePath.modelProvider}/*`, (context) => proxy.fetch(context.req.raw));
  return routes;
}

/**
 * The proxy alone, as an app: the origin guard first (a rebinding page gets nothing), then the
 * body limit and the proxy's routes; any other path is a 404. `ahead` answers the proxy's routes
 * on Node's request with the same guard and limit, for `listen`.
 */
export function createModelProxyApp(
  originPolicy: OriginPolicy,
  options: ModelProxyRoutesOptions,
): { app: Hono; ahead: NodeHandler } {
  const app = new Hono();
  app.use(guardOrigin(originPolicy));
  app.use(`${WirePath.modelProvider}/*`, limitModelProxyBody());
  const routes = mountModelProxy(app, options);
  return { app, ahead: routes.direct({ originPolicy, bodyLimit: MODEL_PROXY_BODY_LIMIT }) };
}
