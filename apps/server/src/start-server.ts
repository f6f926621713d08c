import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { type RunningAgent, startAgent } from "@deckhand/agent-app";
import { createDb, type DbHandle, TaskRegistry, TaskWorker } from "@deckhand/db";
import { listen } from "@deckhand/http-kit";
import { WireHeader, WirePath } from "@deckhand/wire";
import pino, { type Logger } from "pino";
import { ADMIN_TOKEN_ENV, type ServerConfig } from "./config.ts";
import { createServerApp } from "./create-server-app.ts";
import { DbModelTokenStore, DbUsageRecorder } from "./db-stores.ts";
import { ServerError } from "./server-error.ts";

export interface RunningServer {
  /** `http://host:port`, with the port actually bound (useful with port 0). */
  url: string;
  port: number;
  database: DbHandle;
  /** The local workspace agent; null when disabled. */
  agent: RunningAgent | null;
  /** Task types the worker runs; later features register theirs before `startServer`. */
  tasks: TaskRegistry;
  modelTokens: DbModelTokenStore;
  modelUsage: DbUsageRecorder;
  /** Stops accepting, stops the worker, stops the agent and its processes, closes the database. */
  close(): Promise<void>;
}

export interface StartServerOptions {
  /** Where JSON log lines go; standard output by default. */
  logDestination?: NodeJS.WritableStream;
  logger?: Logger;
  /** Task types for the worker. With none registered no worker is started. */
  tasks?: TaskRegistry;
}

/** Starts the control plane: database (migrated), workspace agent, task worker, HTTP server. */
export async function startServer(
  config: ServerConfig,
  options: StartServerOptions = {},
): Promise<RunningServer> {
  const logger =
    options.logger ??
    pino(
      { level: config.logLevel, base: { service: "deckhand-server" } },
      options.logDestination ?? process.stdout,
    );
  // Undo what started if a later step fails, so a failed start leaves no process behind.
  const cleanups: (() => Promise<void>)[] = [];
  const undo = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  };
  try {
    await mkdir(config.dataDir, { recursive: true });
    const database = await createDb(
      config.databaseUrl !== null
        ? { databaseUrl: config.databaseUrl }
        : { dataDir: join(config.dataDir, "db") },
    );
    cleanups.push(() => database.close());
    logger.info({ kind: database.kind }, "database ready (migrations applied)");

    let agent: RunningAgent | null = null;
    let agentToken: string | null = null;
    if (config.workspaceAgent) {
      const root = join(config.dataDir, "workspaces");
      await mkdir(root, { recursive: true });
      // Only this process talks to the agent; a fresh token each start is enough.
      agentToken = randomBytes(32).toString("base64url");
      agent = await startAgent(
        {
          host: "127.0.0.1",
          port: 0,
          root,
          token: agentToken,
          maxRunningProcesses: 64,
          terminateGraceMs: 5_000,
          shutdownGraceMs: 5_000,
          logLevel: config.logLevel,
        },
        { logger: logger.child({ component: "workspace-agent" }) },
      );
      const started = agent;
      cleanups.push(() => started.close());
    }

    const tasks = options.tasks ?? new TaskRegistry();
    let worker: TaskWorker | null = null;
    if (tasks.types().length > 0) {
      worker = new TaskWorker({
        database,
        registry: tasks,
        onError: (error) => logger.warn({ err: error }, "task worker error; retrying"),
      });
      await worker.start();
      const started = worker;
      cleanups.push(() => started.stop());
    }

    const modelTokens = new DbModelTokenStore(database.db);
    const modelUsage = new DbUsageRecorder(database.db);
    let workerStopped = false;
    const app = createServerApp({
      database,
      adminToken: config.adminToken,
      agent: agent ? { url: agent.url, token: agentToken } : null,
      ...(worker ? { queueRunning: () => !workerStopped } : {}),
      modelUpstreams: config.modelUpstreams,
      modelTokens,
      modelUsage,
      logger,
    });

    const { server, port, url } = await listen(
      app.fetch,
      config,
      (error) =>
        new ServerError(
          "listen_failed",
          `cannot listen on ${config.host}:${config.port}: ${error.message}; choose another --listen address`,
          { cause: error },
        ),
    );
    logger.info(
      {
        url,
        dataDir: config.dataDir,
        database: database.kind,
        auth: config.adminToken !== null,
        agent: agent?.url ?? null,
        modelAgentTypes: Object.keys(config.modelUpstreams),
      },
      "deckhand server listening",
    );
    logger.info(
      `next: curl ${url}${WirePath.serverApi}/health${config.adminToken ? ` -H "${WireHeader.authorization}: Bearer $${ADMIN_TOKEN_ENV}"` : ""}`,
    );

    let closing: Promise<void> | null = null;
    const close = () => {
      closing ??= (async () => {
        logger.info("shutting down: no new requests, stopping worker, agent and database");
        const stopped = new Promise<void>((resolveClose) => server.close(() => resolveClose()));
        // Streams (model responses) hold connections open; shutdown cuts them.
        if ("closeAllConnections" in server) server.closeAllConnections();
        await stopped;
        workerStopped = true;
        await worker?.stop();
        await agent?.close();
        await database.close();
        logger.info("stopped");
        logger.flush?.();
      })();
      return closing;
    };
    return { url, port, database, agent, tasks, modelTokens, modelUsage, close };
  } catch (error) {
    await undo();
    if (error instanceof ServerError) throw error;
    throw new ServerError(
      "start_failed",
      `the server could not start: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}
