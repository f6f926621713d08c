import type { BatchRunService, ChangesetPublisher, ExecutorJobs } from "@deckhand/batches";
import type { CodeHostConnection } from "@deckhand/code-hosts";
import type { DbHandle } from "@deckhand/db";
import {
  bearerAuth,
  DEFAULT_MAX_BODY_BYTES,
  type ErrorHandlingOptions,
  errorResponse,
  guardOrigin,
  HttpError,
  installErrorHandling,
  limitBody,
  logRequests,
  type NodeHandler,
  type OriginPolicy,
  type RequestLogEntry,
  securityHeaderSetter,
  securityHeaders,
} from "@deckhand/http-kit";
import type { ModelTokenStore, UpstreamConfig, UsageRecorder } from "@deckhand/model-proxy";
import { createProvidersRouter, type ProviderService } from "@deckhand/providers";
import { redactSecrets } from "@deckhand/secrets";
import { type AgentTurns, type SessionDomain, SessionProcesses } from "@deckhand/sessions";
import { isExecutorApiPath, ServerPath, WirePath } from "@deckhand/wire";
import { Hono } from "hono";
import type { Logger } from "pino";
import { registerApiRoutes, type ServerSpend } from "./api-routes.ts";
import type { ApiTokenStore } from "./api-tokens.ts";
import { batchesErrorToHttp } from "./batches-http-errors.ts";
import { ADMIN_TOKEN_ENV, type ServerConfig } from "./config.ts";
import type { DbUsageRecorder } from "./db-stores.ts";
import {
  executorTokenScope,
  presentsExecutorToken,
  registerExecutorRoutes,
} from "./executor-routes.ts";
import type { ExecutorTokenStore } from "./executor-tokens.ts";
import { limitModelProxyBody, MODEL_PROXY_BODY_LIMIT, mountModelProxy } from "./model-proxy-app.ts";

export { MODEL_PROXY_MAX_BODY_BYTES } from "./model-proxy-app.ts";

import { registerHealthRoute } from "./server-health.ts";
import { type ServerDirectory, withoutServerPaths } from "./server-paths.ts";
import { sessionsErrorToHttp } from "./sessions-http-errors.ts";
import { serveWebUi, WEB_UI_CONTENT_SECURITY_POLICY } from "./web-ui.ts";

export interface ServerAppOptions {
  database: DbHandle;
  /**
   * Which Host names the server answers and which browser origins may act on it; checked before
   * anything else on every route (the UI and the model proxy included).
   */
  originPolicy: OriginPolicy;
  /**
   * Whether /api requests need a bearer token: the admin token or a live API token. False
   * leaves the API open, which only a loopback listener may do.
   */
  requireAuth: boolean;
  /** The configured admin token, if any; stored API tokens are accepted besides it. */
  adminToken: string | null;
  sessions: SessionDomain;
  batches: BatchRunService;
  /** Publishing and tracking of batch changes' pull requests. */
  publishing?: ChangesetPublisher;
  apiTokens: ApiTokenStore;
  /**
   * Executor tokens and the jobs executors claim over HTTP (the executor API); the API is not
   * served when absent.
   */
  executors?: { tokens: ExecutorTokenStore; jobs: ExecutorJobs };
  /** Agent turns: cancel and permission answers, and the backends' health. */
  agentTurns: Pick<AgentTurns, "cancel" | "answerPermission" | "pool" | "health">;
  /** The provider registry; its routes are served when given. */
  providers?: ProviderService;
  /** The local workspace agent and its bearer token: the health check and session processes. */
  agent: { url: string; token: string | null } | null;
  /** Whether the task worker is running; absent when this process runs none. */
  queueRunning?: () => boolean;
  /**
   * True once shutdown began: requests that would start or change work (anything but GET and
   * HEAD under /api) are refused with a 503 that says to send them again once the server is
   * back, since no worker would run them. Reads, and the model proxy that running turns still
   * use, go on.
   */
  shuttingDown?: () => boolean;
  modelUpstreams: Record<string, UpstreamConfig>;
  /** Where changesets are published, listed read-only at /api/code-host-connections. */
  codeHostConnections?: readonly CodeHostConnection[];
  /** Where code host tokens are read from; process.env when absent. */
  environment?: Readonly<Record<string, string | undefined>>;
  /** The largest `/api` request body accepted; http-kit's default (10 MiB) when absent. */
  maxRequestBodyBytes?: number;
  /** Per-token request limit of the model proxy; its default when null or absent. */
  modelProxyRateLimit?: ServerConfig["modelProxyRateLimit"];
  modelTokens: ModelTokenStore;
  modelUsage: UsageRecorder & Pick<DbUsageRecorder, "forJob" | "forJobs">;
  /** Model spend budgets: the proxy refuses what a reached budget covers; the spend routes. */
  spend?: ServerSpend;
  logger: Logger;
  /** How long the agent health check may take before the agent counts as unreachable. */
  agentHealthTimeoutMs?: number;
  /** The built web UI, served at `/` after every server route; none when null or absent. */
  webDir?: string | null;
  /** The fetch used for the agent health check and model upstreams, for tests. */
  fetch?: typeof globalThis.fetch;
  /** The server's own directories (data, working): replaced by their names in API errors. */
  serverPaths?: readonly ServerDirectory[];
}

function isApiPath(path: string): boolean {
  return path === WirePath.serverApi || path.startsWith(`${WirePath.serverApi}/`);
}

/** The control plane's HTTP application: admin auth, health, and the model-provider proxy. */
export function createServerApp(options: ServerAppOptions): Hono {
  return createServerHandlers(options).app;
}

/**
 * The app, and `ahead`, which answers the model proxy's routes on Node's request before the app
 * (for `listen`), doing what the app's middleware does to them with the same functions: security
 * headers, the request log line, the Host/Origin check, the body limit; a request presenting an
 * executor token goes to the app, which refuses it.
 */
export function createServerHandlers(options: ServerAppOptions): { app: Hono; ahead: NodeHandler } {
  const { logger } = options;
  const app = new Hono();
  const errorHandling: ErrorHandlingOptions = {
    redact: (message) => withoutServerPaths(redactSecrets(message), options.serverPaths ?? []),
    onUnexpectedError: (error, context) =>
      logger.error(
        { err: error, method: context.req.method, path: context.req.path },
        "request failed",
      ),
  };
  installErrorHandling(app, errorHandling);
  // The session domain throws its own errors; they get their HTTP status here, at the edge.
  app.onError((error, context) =>
    errorResponse(context, batchesErrorToHttp(sessionsErrorToHttp(error)), errorHandling),
  );

  // Outermost, so a refusal gets them too: what a page of the server may load, and nosniff.
  app.use(securityHeaders(WEB_UI_CONTENT_SECURITY_POLICY));
  const logRequest = (entry: RequestLogEntry) => logger.info(entry, "request");
  app.use(logRequests(logRequest));
  // First of all checks: a rebinding page or another site's page gets nothing, and no body of
  // theirs is read. Curl, the CLI and agents send no Origin and are let through.
  app.use(guardOrigin(options.originPolicy));
  // Before authentication too: an unauthenticated client must not make the server buffer a
  // body of any size either.
  app.use(
    `${WirePath.serverApi}/*`,
    limitBody({
      maxBytes: options.maxRequestBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
      setting: "maxRequestBodyBytes in config.json",
    }),
  );
  app.use(`${WirePath.modelProvider}/*`, limitModelProxyBody());
  app.use(`${WirePath.serverApi}/*`, async (context, next) => {
    const method = context.req.method;
    if (method !== "GET" && method !== "HEAD" && options.shuttingDown?.()) {
      context.header("Retry-After", "5");
      throw new HttpError(
        503,
        "internal",
        "the server is shutting down; send this again once it is back",
      );
    }
    await next();
  });

  // An executor token reaches the executor API only: refused everywhere else, before anything.
  app.use(executorTokenScope());
  if (options.requireAuth) {
    app.use(
      bearerAuth({
        ...(options.adminToken !== null ? { token: options.adminToken } : {}),
        verify: (presented) => options.apiTokens.verify(presented),
        tokenName: "admin or API token",
        envName: ADMIN_TOKEN_ENV,
        // The executor API checks executor tokens itself (executor-routes.ts).
        appliesTo: (path) => isApiPath(path) && !isExecutorApiPath(path),
      }),
    );
  }

  registerHealthRoute(app, options);

  registerApiRoutes(app, {
    batches: options.batches,
    ...(options.publishing ? { publishing: options.publishing } : {}),
    sessions: options.sessions,
    agentTurns: options.agentTurns,
    apiTokens: options.apiTokens,
    usage: options.modelUsage,
    ...(options.spend ? { spend: options.spend } : {}),
    modelUpstreams: options.modelUpstreams,
    codeHostConnections: () => options.codeHostConnections ?? [],
    environment: options.environment ?? process.env,
    processes: new SessionProcesses({
      chats: options.sessions.chats,
      workspaceAgent: options.agent,
    }),
  });
  if (options.executors) {
    registerExecutorRoutes(app, {
      executorTokens: options.executors.tokens,
      executorJobs: options.executors.jobs,
      modelTokens: options.modelTokens,
    });
  }
  if (options.providers) {
    app.route(ServerPath.providers, createProvidersRouter(options.providers, errorHandling));
  }
  // A plain GET of a stream path: the upgrade itself is handled beside the app (see server-http).
  for (const path of [
    ServerPath.batchRunStream,
    ServerPath.sessionActivity,
    ServerPath.sessionStream,
  ]) {
    app.get(path, () => {
      throw new HttpError(
        426,
        "invalid_request",
        "this is a WebSocket endpoint; connect with a WebSocket client",
      );
    });
  }

  const modelProxy = mountModelProxy(app, {
    modelUpstreams: options.modelUpstreams,
    modelTokens: options.modelTokens,
    modelUsage: options.modelUsage,
    ...(options.spend ? { budgets: options.spend.budgets } : {}),
    ...(options.modelProxyRateLimit != null ? { rateLimit: options.modelProxyRateLimit } : {}),
    logger,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  if (options.webDir) serveWebUi(app, options.webDir);

  const direct = modelProxy.direct({
    originPolicy: options.originPolicy,
    bodyLimit: MODEL_PROXY_BODY_LIMIT,
    securityHeaders: securityHeaderSetter(WEB_UI_CONTENT_SECURITY_POLICY),
    logRequest,
  });
  const ahead: NodeHandler = (request, response) =>
    !presentsExecutorToken(request.headers.authorization) && direct(request, response);
  return { app, ahead };
}
