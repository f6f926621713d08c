// The secrets canary: `deckhand up` as its own process with an upstream key, an admin token and
// well-known provider keys in its environment. The native agent runs `env` through `execute`,
// the scripted ACP agent runs it in an ACP terminal and reports its own environment, and both
// print a file holding the upstream key. No secret may come out anywhere: not in a WebSocket
// frame, an HTTP response, a recording, a log line, a database table or a model request — and
// the key a tool printed reaches all of them as the one redaction marker.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDb } from "@deckhand/db";
import {
  createPostgresTestDatabase,
  createTempRepository,
  type FakeModel,
  type PostgresTestDatabase,
  SessionStreamClient,
  type SpawnedService,
  scriptedAcpAgentCommand,
  startFakeModel,
  type TempRepository,
  testPostgresUrl,
  turn,
} from "@deckhand/testkit";
import {
  type Chat,
  type Project,
  ServerPath,
  type Session,
  serverPath,
  WireEnv,
  WireHeader,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runTurnAndWait, spawnDeckhandUp } from "./deckhand-up.ts";

const DATABASE_URL_ENV = "DATABASE_URL";
const MARKER = "[REDACTED]";

/** The upstream key: Deckhand's own secret, named by `apiKeyEnv` in config.json. */
const UPSTREAM_KEY_ENV = "E2E_CANARY_UPSTREAM_KEY";
const UPSTREAM_KEY = "sk-canary-upstream-key-7f3a9c21e5";
const ADMIN_TOKEN = "canary-admin-token-5b8e0d4c7a1f9e63";
/** On the default deny list. */
const OPERATOR_KEY = "sk-canary-operator-openai-key-4d2b8e";
/** Denied by a pattern in config.json. */
const CONFIG_DENIED = "canary-config-denied-value-91c7";
/** On the default deny list (`*_API_KEY`) but allowed in config.json: passed on on purpose. */
const ALLOWED_VALUE = "allowed-through-on-purpose-3e1d";

/** Secrets that may appear nowhere at all. */
const canaries = {
  [UPSTREAM_KEY_ENV]: UPSTREAM_KEY,
  [WireEnv.adminToken]: ADMIN_TOKEN,
  OPENAI_API_KEY: OPERATOR_KEY,
  E2E_DENIED_BY_CONFIG: CONFIG_DENIED,
};

/** What an agent printed may hold none of the canaries, not even redacted by accident. */
function expectNoCanary(text: string, where: string): void {
  for (const [name, value] of Object.entries(canaries)) {
    expect(text.includes(value), `${name}'s value found in ${where}`).toBe(false);
    // A variable's name starts a line: after a newline, or an escaped one inside JSON.
    expect(text, `${name} found in ${where}`).not.toMatch(
      new RegExp(`(?:^|[^A-Za-z0-9_]|\\\\n)${name}=`),
    );
  }
}

let dataDir: string;
let repository: TempRepository;
let model: FakeModel;
let server: SpawnedService;
let database: PostgresTestDatabase | undefined;
const responses: string[] = [];

async function api<Body>(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Body }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      [WireHeader.authorization]: `Bearer ${ADMIN_TOKEN}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  responses.push(text);
  return { status: response.status, body: (text ? JSON.parse(text) : null) as Body };
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "deckhand-e2e-secrets-"));
  repository = createTempRepository({
    "README.md": "# secrets\n",
    // What a careless project might hold: the very key the server uses upstream.
    "leak.txt": `key=${UPSTREAM_KEY}\n`,
  });
  model = await startFakeModel();
  writeFileSync(
    join(dataDir, "config.json"),
    JSON.stringify({
      modelUpstreams: {
        deckhand: { kind: "openai", baseUrl: `${model.url}/v1`, apiKeyEnv: UPSTREAM_KEY_ENV },
      },
      agentEnvironment: { deny: ["E2E_DENIED_*"], allow: ["E2E_ALLOWED_API_KEY"] },
    }),
  );
  writeFileSync(
    join(dataDir, "providers.json"),
    JSON.stringify({
      providers: {
        scripted: { extends: "acp", label: "Scripted", command: scriptedAcpAgentCommand() },
      },
    }),
  );
  const serverEnvironment: NodeJS.ProcessEnv = { ...process.env, ...canaries };
  serverEnvironment.E2E_ALLOWED_API_KEY = ALLOWED_VALUE;
  delete serverEnvironment[DATABASE_URL_ENV];
  if (testPostgresUrl) {
    database = await createPostgresTestDatabase();
    serverEnvironment[DATABASE_URL_ENV] = database.url;
  }
  server = await spawnDeckhandUp(dataDir, serverEnvironment);
});

afterAll(async () => {
  if (server && server.child.exitCode === null) {
    server.child.kill("SIGTERM");
    await server.exited;
  }
  await model?.close();
  await database?.drop();
  repository?.remove();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("secrets never reach agent processes", () => {
  let chat: Chat;
  let stream: SessionStreamClient;

  beforeAll(async () => {
    const project = await api<Project>("POST", ServerPath.projects, {
      repository_path: repository.path,
    });
    expect(project.status).toBe(201);
    const session = await api<Session>(
      "POST",
      serverPath(ServerPath.projectSessions, { project_id: project.body.id }),
      { title: "secrets", approval_policy: "never" },
    );
    expect(session.status).toBe(201);
    chat = (
      await api<Chat>(
        "POST",
        serverPath(ServerPath.sessionChats, { session_id: session.body.id }),
        {},
      )
    ).body;
    stream = new SessionStreamClient(
      server.url,
      serverPath(ServerPath.sessionStream, { session_id: session.body.id }),
      { token: ADMIN_TOKEN },
    );
    await stream.opened;
  });

  afterAll(async () => {
    await stream?.close();
  });

  /** Sends a message, waits for its turn to finish and returns what the turn streamed. */
  async function runTurn(agent: string, text: string): Promise<string> {
    return JSON.stringify(await runTurnAndWait(api, stream, chat.id, agent, text));
  }

  it("native execute sees neither Deckhand's secrets nor denied keys, and its output reaches the model redacted", async () => {
    model.script([
      turn.functionCall("execute", { command: "env; cat leak.txt" }),
      turn.text("done"),
    ]);
    const streamed = await runTurn("deckhand", "print the environment");
    // The command really ran with the allowed variable, and the file's key came out redacted.
    expect(streamed).toContain(`E2E_ALLOWED_API_KEY=${ALLOWED_VALUE}`);
    expect(streamed).toContain(`key=${MARKER}`);
    expect(streamed).not.toMatch(/DATABASE_URL=/);
    expectNoCanary(streamed, "the native turn");
    const followUp = model.requests.at(-1)!.body;
    expect(followUp).toContain(`E2E_ALLOWED_API_KEY=${ALLOWED_VALUE}`);
    expect(followUp).toContain(`key=${MARKER}`);
    expectNoCanary(followUp, "the model request after execute");
  });

  it("an ACP terminal sees neither, and its output reaches the agent redacted", async () => {
    const streamed = await runTurn("scripted", "run env; cat leak.txt");
    expect(streamed).toContain(`E2E_ALLOWED_API_KEY=${ALLOWED_VALUE}`);
    expect(streamed).toContain(`key=${MARKER}`);
    expect(streamed).not.toMatch(/DATABASE_URL=/);
    expectNoCanary(streamed, "the ACP terminal's output");
  });

  it("an ACP agent's own environment holds neither", async () => {
    const streamed = await runTurn("scripted", "env");
    expect(streamed).toContain(`E2E_ALLOWED_API_KEY=${ALLOWED_VALUE}`);
    expect(streamed).toContain("PATH=");
    expect(streamed).not.toMatch(/DATABASE_URL=/);
    expectNoCanary(streamed, "the ACP agent's environment");
  });

  it("leaves no secret in any frame, response, recording, log line, table or model request", async () => {
    await api("GET", serverPath(ServerPath.chatMessages, { chat_id: chat.id }));
    server.child.kill("SIGTERM");
    expect(await server.exited).toEqual({ code: 0, signal: null });

    const recordingsDir = join(dataDir, "recordings");
    const recordings = readdirSync(recordingsDir)
      .map((name) => readFileSync(join(recordingsDir, name), "utf8"))
      .join("\n");
    const dbHandle = await createDb(
      database ? { databaseUrl: database.url } : { dataDir: join(dataDir, "db") },
    );
    const dump: string[] = [];
    try {
      const tables = await dbHandle.query<{ table_schema: string; table_name: string }>(
        `select table_schema, table_name from information_schema.tables
         where table_schema in ('public', 'drizzle') and table_type = 'BASE TABLE'`,
      );
      for (const { table_schema: schema, table_name: table } of tables.rows) {
        const { rows } = await dbHandle.query(`select * from "${schema}"."${table}"`);
        dump.push(`${schema}.${table}: ${JSON.stringify(rows)}`);
      }
    } finally {
      await dbHandle.close();
    }
    const upstreamBodies = model.requests.map((request) => request.body).join("\n");
    // Every upstream request carries the key in its authorization header: that is its job.
    const upstreamHeaders = model.requests
      .map((request) => JSON.stringify({ ...request.headers, authorization: undefined }))
      .join("\n");

    const everywhere = [
      ["stream frames", stream.raw.join("\n")],
      ["HTTP responses", responses.join("\n")],
      ["recordings", recordings],
      ["log lines", server.output.join("\n")],
      ["database", dump.join("\n")],
      ["upstream request bodies", upstreamBodies],
      ["upstream request headers", upstreamHeaders],
    ] as const;
    // The canary has teeth: the key really went through, redacted, where the output went.
    for (const where of ["stream frames", "HTTP responses", "recordings", "database"]) {
      const text = everywhere.find(([name]) => name === where)![1];
      expect(text, `${where} hold the redacted file`).toContain(`key=${MARKER}`);
    }
    expect(upstreamBodies).toContain(`key=${MARKER}`);
    for (const [where, text] of everywhere) {
      for (const [name, value] of Object.entries(canaries)) {
        expect(text.includes(value), `${name}'s value found in ${where}`).toBe(false);
      }
    }
  });
});
