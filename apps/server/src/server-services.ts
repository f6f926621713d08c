import { join } from "node:path";
import type { BatchRunService } from "@deckhand/batches";
import { ExecutorJobs } from "@deckhand/batches";
import type { DbHandle } from "@deckhand/db";
import { DbModelTokenStore } from "@deckhand/model-proxy";
import type { ProviderService } from "@deckhand/providers";
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
import {
  type BatchServicesInput,
  batchModelSpend,
  batchRunService,
  providerService,
} from "./batch-services.ts";
import type { ServerConfig } from "./config.ts";
import { DbUsageRecorder } from "./db-stores.ts";
import { ExecutorTokenStore } from "./executor-tokens.ts";
import type { ServerEndpoint } from "./server-endpoint.ts";
import type { ServerAgentEnvironment } from "./server-secrets.ts";
import { SessionBudgetScopes } from "./session-budget-scopes.ts";
import { workspaceSessions } from "./workspace-sessions.ts";

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
  const batchInput: BatchServicesInput = {
    ...input,
    modelProxyUrl: () => input.endpoint.listeningUrl,
  };
  const modelTokens = new DbModelTokenStore(database.db);
  let providerCatalog: ProviderService | null = null;
  const readyProviders = (): ProviderService => {
    if (providerCatalog === null) throw new Error("the provider registry is not ready yet");
    return providerCatalog;
  };
  let batchRuns: BatchRunService | null = null;
  const sessions = sessionService(input, readyProviders, () => batchRuns);
  const spend = modelSpend(input, sessions);
  const batches = batchRunService(batchInput, {
    modelTokens,
    // Workspaces are taken over with this server's interactive sessions.
    sessions: workspaceSessions(sessions),
    providers: readyProviders,
    spend: spend.batches,
  });
  batchRuns = batches;
  const providers = providerService(batchInput, {
    modelTokens,
    native: { agentType: NATIVE_AGENT_TYPE, defaultModel: DEFAULT_NATIVE_MODEL },
    projectDirectory: (projectId) => projectDirectory(sessions, projectId),
  });
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
  const spend = batchModelSpend(input.config, input.database);
  const sessions = new SessionBudgetScopes(domain.agentSessions);
  spend.budgets.addSource(sessions);
  return { budgets: spend.budgets, batches: spend.spend, sessions };
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

/** A project's checkout, where a providers snapshot for it also looks commands up. */
async function projectDirectory(
  sessions: SessionDomain,
  projectId: string,
): Promise<string | null> {
  try {
    return (await sessions.projects.get(projectId)).repository_path;
  } catch (error) {
    if (SessionsError.isInstance(error) && error.code === "not_found") return null;
    throw error;
  }
}
