import type { BatchRunService, BatchSpend, ChangesetPublisher } from "@deckhand/batches";
import { type CodeHostConnection, describeConnection } from "@deckhand/code-hosts";
import { HttpError } from "@deckhand/http-kit";
import {
  describeUpstreams,
  jobUsageReport,
  type ModelBudgets,
  sessionUsageReport,
  type UpstreamConfig,
} from "@deckhand/model-proxy";
import type { AgentTurns, SessionDomain, SessionProcesses } from "@deckhand/sessions";
import {
  type ServerOperationId,
  type ServerRouteEntry,
  type ServerRouteOf,
  serverRoutes,
} from "@deckhand/wire";
import type { Hono } from "hono";
import type { ApiTokenStore } from "./api-tokens.ts";
import type { DbUsageRecorder } from "./db-stores.ts";
import { EXECUTOR_OPERATIONS } from "./executor-routes.ts";
import { type RouteHandler, serveRoute } from "./serve-route.ts";
import type { SessionBudgetScopes } from "./session-budget-scopes.ts";

/** Routes served elsewhere: health in the app, the stream by the upgrade, providers by their router. */
const SERVED_ELSEWHERE = [
  "getHealth",
  "streamSession",
  "streamBatchRun",
  "streamSessionActivity",
  // The providers router from @deckhand/providers serves these under ServerPath.providers.
  "getProvidersSnapshot",
  "getProvidersConfig",
  "patchProvidersConfig",
  "refreshProviders",
  "getProviderDiagnostic",
  // The executor API and executor tokens: executor-routes.ts.
  ...EXECUTOR_OPERATIONS,
] as const satisfies readonly ServerOperationId[];

/** The routes this module serves, by operation id. */
type HandledOperationId = Exclude<ServerOperationId, (typeof SERVED_ELSEWHERE)[number]>;

/**
 * A handler for each route served here, typed from its route: a missing or an extra one is a
 * compile error, so the OpenAPI document never lists a route the server lacks.
 */
type RouteHandlers = { [Id in HandledOperationId]: RouteHandler<ServerRouteOf<Id>> };

/** The model budgets and the scopes of batch runs and sessions they count against. */
export interface ServerSpend {
  budgets: ModelBudgets;
  batches: BatchSpend;
  sessions: SessionBudgetScopes;
}

export interface ApiRouteServices {
  sessions: SessionDomain;
  /** Runs agent turns; absent when this process runs none (cancel and answers still go out). */
  agentTurns: Pick<AgentTurns, "cancel" | "answerPermission" | "pool">;
  apiTokens: ApiTokenStore;
  usage: Pick<DbUsageRecorder, "forJob" | "forJobs">;
  /** Model spend against budgets; absent in some tests. */
  spend?: ServerSpend;
  /** The model proxy's upstreams by agent type, for the read-only view (never their keys). */
  modelUpstreams: Record<string, UpstreamConfig>;
  /** Where changesets are published, for the read-only view (never their tokens). */
  codeHostConnections: () => readonly CodeHostConnection[];
  /** Where code host tokens are read from: whether each is set is reported, never its value. */
  environment: Readonly<Record<string, string | undefined>>;
  batches: BatchRunService;
  /** Pull requests of batch changes: state, stats, bulk operations; absent in some tests. */
  publishing?: ChangesetPublisher;
  /** The processes of sessions, through the workspace agent. */
  processes: SessionProcesses;
}

/** A path parameter that must be a step index: anything else names no step (404). */
function stepIndexOf(value: string): number {
  if (!/^\d{1,6}$/.test(value)) {
    throw new HttpError(
      404,
      "not_found",
      `no step ${JSON.stringify(value)}; steps are numbered from 0`,
    );
  }
  return Number(value);
}

/** Changeset ids are UUIDs; anything else names none (404, not a database error). */
function idOf(value: string, what: string): string {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)) {
    throw new HttpError(404, "not_found", `no ${what} with id ${JSON.stringify(value)}`);
  }
  return value.toLowerCase();
}

/** Every route in `serverRoutes` except health and the WebSocket stream, by operation id. */
function handlers(services: ApiRouteServices): RouteHandlers {
  const { apiTokens, usage, agentTurns, batches, processes } = services;
  const { projects, sessions, chats, messages, pendingChanges, agentSessions } = services.sessions;
  const publishing = () => {
    if (services.publishing === undefined) {
      throw new HttpError(503, "internal", "publishing is not set up in this server");
    }
    return services.publishing;
  };
  const spend = () => {
    if (services.spend === undefined) {
      throw new HttpError(503, "internal", "model budgets are not set up in this server");
    }
    return services.spend;
  };
  return {
    getBatchChangeRollout: ({ params }) => publishing().rollout(params.name),
    getBatchRunSpend: ({ params }) => spend().batches.runSpend(params.batch_run_id),
    getSessionSpend: async ({ params }) => {
      await sessions.get(params.session_id);
      const { budgets, sessions: scopes } = spend();
      const scope = budgets.withServerLimit(await scopes.sessionScope(params.session_id));
      return {
        session_id: params.session_id,
        session: await budgets.status(scope),
        day: await budgets.status(budgets.dayScope()),
        currency: budgets.ledger.prices.currency,
      };
    },
    getBudgets: async () => {
      const { budgets } = spend();
      return {
        limits: budgets.limits(),
        day: await budgets.status(budgets.dayScope()),
        currency: budgets.ledger.prices.currency,
        priced_models: budgets.ledger.prices.models(),
      };
    },
    listBatchChanges: async () => ({ batch_changes: await batches.listBatchChanges() }),
    getBatchChange: ({ params }) => publishing().getBatchChange(params.name),
    refreshBatchChange: async ({ params }) => {
      const service = publishing();
      await service.getBatchChange(params.name);
      await service.refresh({ batchChange: params.name });
      return service.getBatchChange(params.name);
    },
    bulkBatchChangeChangesets: async ({ params, body }) => {
      const service = publishing();
      await service.getBatchChange(params.name);
      return service.bulk(params.name, body);
    },
    listChangesetEvents: async ({ params }) => ({
      events: await publishing().listEvents(idOf(params.changeset_id, "changeset")),
    }),
    createBatchRun: ({ body }) => batches.createRun(body),
    listBatchRuns: async ({ query }) => ({ batch_runs: await batches.listRuns(query) }),
    getBatchRun: ({ params }) => batches.getRun(params.batch_run_id),
    listBatchRunWorkspaces: async ({ params }) => ({
      workspaces: await batches.listWorkspaces(params.batch_run_id),
    }),
    listBatchRunChangesets: ({ params }) => batches.listChangesetsWithDropped(params.batch_run_id),
    cancelBatchRun: ({ params }) => batches.cancelRun(params.batch_run_id),
    applyBatchRun: ({ params, query }) =>
      batches.applyRun(params.batch_run_id, { skipErrors: query.skip_errors ?? false }),
    retryBatchRun: ({ params }) => batches.retryRun(params.batch_run_id),
    resolveBatchWorkspaces: ({ body }) => batches.resolve(body),
    getBatchWorkspace: ({ params }) => batches.getWorkspace(params.workspace_id),
    getBatchWorkspaceStep: ({ params }) =>
      batches.getStep(params.workspace_id, stepIndexOf(params.step_index)),
    retryBatchWorkspace: ({ params }) => batches.retryWorkspace(params.workspace_id),
    takeOverBatchWorkspace: ({ params }) => batches.takeOverWorkspace(params.workspace_id),
    createProject: ({ body }) => projects.create(body),
    listProjects: async () => ({ projects: await projects.list() }),
    getProject: ({ params }) => projects.get(params.project_id),
    listProjectBranches: ({ params }) => projects.branches(params.project_id),
    createSession: ({ params, body }) => sessions.create(params.project_id, body),
    listSessions: async ({ params }) => ({
      sessions: await sessions.list(params.project_id),
    }),
    getSession: ({ params }) => sessions.get(params.session_id),
    listAllSessions: async ({ query }) => ({ sessions: await sessions.listAll(query) }),
    updateSession: ({ params, body }) => sessions.update(params.session_id, body),
    closeSession: async ({ params, query }) => {
      const closed = await sessions.close(params.session_id, query.force ?? false);
      await agentTurns.pool.closeSession(closed.id);
      return closed;
    },
    cancelAgentTurn: async ({ params }) => {
      await sessions.get(params.session_id);
      await agentTurns.cancel(params.session_id, params.agent);
      return { delivered: true };
    },
    answerPermission: async ({ params, body }) => {
      await sessions.get(params.session_id);
      await agentTurns.answerPermission(params.session_id, params.agent, params.request_id, body);
      return { delivered: true };
    },
    createChat: ({ params, body }) => chats.create(params.session_id, body),
    listChats: async ({ params }) => ({ chats: await chats.list(params.session_id) }),
    createMessage: ({ params, body }) => messages.create(params.chat_id, body),
    listMessages: async ({ params }) => ({
      messages: await messages.list(params.chat_id),
    }),
    listPendingChanges: async ({ params, query }) => ({
      pending_changes: await pendingChanges.list(params.session_id, query.status),
    }),
    listSessionProcesses: async ({ params }) => ({
      processes: await processes.list(params.session_id),
    }),
    getSessionProcessOutput: ({ params, query, context }) =>
      processes.output(params.session_id, params.process_id, query, context.req.raw.signal),
    signalSessionProcess: ({ params, body }) =>
      processes.signal(params.session_id, params.process_id, body.signal),
    applyPendingChange: async ({ params }) => {
      const { pendingChange, commit } = await pendingChanges.apply(params.pending_change_id);
      return { pending_change: pendingChange, commit };
    },
    rejectPendingChange: async ({ params }) => ({
      pending_change: await pendingChanges.reject(params.pending_change_id),
    }),
    getUsage: async ({ query }) => jobUsageReport(query.job_id, await usage.forJob(query.job_id)),
    getSessionUsage: async ({ params }) => {
      const jobs = await agentSessions.usageJobs(params.session_id);
      const rows = await usage.forJobs(jobs.map((job) => job.jobId));
      return sessionUsageReport(params.session_id, jobs, rows);
    },
    listModelUpstreams: async () => ({
      model_upstreams: describeUpstreams(services.modelUpstreams),
    }),
    listCodeHostConnections: async () => ({
      code_host_connections: services
        .codeHostConnections()
        .map((connection) => describeConnection(connection, services.environment)),
    }),
    createApiToken: async ({ body }) => {
      const { apiToken, token } = await apiTokens.create(body.name);
      return { api_token: apiToken, token };
    },
    listApiTokens: async () => ({ api_tokens: await apiTokens.list() }),
    revokeApiToken: async ({ params }) => {
      if (!(await apiTokens.revoke(params.token_id))) {
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

const servedElsewhere: ReadonlySet<string> = new Set(SERVED_ELSEWHERE);

function servedHere(route: ServerRouteEntry): route is ServerRouteOf<HandledOperationId> {
  return !servedElsewhere.has(route.operationId);
}

/**
 * Registers the server API from the route table in @deckhand/wire: each request's query and body
 * are validated with the route's schemas before its handler runs.
 */
export function registerApiRoutes(app: Hono, services: ApiRouteServices): void {
  const byOperation = handlers(services);
  // Generic in the operation id, so the route and its handler are known to belong together.
  const serve = <Id extends HandledOperationId>(id: Id, route: ServerRouteOf<Id>): void =>
    serveRoute(app, route, byOperation[id]);
  for (const route of serverRoutes) {
    if (servedHere(route)) serve(route.operationId, route);
  }
}
