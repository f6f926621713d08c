// `deckhand up` as its own process for the end-to-end suites: embedded database (or a
// PostgreSQL database of its own when DATABASE_URL is set), the local workspace agent, a fake
// model upstream from its config file, and the scripted ACP agent as the `scripted` provider.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  createPostgresTestDatabase,
  createTempRepository,
  type FakeModel,
  type PostgresTestDatabase,
  type SessionStreamClient,
  type SpawnedService,
  scriptedAcpAgentCommand,
  spawnService,
  startFakeModel,
  type TempRepository,
  testPostgresUrl,
} from "@deckhand/testkit";
import {
  type CreateMessageResponse,
  ServerPath,
  type SessionEvent,
  serverPath,
  WireEnv,
} from "@deckhand/wire";
import { expect } from "vitest";

export const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));
const UPSTREAM_KEY_ENV = "E2E_FAKE_UPSTREAM_KEY";
export const UPSTREAM_KEY = "sk-e2e-upstream-key-0123456789";
const DATABASE_URL_ENV = "DATABASE_URL";

export interface DeckhandUp {
  /** The running server; a new one after `restart`. */
  server: SpawnedService;
  model: FakeModel;
  /** A git repository to add as a project. */
  repository: TempRepository;
  dataDir: string;
  /** Sends SIGTERM and resolves once the server has exited (a graceful shutdown). */
  stop(): Promise<void>;
  /** Starts the server again over the same data directory, on the same address. */
  start(): Promise<void>;
  /** Stops the server (if still running) and removes everything it made. */
  close(): Promise<void>;
}

export interface DeckhandUpOptions {
  /** Sets DECKHAND_ADMIN_TOKEN: the API (and session streams) then want it as a bearer token. */
  adminToken?: string;
  /** More top-level fields of `<data-dir>/config.json` (`codeHosts`, say). */
  config?: Record<string, unknown>;
  /** More environment for the server (a code host token, say). */
  env?: Record<string, string>;
}

/**
 * `deckhand up` from source over `dataDir`, with `env` as its environment, on a free loopback
 * port (or `listen`'s, to come back where a page expects it after a restart).
 */
export function spawnDeckhandUp(
  dataDir: string,
  env: NodeJS.ProcessEnv,
  listen = "127.0.0.1:0",
): Promise<SpawnedService> {
  return spawnService(
    process.execPath,
    [
      "--conditions=source",
      join(repositoryRoot, "apps/cli/src/bin.ts"),
      "up",
      "--listen",
      listen,
      "--data-dir",
      dataDir,
    ],
    { readyMessage: "deckhand server listening", cwd: repositoryRoot, env, timeoutMs: 60_000 },
  );
}

/** How a suite calls the server's API: its status and parsed body. */
export type ApiCall = <Body>(
  method: string,
  path: string,
  body?: unknown,
) => Promise<{ status: number; body: Body }>;

/** Sends a message, waits until its turn has finished on `stream`, and returns the turn's events. */
export async function runTurnAndWait(
  api: ApiCall,
  stream: SessionStreamClient,
  chatId: string,
  agent: string,
  text: string,
): Promise<SessionEvent[]> {
  const posted = await api<CreateMessageResponse>(
    "POST",
    serverPath(ServerPath.chatMessages, { chat_id: chatId }),
    { agent, text },
  );
  expect(posted.status).toBe(202);
  const started = () =>
    stream
      .events()
      .find(
        (event) =>
          event.event.type === "turn_started" &&
          event.event.user_message_id === posted.body.message.id,
      );
  await stream.waitFor(() => started() !== undefined, 60_000);
  const messageId = (started()!.event as { message_id: string }).message_id;
  await stream.waitFor(
    (client) =>
      client
        .events()
        .some(
          (event) => event.event.type === "turn_finished" && event.event.message_id === messageId,
        ),
    30_000,
  );
  return stream
    .events()
    .filter((event) => "message_id" in event.event && event.event.message_id === messageId);
}

export async function startDeckhandUp(options: DeckhandUpOptions = {}): Promise<DeckhandUp> {
  const dataDir = mkdtempSync(join(tmpdir(), "deckhand-e2e-"));
  const repository = createTempRepository({ "README.md": "# e2e\n" });
  const model = await startFakeModel();
  let database: PostgresTestDatabase | undefined;
  writeFileSync(
    join(dataDir, "config.json"),
    JSON.stringify({
      modelUpstreams: {
        deckhand: { kind: "openai", baseUrl: `${model.url}/v1`, apiKeyEnv: UPSTREAM_KEY_ENV },
      },
      ...options.config,
    }),
  );
  writeFileSync(
    join(dataDir, "providers.json"),
    JSON.stringify({
      providers: {
        scripted: {
          extends: "acp",
          label: "Scripted ACP agent",
          command: scriptedAcpAgentCommand(),
        },
      },
    }),
  );
  // On PostgreSQL (DATABASE_URL set) the server gets a database of its own: its task worker
  // must not claim other tests' agent turns from a shared one.
  const serverEnvironment: NodeJS.ProcessEnv = { ...process.env };
  delete serverEnvironment[DATABASE_URL_ENV];
  if (testPostgresUrl) {
    database = await createPostgresTestDatabase();
    serverEnvironment[DATABASE_URL_ENV] = database.url;
  }
  const environment = {
    ...serverEnvironment,
    [UPSTREAM_KEY_ENV]: UPSTREAM_KEY,
    ...options.env,
    ...(options.adminToken ? { [WireEnv.adminToken]: options.adminToken } : {}),
  };
  const up: DeckhandUp = {
    server: await spawnDeckhandUp(dataDir, environment),
    model,
    repository,
    dataDir,
    async stop() {
      if (up.server.child.exitCode !== null || up.server.child.signalCode !== null) return;
      up.server.child.kill("SIGTERM");
      await up.server.exited;
    },
    async start() {
      up.server = await spawnDeckhandUp(dataDir, environment, new URL(up.server.url).host);
    },
    async close() {
      await up.stop();
      await model.close();
      await database?.drop();
      repository.remove();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return up;
}
