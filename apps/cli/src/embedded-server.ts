// Deckhand's server started inside the CLI's process for one batch run, so a run without
// --server goes through the same HTTP API and run stream as one on a server.
import { randomBytes } from "node:crypto";
import { WireEnv } from "@deckhand/wire";

export interface EmbeddedServer {
  url: string;
  /** The token this process's server wants; no other process knows it. */
  token: string;
  dataDir: string;
  close(): Promise<void>;
}

/** The data directory is in use (by `deckhand up`, say): the CLI suggests --server. */
export class DataDirInUseError extends Error {
  override readonly name = "DataDirInUseError";
}

/** The server's configuration is wrong (config.json, an environment variable). */
export class EmbeddedServerConfigError extends Error {
  override readonly name = "EmbeddedServerConfigError";
}

export interface EmbeddedServerOptions {
  /** Absent: $DECKHAND_DATA_DIR, else ~/.deckhand, as for `deckhand up`. */
  dataDir: string | undefined;
  /** Batch workspace jobs run at once (-j). */
  concurrency: number;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
}

/**
 * Starts the server as `deckhand up` would on the data directory (its config.json, code hosts
 * and step cache), with what one batch run needs and nothing else: loopback on a free port, a
 * token of its own, the embedded database (the data directory's, whatever DATABASE_URL says),
 * no workspace agent, no agent turns or provider probes, silent logs unless
 * $DECKHAND_LOG_LEVEL asks (they go to stderr), and -j batch jobs at once.
 */
export async function startEmbeddedServer(options: EmbeddedServerOptions): Promise<EmbeddedServer> {
  // Loaded only here: the database, PGlite and the HTTP stack are for runs without --server.
  const { DATABASE_URL_ENV, ServerError, resolveServerConfig, startServer } = await import(
    "@deckhand/server-app"
  );
  const environment = { ...options.env };
  // This server is private to the process: the listen address, admin token and database of a
  // `deckhand up` configured in the environment are not its own.
  for (const name of [DATABASE_URL_ENV, WireEnv.serverListen, WireEnv.adminToken]) {
    delete environment[name];
  }
  const token = randomBytes(32).toString("base64url");
  try {
    const config = resolveServerConfig(
      {
        listen: "127.0.0.1:0",
        ...(options.dataDir !== undefined ? { dataDir: options.dataDir } : {}),
        workspaceAgent: false,
        ...(environment[WireEnv.serverLogLevel] ? {} : { logLevel: "silent" as const }),
      },
      { environment, cwd: options.cwd },
    );
    const server = await startServer(
      {
        ...config,
        databaseUrl: null,
        adminToken: token,
        requireAuth: true,
        batchConcurrency: options.concurrency,
        webDir: null,
      },
      {
        logDestination: process.stderr,
        runTasks: false,
        warmUpProviders: false,
        announce: () => {},
      },
    );
    return { url: server.url, token, dataDir: config.dataDir, close: () => server.close() };
  } catch (error) {
    if (error instanceof ServerError && error.code === "data_dir_locked") {
      throw new DataDirInUseError(error.message, { cause: error });
    }
    if (error instanceof ServerError) {
      throw new EmbeddedServerConfigError(error.message, { cause: error });
    }
    throw error;
  }
}
