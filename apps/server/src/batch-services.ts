// The batch-run half of the server's domain, apart from the sessions: what `deckhand up` and the
// CLI's batch-only embedded runner both compose (the batch-run service over one execution
// environment, the model spend of batch runs, the agent providers acp steps run). Nothing here
// loads the session domain, so the CLI's standalone `batch preview` does not either.
import { randomUUID } from "node:crypto";
import {
  type BatchRunService,
  batchDirectories,
  createBatchRunService,
  createModelSpend,
  ExecutionEnvironment,
  type WorkspaceSessions,
} from "@deckhand/batches";
import type { DbHandle } from "@deckhand/db";
import {
  batchJobModelProviderAccess,
  type DbModelTokenStore,
  leaseModelProxy,
} from "@deckhand/model-proxy";
import { createProviderService, type ProviderService } from "@deckhand/providers";
import type { ProcessLauncher } from "@deckhand/sandbox";
import type { Logger } from "pino";
import type { ServerConfig } from "./config.ts";
import { DbProbeStore } from "./db-stores.ts";
import type { ServerAgentEnvironment } from "./server-secrets.ts";

/** A provider probe's model token outlives any probe (20 s by default) and is revoked after it. */
const PROBE_MODEL_TOKEN_TTL_MS = 5 * 60_000;
/** The native agent's type and default model, as @deckhand/sessions names them. */
export interface NativeAgentNames {
  agentType: string;
  defaultModel: string;
}

/** What the batch services are made of: the server's settings and the parts started before. */
export interface BatchServicesInput {
  config: ServerConfig;
  database: DbHandle;
  agentEnvironment: ServerAgentEnvironment;
  launcher: ProcessLauncher;
  logger: Logger;
  /** Where agents reach the model proxy: resolves once something serves it. */
  modelProxyUrl: () => Promise<string>;
}

/** Whether the proxy serves an agent type: sessions, probes and acp steps point such agents at it. */
export function hasUpstream(config: ServerConfig, agentType: string): boolean {
  return agentType in config.modelUpstreams;
}

/** Model spend of batch runs: budgets (config.json's modelBudgets) priced with modelPrices. */
export function batchModelSpend(config: ServerConfig, database: DbHandle) {
  return createModelSpend({
    database,
    limits: config.modelBudgets,
    prices: config.modelPrices,
    codingAgent: config.codingAgent,
  });
}

/** The same service `deckhand executor` makes: checkouts in <data-dir>/workspaces/batches. */
export function batchRunService(
  input: BatchServicesInput,
  parts: {
    modelTokens: DbModelTokenStore;
    /** Workspaces are taken over with these sessions; absent where none are served. */
    sessions?: WorkspaceSessions;
    /** The providers acp steps may name; only `list` and `resolve` are used. */
    providers: () => Pick<ProviderService, "list" | "resolve">;
    spend: ReturnType<typeof createModelSpend>["spend"];
  },
): BatchRunService {
  const { config, database, launcher, logger } = input;
  const { modelTokens, providers } = parts;
  return createBatchRunService({
    database,
    spend: parts.spend,
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
        serverUrl: input.modelProxyUrl,
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
    ...(parts.sessions !== undefined ? { sessions: parts.sessions } : {}),
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

/** The agent providers: probes, snapshots, and the agents sessions and acp steps start. */
export function providerService(
  input: BatchServicesInput,
  parts: {
    modelTokens: DbModelTokenStore;
    /**
     * The native agent's names, which only snapshots read (its models, whether its upstream is
     * configured); absent where no snapshot is ever taken: the batch runner's acp steps only
     * list and resolve providers, and it does not load the session domain that names them.
     */
    native?: NativeAgentNames;
    /** A project's checkout, where a snapshot for it also looks commands up; null if none. */
    projectDirectory: (projectId: string) => Promise<string | null>;
  },
): ProviderService {
  const { config, database, launcher, logger } = input;
  const { modelTokens, native } = parts;
  return createProviderService({
    configPath: config.providersConfigPath,
    probeStore: new DbProbeStore(database.db),
    // The native agent talks to the upstream configured for its own agent type.
    modelUpstreamConfigured: () =>
      native !== undefined && native.agentType in config.modelUpstreams,
    nativeModels: nativeModels(config, native),
    // Probes start an agent as sessions do: pointed at the proxy with a token of its own,
    // revoked once the probe ends. Probes may start before the server listens (warmUp); their
    // proxy access waits for it.
    modelProxy: {
      configured: (agentType) => hasUpstream(config, agentType),
      lease: (agentType) =>
        leaseModelProxy({ modelTokens, serverUrl: input.modelProxyUrl }, agentType, {
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
    projectDirectory: parts.projectDirectory,
    logger: {
      info: (message, fields) => logger.info({ component: "providers", ...fields }, message),
      warn: (message, fields) => logger.warn({ component: "providers", ...fields }, message),
    },
  });
}

/** The native agent's models: the configured default (else the agent's own) and the others. */
function nativeModels(config: ServerConfig, native: NativeAgentNames | undefined): string[] {
  const first = config.nativeModel ?? native?.defaultModel;
  return [...new Set([...(first !== undefined ? [first] : []), ...config.nativeModels])];
}
