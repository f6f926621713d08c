import { randomUUID } from "node:crypto";
import { join } from "node:path";
import {
  type BatchRunService,
  batchDirectories,
  createBatchRunService,
  createModelSpend,
  ExecutionEnvironment,
  ExecutorJobs,
} from "@deckhand/batches";
import type { DbHandle } from "@deckhand/db";
import {
  batchJobModelProviderAccess,
  DbModelTokenStore,
  leaseModelProxy,
} from "@deckhand/model-proxy";
import { createProviderService, type ProviderService } from "@deckhand/providers";
import type { ProcessLauncher } from "@deckhand/sandbox";
import {
  createSessionDomain,
  DEFAULT_NATIVE_MODEL,
  NATIVE_AGENT_TYPE,
  type SessionDomain,
  SessionsError,
} from "@deckhand/sessions";
import type { Logger } from "pino";
import type { ServerSpend } from "./api-routes.ts";
import { ApiTokenStore } from "./api-tokens.ts";
import type { ServerConfig } from "./config.ts";
import { DbProbeStore, DbUsageRecorder } from "./db-stores.ts";
import { ExecutorTokenStore } from "./executor-tokens.ts";
import type { ServerEndpoint } from "./server-endpoint.ts";
import type { ServerAgentEnvironment } from "./server-secrets.ts";
import { SessionBudgetScopes } from "./session-budget-scopes.ts";
import { workspaceSessions } from "./workspace-sessions.ts";

/** A provider probe's model token outlives any probe (20 s by default) and is revoked after it. */
const PROBE_MODEL_TOKEN_TTL_MS = 5 * 60_000;

/** What the domain services are made of: the server's settings and the parts started before. */
export interface ServicesInput {
  config: ServerConfig;
  database: DbHandle;
  /** The workspace agent's root, which session worktrees live in. */
  workspacesRoot: string;
  agentEnvironment: ServerAgentEnvironment;
  launcher: ProcessLauncher;
  endpoint: ServerEndpoint;
  logger: Logger;
}

/** The server's domain: its stores, sessions, batch runs and agent providers. */
export interface ServerServices {
  modelTokens: DbModelTokenStore;
  modelUsage: DbUsageRecorder;
  apiTokens: ApiTokenStore;
  sessions: SessionDomain;
  batches: BatchRunService;
  providers: ProviderService;
  /** Model spend against budgets: the proxy's check, batch runs' and sessions' spend. */
  spend: ServerSpend;
  /** Executor tokens and the jobs executors claim over HTTP (the executor API). */
  executors: { tokens: ExecutorTokenStore; jobs: ExecutorJobs };
}

/**
 * Makes the domain services, which need one another: a session's agent, model and mode are
 * checked against the providers' snapshot, which looks projects up in the sessions; batch runs
 * take workspaces over with sessions and run the providers' agents; sessions clone with the
 * batch publishing's code host credentials; batch runs stop starting workspaces once their
 * spend budget is reached.
 */
export function composeServices(input: ServicesInput): ServerServices {
  const { database } = input;
  const modelTokens = new DbModelTokenStore(database.db);
  let providerCatalog: ProviderService | null = null;
  const readyProviders = (): ProviderService => {
    if (providerCatalog === null) throw new Error("the provider registry is not ready yet");
    return providerCatalog;
  };
  let batchRuns: BatchRunService | null = null;
  const sessions = sessionService(input, readyProviders, () => batchRuns);
  const spend = modelSpend(input, sessions);
  const batches = batchRunService(input, {
    modelTokens,
    sessions,
    providers: readyProviders,
    spend,
  });
  batchRuns = batches;
  const providers = providerService(input, modelTokens, sessions);
  providerCatalog = providers;
  return {
    modelTokens,
    modelUsage: new DbUsageRecorder(database.db),
    apiTokens: new ApiTokenStore(database.db),
    sessions,
    batches,
    providers,
    spend,
    executors: {
      tokens: new ExecutorTokenStore(database.db),
      // Executors over HTTP: their jobs' abandoned runs are ended from their claims, since this
      // server may run no batch worker of its own.
      jobs: new ExecutorJobs({
        database,
        budgets: spend.batches,
        recover: () => batches.recoverAbandonedJobs(),
        onError: (error) =>
          input.logger.warn({ err: error }, "executor API: recovering jobs failed"),
      }),
    },
  };
}

/**
 * Model budgets (config.json's modelBudgets, priced with modelPrices): the proxy refuses what a
 * reached one covers, and runs whose budget is spent start no more workspaces.
 */
function modelSpend(input: ServicesInput, domain: SessionDomain): ServerSpend {
  const { config, database } = input;
  const spend = createModelSpend({
    database,
    limits: config.modelBudgets,
    prices: config.modelPrices,
    codingAgent: config.codingAgent,
  });
  const sessions = new SessionBudgetScopes(domain.agentSessions);
  spend.budgets.addSource(sessions);
  return { budgets: spend.budgets, batches: spend.spend, sessions };
}

/** Whether the proxy serves an agent type: sessions and probes point such agents at it. */
function hasUpstream(config: ServerConfig, agentType: string): boolean {
  return agentType in config.modelUpstreams;
}

function sessionService(
  input: ServicesInput,
  providers: () => ProviderService,
  batches: () => BatchRunService | null,
): SessionDomain {
  const { config, database, workspacesRoot } = input;
  return createSessionDomain({
    database,
    projectsDir: join(config.dataDir, "projects"),
    // Inside the workspace agent's root, so the agent's process and file APIs reach them.
    worktreesDir: join(workspacesRoot, "sessions"),
    agentCatalog: (projectId) => providers().snapshot({ projectId }),
    // A project cloned from a code host's URL (a taken-over batch workspace's) is cloned and
    // fetched with that host's connection credentials, per command, as batch checkouts are.
    gitEnvironment: (url) => batches()?.publishing?.access.gitEnvironment(url),
  });
}

/** The same service `deckhand executor` makes: checkouts in <data-dir>/workspaces/batches. */
function batchRunService(
  input: ServicesInput,
  parts: {
    modelTokens: DbModelTokenStore;
    sessions: SessionDomain;
    providers: () => ProviderService;
    spend: ServerSpend;
  },
): BatchRunService {
  const { config, database, launcher, logger } = input;
  const { modelTokens, sessions, providers } = parts;
  return createBatchRunService({
    database,
    spend: parts.spend.batches,
    codeHosts: () => config.codeHosts,
    environment: new ExecutionEnvironment({
      directories: batchDirectories(config.dataDir),
      environmentPolicy: input.agentEnvironment.policy,
      outerEnvironment: process.env,
      launcher,
      containerDetection:
        config.containerRuntime.restrictedHost === undefined
          ? {}
          : { restrictedHost: config.containerRuntime.restrictedHost },
      ...(config.kubernetes !== null ? { kubernetes: config.kubernetes } : {}),
      // codingAgent steps reach this server's model proxy with a token bound to their job.
      modelProvider: batchJobModelProviderAccess({
        modelTokens,
        serverUrl: () => input.endpoint.listeningUrl,
      }),
      codingAgent: config.codingAgent,
      // acp steps run this server's providers, pointed at the proxy as sessions are.
      acpAgents: {
        providers: {
          list: () => providers().list(),
          resolve: (id, resolveOptions) => providers().resolve(id, resolveOptions),
        },
        proxied: (agentType) => hasUpstream(config, agentType),
      },
    }),
    // Workspaces are taken over with this server's interactive sessions.
    sessions: workspaceSessions(sessions),
    // Publishing: code host connections from config.json, their tokens read from the
    // environment at each use (never stored, never handed to an agent: see config.ts).
    publishing: {
      connections: () => config.codeHostConnections,
      environment: process.env,
      trackingIntervalMs: config.changesetTrackingIntervalMs,
      rolloutWindows: () => config.rolloutWindows,
      onError: (error, context) =>
        logger.warn({ err: error, ...context }, "refreshing a changeset failed"),
    },
  });
}

function providerService(
  input: ServicesInput,
  modelTokens: DbModelTokenStore,
  sessions: SessionDomain,
): ProviderService {
  const { config, database, launcher, logger, endpoint } = input;
  return createProviderService({
    configPath: config.providersConfigPath,
    probeStore: new DbProbeStore(database.db),
    // The native agent talks to the upstream configured for its own agent type.
    modelUpstreamConfigured: () => NATIVE_AGENT_TYPE in config.modelUpstreams,
    nativeModels: [
      ...new Set([config.nativeModel ?? DEFAULT_NATIVE_MODEL, ...config.nativeModels]),
    ],
    // Probes start an agent as sessions do: pointed at the proxy with a token of its own,
    // revoked once the probe ends. Probes may start before the server listens (warmUp); their
    // proxy access waits for it.
    modelProxy: {
      configured: (agentType) => hasUpstream(config, agentType),
      lease: (agentType) =>
        leaseModelProxy({ modelTokens, serverUrl: () => endpoint.listeningUrl }, agentType, {
          jobId: `provider-probe:${agentType}:${randomUUID()}`,
          ttlMs: PROBE_MODEL_TOKEN_TTL_MS,
        }),
    },
    withheldEnv: config.withheldEnv,
    env: input.agentEnvironment.environment,
    agentEnvironment: input.agentEnvironment.policy,
    launcher,
    startTimeouts: config.agentStartTimeouts,
    // opencode offers only the models it is told of: those of its upstream.
    upstreamModels: (agentType) => config.upstreamModels[agentType] ?? [],
    // A snapshot for a project also looks commands up in that project's checkout.
    projectDirectory: async (projectId) => {
      try {
        return (await sessions.projects.get(projectId)).repository_path;
      } catch (error) {
        if (SessionsError.isInstance(error) && error.code === "not_found") return null;
        throw error;
      }
    },
    logger: {
      info: (message, fields) => logger.info({ component: "providers", ...fields }, message),
      warn: (message, fields) => logger.warn({ component: "providers", ...fields }, message),
    },
  });
}
