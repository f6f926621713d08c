// What a standalone `deckhand batch preview|apply` starts in the CLI's process: the batch engine
// and the store, composed as `deckhand up` composes them (the same batch services, launcher,
// database and batch worker), and nothing else: no HTTP API, no sessions, no workspace agent, no
// provider probes, no web UI. The CLI calls the run API in-process (`BatchRunApi`), with the
// requests and answers the server's routes take and give. The model proxy, which codingAgent and
// acp steps reach over HTTP, listens on loopback only once a step first asks for it.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { BatchRunService } from "@deckhand/batches";
import { createRunEventHub } from "@deckhand/batches";
import type { DbHandle, FeedSubscribeOptions, FeedSubscription } from "@deckhand/db";
import { HttpError } from "@deckhand/http-kit";
import { DbModelTokenStore } from "@deckhand/model-proxy";
import type { ProviderService } from "@deckhand/providers";
import { redactSecrets } from "@deckhand/secrets";
import {
  type BatchRun,
  type BatchRunSpend,
  type CreateBatchRunRequest,
  CreateBatchRunRequestSchema,
  type StoredBatchChangeset,
  type StoredBatchRunEvent,
  serverRoutes,
} from "@deckhand/wire";
import type { Logger } from "pino";
import {
  type BatchServicesInput,
  batchModelSpend,
  batchRunService,
  providerService,
} from "./batch-services.ts";
import { batchesErrorToHttp } from "./batches-http-errors.ts";
import { type ServerConfig, serverOriginPolicy } from "./config.ts";
import { DbUsageRecorder } from "./db-stores.ts";
import { ServerEndpoint } from "./server-endpoint.ts";
import { ServerError } from "./server-error.ts";
import {
  type Foundation,
  serverLogger,
  startBatchJobs,
  startFailure,
  startFoundation,
} from "./server-foundation.ts";
import { ServerParts, type ShutdownOrder } from "./server-parts.ts";
import { serverPaths, withoutServerPaths } from "./server-paths.ts";
import { serverAgentEnvironment } from "./server-secrets.ts";

export { HttpError } from "@deckhand/http-kit";
export { DATABASE_URL_ENV, resolveServerConfig } from "./config.ts";
export { ServerError } from "./server-error.ts";

/** A run's event feed, as the run stream serves it. */
export interface RunEventFeed {
  subscribe(options: FeedSubscribeOptions<StoredBatchRunEvent>): FeedSubscription;
}

/**
 * The batch-run routes the CLI's commands call, in-process: each takes the request the route
 * takes (checked with the route's schema) and gives what the route answers (checked with its
 * success schema, as the server client checks it); a refusal is the HttpError the route answers.
 */
export interface BatchRunApi {
  createBatchRun(request: CreateBatchRunRequest): Promise<BatchRun>;
  cancelBatchRun(runId: string): Promise<BatchRun>;
  getBatchRunSpend(runId: string): Promise<BatchRunSpend>;
  listBatchRunChangesets(runId: string): Promise<{ changesets: StoredBatchChangeset[] }>;
  /** The run's events after `afterId`, as its stream delivers them. */
  events: RunEventFeed;
}

export interface RunningBatchRunner {
  api: BatchRunApi;
  dataDir: string;
  /** Stops claiming and lets running jobs finish, then the feed, the proxy and the database. */
  close(): Promise<void>;
}

export interface BatchRunnerOptions {
  /** Where JSON log lines go; standard error by default. */
  logDestination?: NodeJS.WritableStream;
}

const SHUTDOWN_ORDER: ShutdownOrder = [
  ["batch-worker"],
  ["providers"],
  ["http"],
  ["run-hub"],
  ["launcher"],
  ["database"],
];

/**
 * Starts the batch engine on `config`'s data directory (its config.json, code hosts, step cache
 * and database), with `config.batchConcurrency` workspace jobs at once.
 */
export async function startBatchRunner(
  config: ServerConfig,
  options: BatchRunnerOptions = {},
): Promise<RunningBatchRunner> {
  const start: Foundation = {
    config,
    logger: serverLogger(config, options.logDestination ?? process.stderr),
    agentEnvironment: serverAgentEnvironment(config),
    parts: new ServerParts(),
    endpoint: new ServerEndpoint(),
  };
  try {
    return await compose(start);
  } catch (error) {
    await start.parts.undo();
    throw startFailure(config, error);
  }
}

async function compose(start: Foundation): Promise<RunningBatchRunner> {
  const { config, logger, parts } = start;
  const { database, launcher } = await startFoundation(start);
  const modelTokens = new DbModelTokenStore(database.db);
  const spend = batchModelSpend(config, database);
  const modelProxy = lazyModelProxy(start, database, modelTokens, spend.budgets);
  const input: BatchServicesInput = {
    config,
    database,
    agentEnvironment: start.agentEnvironment,
    launcher,
    logger,
    modelProxyUrl: modelProxy,
  };
  const providers = runnerProviders(start, input, modelTokens);
  const batches = batchRunService(input, {
    modelTokens,
    providers: () => providers,
    spend: spend.spend,
  });
  const runHub = createRunEventHub(database);
  await runHub.start();
  parts.started("run-hub", () => runHub.stop());
  await startBatchJobs(start, database, batches, {});
  await mkdir(join(config.dataDir, "workspaces"), { recursive: true });
  let closing: Promise<void> | null = null;
  return {
    api: batchRunApi(start, batches, spend.spend, runHub),
    dataDir: config.dataDir,
    close: () => {
      closing ??= parts.stop(SHUTDOWN_ORDER);
      return closing;
    },
  };
}

/**
 * The model proxy's URL, listening on loopback from the first call on: codingAgent steps lease
 * a token of it, sandboxed agents reach it through the launcher's socket (the endpoint).
 */
function lazyModelProxy(
  start: Foundation,
  database: DbHandle,
  modelTokens: DbModelTokenStore,
  budgets: ReturnType<typeof batchModelSpend>["budgets"],
): () => Promise<string> {
  const { config, logger, parts, endpoint } = start;
  let listening: Promise<string> | null = null;
  return () => {
    listening ??= (async () => {
      // Loaded here: the proxy's routes, hono and the listener are for runs whose steps talk to
      // a model, not for every run's start.
      const [{ createModelProxyApp }, { listen }] = await Promise.all([
        import("./model-proxy-app.ts"),
        import("@deckhand/http-kit"),
      ]);
      const { app, ahead } = createModelProxyApp(serverOriginPolicy(config), {
        modelUpstreams: config.modelUpstreams,
        modelTokens,
        modelUsage: new DbUsageRecorder(database.db),
        budgets,
        ...(config.modelProxyRateLimit != null ? { rateLimit: config.modelProxyRateLimit } : {}),
        logger,
      });
      const http = await listen(
        app.fetch,
        { host: "127.0.0.1", port: 0 },
        (error) =>
          new ServerError(
            "listen_failed",
            `cannot listen on 127.0.0.1 for the model proxy: ${error.message}`,
            { cause: error },
          ),
        ahead,
      );
      parts.started("http", async () => {
        const closed = new Promise<void>((resolveClose) => http.server.close(() => resolveClose()));
        // It stops after the batch worker: no step is left to talk to the proxy, so a
        // connection an agent left open is only idle.
        if ("closeAllConnections" in http.server) http.server.closeAllConnections();
        await closed;
      });
      endpoint.listened(http.url, http.port, (request) => app.fetch(request));
      return `${http.url}`;
    })();
    return listening;
  };
}

/**
 * The agent providers acp steps name (a spec's are checked against them, and a running acp step
 * starts one): never probed or snapshotted here, so made without the native agent's names.
 */
function runnerProviders(
  start: Foundation,
  input: BatchServicesInput,
  modelTokens: DbModelTokenStore,
): Pick<ProviderService, "list" | "resolve"> {
  const providers = providerService(input, { modelTokens, projectDirectory: async () => null });
  start.parts.started("providers", () => providers.close());
  return providers;
}

/** The route of `operationId` in the server's route table. */
function route(operationId: string) {
  const found = serverRoutes.find((candidate) => candidate.operationId === operationId);
  if (found === undefined) throw new Error(`no server route ${operationId}`);
  return found;
}

/**
 * What the routes' error handling makes of a failure: an engine error as the HttpError its code
 * maps to, its message without secrets or the server's own paths; anything else, logged, as the
 * 500 whose message says only that.
 */
function refusal(error: unknown, config: ServerConfig, logger: Logger): HttpError {
  const mapped = batchesErrorToHttp(error);
  if (HttpError.isInstance(mapped)) {
    const message = withoutServerPaths(redactSecrets(mapped.message), serverPaths(config.dataDir));
    return new HttpError(mapped.status, mapped.code, message, { cause: error });
  }
  logger.error({ err: error }, "request failed");
  return new HttpError(500, "internal", "internal error; the server log has the details", {
    cause: error,
  });
}

function batchRunApi(
  start: Foundation,
  batches: BatchRunService,
  spend: ReturnType<typeof batchModelSpend>["spend"],
  events: RunEventFeed,
): BatchRunApi {
  /** What the route answers, as a client reads it: JSON, checked with the success schema. */
  const answer = async <T>(operationId: string, call: () => Promise<unknown>): Promise<T> => {
    let value: unknown;
    try {
      value = await call();
    } catch (error) {
      throw refusal(error, start.config, start.logger);
    }
    const schema = route(operationId).success.schema;
    const json = JSON.parse(JSON.stringify(value)) as unknown;
    return (schema === null ? json : schema.parse(json)) as T;
  };
  return {
    createBatchRun: (request) => {
      // The route's body schema: its defaults are what the engine is given.
      const checked = CreateBatchRunRequestSchema.parse(request);
      return answer("createBatchRun", () => batches.createRun(checked));
    },
    cancelBatchRun: (runId) => answer("cancelBatchRun", () => batches.cancelRun(runId)),
    getBatchRunSpend: (runId) => answer("getBatchRunSpend", () => spend.runSpend(runId)),
    listBatchRunChangesets: (runId) =>
      answer("listBatchRunChangesets", () => batches.listChangesetsWithDropped(runId)),
    events,
  };
}
