// The executor API and the admin routes of executor tokens, served from the wire's route table.
// An executor token reaches the executor API and nothing else: any other route (the rest of the
// API, the model proxy, the web UI) refuses it before anything runs, whatever the server's auth
// setting; the executor API takes nothing but a live executor token, even on a loopback server.
import { type ExecutorJobs, executorName, workspaceJobId } from "@deckhand/batches";
import { bearerTokenOf, discardBody, HttpError } from "@deckhand/http-kit";
import {
  batchJobModelProviderAccess,
  type ModelTokenStore,
  revokeModelToken,
  verifyModelToken,
} from "@deckhand/model-proxy";
import {
  type ExecutorLease,
  isExecutorApiPath,
  type ServerOperationId,
  type ServerRouteOf,
  serverRoutes,
  WireEnv,
  WireHeader,
  WirePath,
} from "@deckhand/wire";
import type { Context, Hono, MiddlewareHandler } from "hono";
import { EXECUTOR_TOKEN_PREFIX, type ExecutorTokenStore } from "./executor-tokens.ts";
import { type RouteHandler, serveRoute } from "./serve-route.ts";

/** The routes this module serves: the executor API and the executor tokens' admin routes. */
export const EXECUTOR_OPERATIONS = [
  "createExecutorToken",
  "listExecutorTokens",
  "revokeExecutorToken",
  "claimExecutorJob",
  "heartbeatExecutorJobs",
  "appendExecutorJobEvents",
  "completeExecutorJob",
  "failExecutorJob",
  "leaseExecutorModelToken",
  "releaseExecutorModelToken",
  "getExecutorCachedStep",
  "putExecutorCachedStep",
  "keptExecutorCheckouts",
] as const satisfies readonly ServerOperationId[];

type ExecutorOperationId = (typeof EXECUTOR_OPERATIONS)[number];

export interface ExecutorRouteServices {
  executorTokens: ExecutorTokenStore;
  executorJobs: ExecutorJobs;
  /** Where the model tokens of claimed jobs are minted: the proxy's own store. */
  modelTokens: ModelTokenStore;
}

/** The executor token each executor request was authenticated with, by request. */
const tokenIds = new WeakMap<Request, string>();

function tokenIdOf(context: Context): string {
  const id = tokenIds.get(context.req.raw);
  // The executor API's middleware runs before every handler here; reaching this is a bug.
  if (id === undefined) throw new Error("an executor route ran without its token check");
  return id;
}

/**
 * Refuses an executor token anywhere but the executor API, before authentication and whatever
 * `requireAuth` says, so a loopback server without auth does not let it through either.
 */
export function executorTokenScope(): MiddlewareHandler {
  return async (context, next) => {
    if (
      presentsExecutorToken(context.req.header(WireHeader.authorization)) &&
      !isExecutorApiPath(context.req.path)
    ) {
      // Read (within the body limit) before answering: an answer sent while the body is unread
      // can reach the client as a connection reset instead.
      await discardBody(context);
      throw new HttpError(
        401,
        "unauthorized",
        `an executor token reaches only the executor API (${WirePath.executorApi}/…); ${context.req.method} ${context.req.path} needs an admin or API token`,
      );
    }
    await next();
  };
}

/** Whether an Authorization header presents an executor token (refused off the executor API). */
export function presentsExecutorToken(authorization: string | undefined): boolean {
  return bearerTokenOf(authorization)?.startsWith(EXECUTOR_TOKEN_PREFIX) ?? false;
}

/** Requires a live executor token on the executor API (a revoked one is refused at once). */
function executorAuth(tokens: ExecutorTokenStore): MiddlewareHandler {
  return async (context, next) => {
    const presented = bearerTokenOf(context.req.header(WireHeader.authorization));
    const id = presented === null ? null : await tokens.verify(presented);
    if (id === null) {
      await discardBody(context);
      context.header("WWW-Authenticate", "Bearer");
      throw new HttpError(
        401,
        "unauthorized",
        `${context.req.method} ${context.req.path} needs a live executor token: send "${WireHeader.authorization}: Bearer <token>" with the token from ${WireEnv.executorToken} (an admin makes one with "deckhand executor-tokens create"; a revoked one is refused)`,
      );
    }
    tokenIds.set(context.req.raw, id);
    await next();
  };
}

type ExecutorRouteHandlers = {
  [Id in ExecutorOperationId]: RouteHandler<ServerRouteOf<Id>>;
};

function handlers(services: ExecutorRouteServices): ExecutorRouteHandlers {
  const { executorTokens, executorJobs, modelTokens } = services;
  /** The lease of a request, checked to be one of the calling token's executors. */
  const own = (context: Context, lease: ExecutorLease): ExecutorLease => {
    executorJobs.checkOwner(lease, tokenIdOf(context));
    return lease;
  };
  return {
    createExecutorToken: async ({ body }) => {
      const { executorToken, token } = await executorTokens.create(body.name);
      return { executor_token: executorToken, token };
    },
    listExecutorTokens: async () => ({ executor_tokens: await executorTokens.list() }),
    revokeExecutorToken: async ({ params }) => {
      if (!(await executorTokens.revoke(params.token_id))) {
        throw new HttpError(
          404,
          "not_found",
          `no executor token with id ${JSON.stringify(params.token_id)}`,
        );
      }
      return null;
    },
    claimExecutorJob: async ({ body, context }) => ({
      job: await executorJobs.claim(
        executorName(body.executor_id, tokenIdOf(context)),
        body.lease_ms,
      ),
    }),
    heartbeatExecutorJobs: async ({ body, context }) => {
      for (const lease of body.leases) own(context, lease);
      return executorJobs.heartbeat(body.leases, body.lease_ms);
    },
    appendExecutorJobEvents: async ({ body, context }) => {
      await executorJobs.appendEvents(own(context, body.lease), body.events);
      return null;
    },
    completeExecutorJob: async ({ body, context }) => {
      const { lease, ...end } = body;
      await executorJobs.complete(own(context, lease), end);
      return null;
    },
    failExecutorJob: async ({ body, context }) => {
      await executorJobs.fail(own(context, body.lease), body.error, body.release);
      return null;
    },
    leaseExecutorModelToken: async ({ body, context }) => {
      const lease = own(context, body.lease);
      await executorJobs.checkHeld(lease);
      // The proxy at the address the executor reached this server at: its steps reach it there.
      const access = batchJobModelProviderAccess({
        modelTokens,
        serverUrl: () => new URL(context.req.url).origin,
      });
      const minted = await access.lease(workspaceJobId(lease.workspace_id));
      return {
        base_url: minted.baseUrl,
        token: minted.token,
        job_id: minted.jobId,
        expires_at: minted.expiresAt.toISOString(),
      };
    },
    releaseExecutorModelToken: async ({ body, context }) => {
      const lease = own(context, body.lease);
      const jobId = workspaceJobId(lease.workspace_id);
      const verified = await verifyModelToken(modelTokens, body.token, jobId);
      if (!verified.ok && verified.reason !== "revoked" && verified.reason !== "expired") {
        throw new HttpError(400, "invalid_request", `token: not a model token of job ${jobId}`);
      }
      await revokeModelToken(modelTokens, body.token);
      return null;
    },
    getExecutorCachedStep: async ({ query }) => ({
      result: await executorJobs.cachedStep(query.key),
    }),
    keptExecutorCheckouts: async ({ body }) => ({
      kept: await executorJobs.keptCheckouts(body.checkouts),
    }),
    putExecutorCachedStep: async ({ body, context }) => {
      await executorJobs.cacheStep(own(context, body.lease), body.key, body.result);
      return null;
    },
  };
}

const executorOperations: ReadonlySet<string> = new Set(EXECUTOR_OPERATIONS);

function servedHere(
  route: (typeof serverRoutes)[number],
): route is ServerRouteOf<ExecutorOperationId> {
  return executorOperations.has(route.operationId);
}

/**
 * Serves the executor API (behind its own token check) and the executor tokens' admin routes
 * (behind the server's admin auth, like every other /api route).
 */
export function registerExecutorRoutes(app: Hono, services: ExecutorRouteServices): void {
  app.use(`${WirePath.executorApi}/*`, executorAuth(services.executorTokens));
  const byOperation = handlers(services);
  const serve = <Id extends ExecutorOperationId>(id: Id, route: ServerRouteOf<Id>): void =>
    serveRoute(app, route, byOperation[id]);
  for (const route of serverRoutes) {
    if (servedHere(route)) serve(route.operationId, route);
  }
}
