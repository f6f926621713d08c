// `deckhand up` for the batch-run suites: a process of its own over a config.json the suite
// writes (code hosts, container runtime, codingAgent, model upstreams), on PGlite or on a
// PostgreSQL database of its own, driven only through the HTTP API and the run stream. It records
// every response body and stream frame, and dumps every database table once the server stopped,
// so a suite can hunt a secret through all of them.
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createDb } from "@deckhand/db";
import {
  createPostgresTestDatabase,
  createTempRepository,
  type PostgresTestDatabase,
  type SpawnedService,
  testPostgresUrl,
} from "@deckhand/testkit";
import {
  type BatchRun,
  type BatchRunEvent,
  type BatchRunStreamFrame,
  BatchRunStreamFrameSchema,
  ServerPath,
  serverPath,
  WireSubprotocol,
} from "@deckhand/wire";
import WebSocket from "ws";
import type { ApiCall } from "./deckhand-up.ts";
import { spawnDeckhandUp } from "./deckhand-up.ts";

const DATABASE_URL_ENV = "DATABASE_URL";

export type DatabaseBackend = "pglite" | "postgres";

/** PGlite always; PostgreSQL too when DATABASE_URL names a server (as in CI). */
export const databaseBackends: DatabaseBackend[] = testPostgresUrl
  ? ["pglite", "postgres"]
  : ["pglite"];

/** A run's stream: every raw frame kept, events parsed, and a wait for the run's end. */
export class BatchRunStreamClient {
  readonly raw: string[] = [];
  readonly frames: BatchRunStreamFrame[] = [];
  readonly socket: WebSocket;
  readonly opened: Promise<void>;
  #waiters: (() => void)[] = [];

  constructor(baseUrl: string, runId: string) {
    const url = `${baseUrl.replace(/^http/, "ws")}${serverPath(ServerPath.batchRunStream, { batch_run_id: runId })}`;
    this.socket = new WebSocket(url, [WireSubprotocol.batchRunStream]);
    this.opened = new Promise((resolveOpen, rejectOpen) => {
      this.socket.once("open", () => resolveOpen());
      this.socket.once("unexpected-response", (_request, response) =>
        rejectOpen(new Error(`the run stream's upgrade was refused with ${response.statusCode}`)),
      );
      this.socket.once("error", rejectOpen);
    });
    this.socket.on("message", (data) => {
      const text = data.toString();
      this.raw.push(text);
      this.frames.push(BatchRunStreamFrameSchema.parse(JSON.parse(text)));
      for (const wake of this.#waiters.splice(0)) wake();
    });
  }

  events(): BatchRunEvent[] {
    return this.frames.flatMap((frame) => (frame.type === "event" ? [frame.event.event] : []));
  }

  /** Resolves with the run's events once `run_finished` arrived. */
  async finished(timeoutMs: number): Promise<BatchRunEvent[]> {
    const deadline = Date.now() + timeoutMs;
    while (!this.events().some((event) => event.type === "run_finished")) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new Error(
          `the run did not finish within ${timeoutMs} ms; its events: ${JSON.stringify(this.events()).slice(-4000)}`,
        );
      }
      await new Promise<void>((resolveWait) => {
        const timer = setTimeout(resolveWait, Math.min(remaining, 500));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolveWait();
        });
      });
    }
    return this.events();
  }

  close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolveClose) => {
      this.socket.once("close", () => resolveClose());
      this.socket.close();
    });
  }
}

export interface BatchServer {
  backend: DatabaseBackend;
  server: SpawnedService;
  dataDir: string;
  /** The server's own PostgreSQL database (for `deckhand executor`s), null on PGlite. */
  databaseUrl: string | null;
  /** Every response body the suite received, in order. */
  responses: string[];
  api: ApiCall;
  /** Creates a run, follows its stream until `run_finished`, and returns the finished run. */
  runToEnd(
    request: unknown,
    timeoutMs?: number,
  ): Promise<{ run: BatchRun; events: BatchRunEvent[]; stream: BatchRunStreamClient }>;
  /** Every stream the suite opened. */
  streams: BatchRunStreamClient[];
  /** Stops the server with SIGTERM and resolves with how it exited. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Every row of every table, as `schema.table: [rows as JSON]` lines; after stop(). */
  dumpDatabase(): Promise<string>;
  /** Stops the server if still running, drops its database and removes its data directory. */
  close(): Promise<void>;
}

export interface StartBatchServerOptions {
  backend: DatabaseBackend;
  /** Written as `<data-dir>/config.json`. */
  config: Record<string, unknown>;
  /** On top of this process's environment (without DATABASE_URL). */
  env?: NodeJS.ProcessEnv;
}

export async function startBatchServer(options: StartBatchServerOptions): Promise<BatchServer> {
  const dataDir = mkdtempSync(join(tmpdir(), "deckhand-e2e-batch-"));
  writeFileSync(join(dataDir, "config.json"), JSON.stringify(options.config));
  const environment: NodeJS.ProcessEnv = { ...process.env, ...options.env };
  delete environment[DATABASE_URL_ENV];
  // A database of its own: its batch worker must not claim another suite's workspace jobs.
  let database: PostgresTestDatabase | undefined;
  if (options.backend === "postgres") {
    database = await createPostgresTestDatabase();
    environment[DATABASE_URL_ENV] = database.url;
  }
  let server: SpawnedService;
  try {
    server = await spawnDeckhandUp(dataDir, environment);
  } catch (error) {
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const responses: string[] = [];
  const streams: BatchRunStreamClient[] = [];

  const api: ApiCall = async <Body>(method: string, path: string, body?: unknown) => {
    const response = await fetch(`${server.url}${path}`, {
      method,
      ...(body !== undefined
        ? { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }
        : {}),
    });
    const text = await response.text();
    responses.push(text);
    return { status: response.status, body: (text ? JSON.parse(text) : null) as Body };
  };

  const stop = async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill("SIGTERM");
    }
    return server.exited;
  };

  return {
    backend: options.backend,
    server,
    dataDir,
    databaseUrl: database?.url ?? null,
    responses,
    api,
    streams,
    async runToEnd(request, timeoutMs = 120_000) {
      const created = await api<BatchRun>("POST", ServerPath.batchRuns, request);
      if (created.status !== 201) {
        throw new Error(
          `creating the run answered ${created.status}: ${JSON.stringify(created.body)}`,
        );
      }
      const stream = new BatchRunStreamClient(server.url, created.body.id);
      streams.push(stream);
      await stream.opened;
      const events = await stream.finished(timeoutMs);
      const run = await api<BatchRun>(
        "GET",
        serverPath(ServerPath.batchRun, { batch_run_id: created.body.id }),
      );
      return { run: run.body, events, stream };
    },
    stop,
    async dumpDatabase() {
      const handle = await createDb(
        database ? { databaseUrl: database.url } : { dataDir: join(dataDir, "db") },
      );
      const dump: string[] = [];
      try {
        const tables = await handle.query<{ table_schema: string; table_name: string }>(
          `select table_schema, table_name from information_schema.tables
           where table_schema in ('public', 'drizzle') and table_type = 'BASE TABLE'
           order by table_schema, table_name`,
        );
        for (const { table_schema: schema, table_name: table } of tables.rows) {
          const { rows } = await handle.query(`select * from "${schema}"."${table}"`);
          dump.push(`${schema}.${table}: ${JSON.stringify(rows)}`);
        }
      } finally {
        await handle.close();
      }
      return dump.join("\n");
    },
    async close() {
      await Promise.all(streams.map((stream) => stream.close()));
      await stop();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A directory code host with a generated repository per name (`github.com/acme/api`, …), each
 * one commit of a README on `main`. Returns the host's directory; remove it when done.
 */
export function generateRepositories(names: readonly string[]): string {
  const root = mkdtempSync(join(tmpdir(), "deckhand-e2e-code-"));
  for (const name of names) {
    const made = createTempRepository({ "README.md": `# ${name}\n` });
    mkdirSync(dirname(join(root, name)), { recursive: true });
    renameSync(made.path, join(root, name));
  }
  return root;
}
