// The server-level canary: one known model token pushed through every path the server has —
// proxied model requests good and bad, an unreachable upstream, API requests that echo input,
// an agent that prints the token into the session stream, a task handler that crashes with the
// token in its error — then searched for in every log line, response, WebSocket frame and a
// dump of every database table. It may appear nowhere (the database holds only its hash).
import { createServer } from "node:net";
import { TaskRegistry } from "@deckhand/db";
import { mintModelToken } from "@deckhand/model-proxy";
import { AGENT_TURN_TASK, type AgentTurnPayload, publishSessionEvent } from "@deckhand/sessions";
import { type FakeUpstream, startFakeUpstream } from "@deckhand/testkit";
import {
  type Chat,
  type Project,
  ServerPath,
  type Session,
  serverPath,
  WireHeader,
  WirePath,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  backends,
  Cleanups,
  databaseUrlFor,
  makeRepository,
  StreamClient,
  startTestServer,
  type TestServer,
  tempDir,
  waitUntil,
} from "./harness.ts";

const cleanups = new Cleanups();

const JOB = "canary-job";
const UPSTREAM_KEY = "sk-canary-upstream-key-0123456789";

/** A port nothing listens on: bound, noted, released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolveClose) => server.close(resolveClose));
  return port;
}

describe.each(backends)("server-wide model token redaction canary on $backend", ({ backend }) => {
  let upstream: FakeUpstream;
  let harness: TestServer;
  let token = "";
  const captured: string[] = [];
  let attempts = 0;

  beforeAll(async () => {
    upstream = await startFakeUpstream();
    cleanups.add(() => upstream.close());
    const deadPort = await closedPort();
    const tasks = new TaskRegistry().register<AgentTurnPayload>(AGENT_TURN_TASK, {
      async handle(payload) {
        attempts += 1;
        // An agent that prints its environment: the token goes into the session stream.
        await publishSessionEvent(harness.server.database.db, payload.session_id, payload.chat_id, {
          type: "tool_update",
          message_id: payload.user_message_id,
          tool_call_id: "call-1",
          content: `DECKHAND_TOKEN_ECHO=${token}`,
          output: { env: { token } },
        });
        // And then crashes with the token in its error.
        throw new Error(`agent crashed while holding ${token}`);
      },
    });
    harness = await startTestServer(cleanups, {
      dataDir: tempDir(cleanups),
      tasks,
      config: {
        databaseUrl: await databaseUrlFor(cleanups, backend),
        workspaceAgent: false,
        modelUpstreams: {
          codex: { kind: "openai", baseUrl: `${upstream.url}/v1`, apiKey: UPSTREAM_KEY },
          claude: {
            kind: "anthropic",
            baseUrl: `http://127.0.0.1:${deadPort}/v1`,
            apiKey: UPSTREAM_KEY,
          },
        },
      },
    });
    token = (await mintModelToken(harness.server.modelTokens, { jobId: JOB, ttlMs: 60_000 })).token;
  });
  afterAll(() => cleanups.run());

  async function proxied(path: string, headers: Record<string, string>, body: string) {
    const response = await fetch(`${harness.server.url}${WirePath.modelProvider}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });
    const text = await response.text();
    captured.push(`${response.status} ${JSON.stringify([...response.headers])} ${text}`);
    return { status: response.status, text };
  }

  it("never lets the token out through any path", async () => {
    const auth = { [WireHeader.authorization]: `Bearer ${token}` };
    const request = JSON.stringify({ model: "gpt-5-codex", input: `hello ${token}`, stream: true });

    // Good request, streamed.
    const good = await proxied(
      "/codex/v1/responses",
      { ...auth, [WireHeader.jobId]: JOB },
      request,
    );
    expect(good.status).toBe(200);
    // Wrong job, missing job, token in the job header, garbage body, unknown agent type.
    expect(
      (await proxied("/codex/v1/responses", { ...auth, [WireHeader.jobId]: "other" }, request))
        .status,
    ).toBe(401);
    expect((await proxied("/codex/v1/responses", auth, request)).status).toBe(401);
    expect(
      (await proxied("/codex/v1/responses", { ...auth, [WireHeader.jobId]: token }, request))
        .status,
    ).toBe(401);
    await proxied("/codex/v1/responses", { ...auth, [WireHeader.jobId]: JOB }, `{${token}`);
    await proxied(`/${token}/v1/responses`, { ...auth, [WireHeader.jobId]: JOB }, request);
    // An unreachable upstream.
    const down = await proxied(
      "/claude/v1/messages",
      { ...auth, [WireHeader.jobId]: JOB },
      request,
    );
    expect(down.status).toBeGreaterThanOrEqual(500);

    // API requests that echo what they were given.
    await harness.api("POST", ServerPath.projects, { body: { repository_path: `/tmp/${token}` } });
    await harness.api("POST", ServerPath.projects, { body: { repository_url: token } });
    await harness.api("GET", `${ServerPath.projects}/${token}`);
    await harness.api("GET", `${WirePath.serverApi}/${token}`);
    await harness.api("GET", ServerPath.projects, { token });

    // A session whose agent echoes the token and then crashes with it.
    const project = await harness.api<Project>("POST", ServerPath.projects, {
      body: { repository_path: makeRepository(cleanups) },
    });
    const session = await harness.api<Session>(
      "POST",
      serverPath(ServerPath.projectSessions, { project_id: project.body.id }),
      { body: {} },
    );
    const chat = await harness.api<Chat>(
      "POST",
      serverPath(ServerPath.sessionChats, { session_id: session.body.id }),
      { body: {} },
    );
    const stream = new StreamClient(
      harness.server.url,
      serverPath(ServerPath.sessionStream, { session_id: session.body.id }),
    );
    cleanups.add(() => stream.close());
    await stream.opened;
    await harness.api("POST", serverPath(ServerPath.chatMessages, { chat_id: chat.body.id }), {
      body: { agent: "codex", text: `use ${token} please` },
    });
    await stream.waitFor((client) =>
      client.events().some((event) => event.event.type === "tool_update"),
    );
    await waitUntil(
      async () => {
        const { rows } = await harness.server.database.query<{ last_error: string | null }>(
          "select last_error from tasks where type = $1",
          [AGENT_TURN_TASK],
        );
        return rows.some((row) => row.last_error !== null);
      },
      60_000,
      "the crashed task's error to be stored",
    );
    await harness.api("GET", serverPath(ServerPath.chatMessages, { chat_id: chat.body.id }));
    await harness.api("GET", `${ServerPath.usage}?job_id=${JOB}`);
    expect(attempts).toBeGreaterThan(0);

    // Everything the database holds, table by table.
    const tables = await harness.server.database.query<{
      table_schema: string;
      table_name: string;
    }>(
      `select table_schema, table_name from information_schema.tables
       where table_schema in ('public', 'drizzle') and table_type = 'BASE TABLE'`,
    );
    const dump: string[] = [];
    for (const { table_schema: schema, table_name: table } of tables.rows) {
      const { rows } = await harness.server.database.query(`select * from "${schema}"."${table}"`);
      dump.push(`${schema}.${table}: ${JSON.stringify(rows)}`);
    }
    const dumped = dump.join("\n");

    // The canary has teeth: the paths above were really exercised.
    expect(harness.logs()).toContain("task attempt failed");
    expect(stream.raw.join("\n")).toContain("[REDACTED]");
    expect(dumped).toContain("[REDACTED]");
    expect(upstream.requests.length).toBeGreaterThan(0);

    const everything = [
      ["logs", harness.logs()],
      ["announced", harness.announced()],
      ["api responses", harness.responses.join("\n")],
      ["proxy responses", captured.join("\n")],
      ["stream frames", stream.raw.join("\n")],
      ["database", dumped],
    ] as const;
    for (const [where, text] of everything) {
      expect(text.includes(token), `token found in ${where}`).toBe(false);
      expect(text.includes(UPSTREAM_KEY), `upstream key found in ${where}`).toBe(false);
    }
    // Only the hash is stored.
    expect(dumped).toMatch(/"token_hash":"[0-9a-f]{64}"/);
  });
});
