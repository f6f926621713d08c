import { cpSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { isDeepStrictEqual } from "node:util";
import { createDb, type TaskRegistry } from "@deckhand/db";
import type { BackendFactory } from "@deckhand/sessions";
import {
  createPostgresTestDatabase,
  createTempRepository,
  gitIn,
  SessionStreamClient,
  testPostgresUrl,
} from "@deckhand/testkit";
import { ErrorResponseSchema, type ServerRoute, serverRoutes, WireHeader } from "@deckhand/wire";
import { z } from "zod";
import { resolveServerConfig, type ServerConfig } from "../src/config.ts";
import { type RunningServer, startServer } from "../src/start-server.ts";

/** Runs cleanups in reverse order; call `run()` from afterEach/afterAll. */
export class Cleanups {
  readonly #steps: (() => Promise<void> | void)[] = [];
  add(step: () => Promise<void> | void): void {
    this.#steps.push(step);
  }
  async run(): Promise<void> {
    for (const step of this.#steps.splice(0).reverse()) await step();
  }
}

export function tempDir(cleanups: Cleanups, prefix = "deckhand-server-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.add(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export { gitIn };

export type Backend = "pglite" | "postgres";

/** The databases server tests run on: PGlite always, PostgreSQL too when DATABASE_URL is set. */
export const backends: { backend: Backend }[] = [
  { backend: "pglite" },
  ...(testPostgresUrl ? [{ backend: "postgres" as const }] : []),
];

/**
 * The `databaseUrl` a test server on `backend` gets: null (embedded PGlite in its data
 * directory), or a fresh PostgreSQL database of its own, dropped at cleanup. Never the shared
 * DATABASE_URL database itself: every test server runs a task worker, and one sharing a
 * database with another test would claim that test's tasks.
 */
export async function databaseUrlFor(cleanups: Cleanups, backend: Backend): Promise<string | null> {
  if (backend === "pglite") return null;
  const database = await createPostgresTestDatabase();
  // Registered before the server that uses it, so it is dropped after that server closed.
  cleanups.add(() => database.drop());
  return database.url;
}

/** A git repository on branch `main` with one commit holding the given files. */
export function makeRepository(
  cleanups: Cleanups,
  files: Record<string, string> = { "README.md": "# demo\n" },
): string {
  const repository = createTempRepository(files);
  cleanups.add(() => repository.remove());
  return repository.path;
}

let pgliteTemplate: Promise<string> | undefined;

/**
 * A PGlite data directory with every migration applied, made once per test file. Creating
 * PGlite's files (initdb, in WebAssembly) and migrating them cost more than the rest of a test
 * server's start; a test server on PGlite starts from a copy instead, which is what the server
 * would have made itself. The server still opens, locks and migrates it (a no-op), and
 * start-server.test.ts and the e2e suites keep starting from empty data directories.
 */
function migratedPgliteTemplate(): Promise<string> {
  pgliteTemplate ??= (async () => {
    const directory = mkdtempSync(join(tmpdir(), "deckhand-server-test-pglite-"));
    process.once("exit", () => rmSync(directory, { recursive: true, force: true }));
    const database = await createDb({ dataDir: join(directory, "db") });
    await database.close();
    return join(directory, "db");
  })();
  return pgliteTemplate;
}

export interface TestServer {
  server: RunningServer;
  config: ServerConfig;
  logs(): string;
  /** Everything the server announced on the terminal (the generated admin token). */
  announced(): string;
  /** Every response body the tests read through `api`, for redaction checks. */
  responses: string[];
  /**
   * Calls the API. Every body is checked against the wire (see `checkResponse`): a response
   * that does not match its route's schema fails the test.
   */
  api<Body = unknown>(
    method: string,
    path: string,
    options?: { body?: unknown; token?: string | null },
  ): Promise<{ status: number; body: Body; text: string }>;
}

export async function startTestServer(
  cleanups: Cleanups,
  options: {
    dataDir: string;
    tasks?: TaskRegistry;
    config?: Partial<ServerConfig>;
    /** Bearer token `api` sends unless a call says otherwise. */
    token?: string;
    /** Makes agent backends instead of the real ACP and native ones. */
    backendFactory?: BackendFactory;
    /**
     * Probe the providers while the server starts. By default only when the test wrote a
     * providers file: otherwise the probes would start whatever agent CLIs the machine has
     * installed, for a test that never looks at them.
     */
    warmUpProviders?: boolean;
  },
): Promise<TestServer> {
  const destination = new PassThrough();
  let logs = "";
  destination.on("data", (chunk: Buffer) => {
    logs += chunk.toString("utf8");
  });
  let announced = "";
  const config: ServerConfig = {
    ...resolveServerConfig(
      { listen: "127.0.0.1:0", dataDir: options.dataDir, logLevel: "debug" },
      { environment: {} },
    ),
    ...options.config,
  };
  const databaseDirectory = join(config.dataDir, "db");
  if (config.databaseUrl === null && !existsSync(databaseDirectory)) {
    cpSync(await migratedPgliteTemplate(), databaseDirectory, { recursive: true });
  }
  const server = await startServer(config, {
    warmUpProviders: options.warmUpProviders ?? existsSync(config.providersConfigPath),
    logDestination: destination,
    announce: (line) => {
      announced += `${line}\n`;
    },
    ...(options.tasks ? { tasks: options.tasks } : {}),
    ...(options.backendFactory ? { createBackend: options.backendFactory } : {}),
  });
  let closed = false;
  const close = server.close;
  server.close = async () => {
    if (closed) return;
    closed = true;
    await close();
  };
  cleanups.add(() => server.close());
  const responses: string[] = [];
  return {
    server,
    config,
    logs: () => logs,
    announced: () => announced,
    responses,
    async api(method, path, callOptions = {}) {
      const token = callOptions.token === undefined ? options.token : callOptions.token;
      const headers: Record<string, string> = {};
      if (token) headers[WireHeader.authorization] = `Bearer ${token}`;
      if (callOptions.body !== undefined) headers["content-type"] = "application/json";
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers,
        ...(callOptions.body !== undefined ? { body: JSON.stringify(callOptions.body) } : {}),
      });
      const text = await response.text();
      responses.push(text);
      return {
        status: response.status,
        body: checkResponse(method, path, response.status, text) as never,
        text,
      };
    },
  };
}

/** The route of the wire route table that serves `method path`, if any. */
function routeOf(method: string, path: string): ServerRoute | undefined {
  const pathname = new URL(path, "http://x").pathname;
  return serverRoutes.find(
    (route) =>
      route.method === method.toLowerCase() &&
      new RegExp(`^${route.path.replace(/:[a-z_]+/g, "[^/]+")}$`).test(pathname),
  );
}

/**
 * Parses a response body and checks it against the wire: the route's success schema for its
 * success status and any other status the route answers with it (a degraded health check's 503), and
 * ErrorResponseSchema for everything else. Validation must change nothing — a field the server
 * sends that the schema does not know (or a default the server left out) is drift as well.
 * Throws, failing the test, naming the route and the problems.
 */
export function checkResponse(method: string, path: string, status: number, text: string): unknown {
  const route = routeOf(method, path);
  const where = `${method} ${path} answered ${status}`;
  const json = (): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      throw new Error(`${where} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
  };
  const shape: ServerRoute | undefined = route;
  const alsoAnswered = shape?.success.alsoAnswers?.[status] !== undefined;
  if (route && (status === route.success.status || alsoAnswered)) {
    const { schema, contentType } = route.success;
    if (schema === null) {
      if (text.length > 0) throw new Error(`${where} with a body where the wire has none`);
      return null;
    }
    const textual = contentType !== undefined && !contentType.includes("json");
    return conform(schema, textual ? text : json(), `${where} (${route.operationId})`);
  }
  if (status >= 200 && status < 300) {
    throw new Error(`${where}, but no route of the wire route table answers that`);
  }
  return conform(ErrorResponseSchema, json(), `${where} (error response)`);
}

function conform(schema: z.ZodType, body: unknown, where: string): unknown {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new Error(`${where} does not match the wire schema: ${z.prettifyError(parsed.error)}`);
  }
  if (!isDeepStrictEqual(parsed.data, body)) {
    throw new Error(
      `${where} differs from what its wire schema makes of it (a field the wire does not know, or one it defaults):\n${JSON.stringify(body)}\n${JSON.stringify(parsed.data)}`,
    );
  }
  return body;
}

/** The session-stream client from testkit, under the name these tests use. */
export { SessionStreamClient as StreamClient };

export async function waitUntil(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 60_000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 25));
  }
}
