import {
  discardBody,
  HttpError,
  parseJsonBody,
  parsePathParameters,
  parseQuery,
} from "@deckhand/http-kit";
import type { AgentTurns, SessionService } from "@deckhand/sessions";
import { type AnswerPermissionRequest, serverRoutes, type UsageResponse } from "@deckhand/wire";
import type { Context, Hono } from "hono";
import type { z } from "zod";
import type { ApiTokenStore } from "./api-tokens.ts";
import type { DbUsageRecorder } from "./db-stores.ts";

/** What a handler gets: validated path parameters, query and body. */
interface RouteInput {
  params: Record<string, string>;
  query: unknown;
  body: unknown;
  context: Context;
}

/** A handler answers with the body for the route's success status (or a Response as is). */
type RouteHandler = (input: RouteInput) => Promise<unknown>;

export interface ApiRouteServices {
  sessions: SessionService;
  /** Runs agent turns; absent when this process runs none (cancel and answers still go out). */
  agentTurns: Pick<AgentTurns, "cancel" | "answerPermission" | "pool">;
  apiTokens: ApiTokenStore;
  usage: Pick<DbUsageRecorder, "forJob">;
}

/** Every route in `serverRoutes` except health and the WebSocket stream, by operation id. */
function handlers(services: ApiRouteServices): Record<string, RouteHandler> {
  const { sessions, apiTokens, usage, agentTurns } = services;
  return {
    createProject: ({ body }) => sessions.createProject(body as never),
    listProjects: async () => ({ projects: await sessions.listProjects() }),
    getProject: ({ params }) => sessions.getProject(params.project_id!),
    createSession: ({ params, body }) => sessions.createSession(params.project_id!, body as never),
    listSessions: async ({ params }) => ({
      sessions: await sessions.listSessions(params.project_id!),
    }),
    getSession: ({ params }) => sessions.getSession(params.session_id!),
    closeSession: async ({ params, query }) => {
      const closed = await sessions.closeSession(
        params.session_id!,
        (query as { force?: boolean }).force ?? false,
      );
      await agentTurns.pool.closeSession(closed.id);
      return closed;
    },
    cancelAgentTurn: async ({ params }) => {
      await sessions.getSession(params.session_id!);
      await agentTurns.cancel(params.session_id!, params.agent!);
      return { delivered: true };
    },
    answerPermission: async ({ params, body }) => {
      await sessions.getSession(params.session_id!);
      await agentTurns.answerPermission(
        params.session_id!,
        params.agent!,
        params.request_id!,
        body as AnswerPermissionRequest,
      );
      return { delivered: true };
    },
    createChat: ({ params, body }) => sessions.createChat(params.session_id!, body as never),
    listChats: async ({ params }) => ({ chats: await sessions.listChats(params.session_id!) }),
    createMessage: ({ params, body }) => sessions.createMessage(params.chat_id!, body as never),
    listMessages: async ({ params }) => ({
      messages: await sessions.listMessages(params.chat_id!),
    }),
    listPendingChanges: async ({ params, query }) => ({
      pending_changes: await sessions.listPendingChanges(
        params.session_id!,
        (query as { status?: "pending" | "applied" | "rejected" }).status,
      ),
    }),
    applyPendingChange: async ({ params }) => {
      const { pendingChange, commit } = await sessions.applyPendingChange(
        params.pending_change_id!,
      );
      return { pending_change: pendingChange, commit };
    },
    rejectPendingChange: async ({ params }) => ({
      pending_change: await sessions.rejectPendingChange(params.pending_change_id!),
    }),
    getUsage: async ({ query }) => {
      const jobId = (query as { job_id: string }).job_id;
      const rows = await usage.forJob(jobId);
      const sum = (pick: (row: (typeof rows)[number]) => number | null) =>
        rows.reduce((total, row) => total + (pick(row) ?? 0), 0);
      const answer: UsageResponse = {
        job_id: jobId,
        usage: rows.map((row) => ({
          job_id: row.jobId,
          agent_type: row.agentType,
          upstream: row.upstream,
          upstream_kind: row.upstreamKind as UsageResponse["usage"][number]["upstream_kind"],
          endpoint: row.endpoint as UsageResponse["usage"][number]["endpoint"],
          model: row.model,
          input_tokens: row.inputTokens,
          output_tokens: row.outputTokens,
          total_tokens: row.totalTokens,
          request_bytes: row.requestBytes,
          response_bytes: row.responseBytes,
          status: row.status,
          outcome: row.outcome as UsageResponse["usage"][number]["outcome"],
          created_at: row.createdAt.toISOString(),
        })),
        totals: {
          requests: rows.length,
          input_tokens: sum((row) => row.inputTokens),
          output_tokens: sum((row) => row.outputTokens),
          total_tokens: sum((row) => row.totalTokens),
          request_bytes: sum((row) => row.requestBytes),
          response_bytes: sum((row) => row.responseBytes),
        },
      };
      return answer;
    },
    createApiToken: async ({ body }) => {
      const { apiToken, token } = await apiTokens.create((body as { name: string }).name);
      return { api_token: apiToken, token };
    },
    listApiTokens: async () => ({ api_tokens: await apiTokens.list() }),
    revokeApiToken: async ({ params }) => {
      if (!(await apiTokens.revoke(params.token_id!))) {
        throw new HttpError(
          404,
          "not_found",
          `no API token with id ${JSON.stringify(params.token_id)}`,
        );
      }
      return null;
    },
  };
}

/** Routes served elsewhere: health in the app, the stream by the upgrade, providers by their router. */
const SERVED_ELSEWHERE = new Set([
  "getHealth",
  "streamSession",
  // The providers router from @deckhand/providers serves these under ServerPath.providers.
  "getProvidersSnapshot",
  "getProvidersConfig",
  "patchProvidersConfig",
  "refreshProviders",
  "getProviderDiagnostic",
]);

/**
 * Registers the server API from the route table in @deckhand/wire: each request's query and body
 * are validated with the route's schemas before the handler runs. A route without a handler
 * is a start-up error, so the OpenAPI document never lists a route the server lacks.
 */
export function registerApiRoutes(app: Hono, services: ApiRouteServices): void {
  const byOperation = handlers(services);
  for (const route of serverRoutes) {
    if (SERVED_ELSEWHERE.has(route.operationId)) continue;
    const handler = byOperation[route.operationId];
    if (!handler) throw new Error(`no handler for server route ${route.operationId}`);
    app.on(route.method.toUpperCase(), route.path, async (context) => {
      // The body first: an answer sent while the body is unread can reach the client as a
      // connection reset instead.
      let body: unknown;
      if (route.body) body = await parseJsonBody(context, route.body as z.ZodType);
      else await discardBody(context);
      const params = parsePathParameters(context);
      const query = route.query ? parseQuery(context, route.query as z.ZodType) : {};
      const result = await handler({ params, query, body, context });
      if (result instanceof Response) return result;
      if (route.success.schema === null) return context.body(null, route.success.status as 204);
      return context.json(result as object, route.success.status as 200);
    });
  }
}
