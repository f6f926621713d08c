import { randomUUID } from "node:crypto";
import { publishSessionEvent } from "@deckhand/sessions";
import { testPostgresUrl } from "@deckhand/testkit";
import {
  type CreateApiTokenResponse,
  type Project,
  ServerPath,
  type Session,
  serverPath,
} from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import {
  backends,
  Cleanups,
  databaseUrlFor,
  makeRepository,
  StreamClient,
  startTestServer,
  type TestServer,
  tempDir,
} from "./harness.ts";

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

async function openSession(harness: TestServer, repository: string): Promise<Session> {
  const project = await harness.api<Project>("POST", ServerPath.projects, {
    body: { repository_path: repository },
  });
  const session = await harness.api<Session>(
    "POST",
    serverPath(ServerPath.projectSessions, { project_id: project.body.id }),
    { body: {} },
  );
  expect(session.status).toBe(201);
  return session.body;
}

/** Publishes `text` events whose deltas are the numbers from..to, as an agent would. */
async function publishNumbers(
  harness: TestServer,
  sessionId: string,
  from: number,
  to: number,
): Promise<void> {
  const messageId = randomUUID();
  for (let n = from; n <= to; n += 1) {
    await publishSessionEvent(harness.server.database.db, sessionId, null, {
      type: "text",
      message_id: messageId,
      delta: String(n),
    });
  }
}

function numbersOf(client: StreamClient): number[] {
  return client
    .events()
    .flatMap((event) => (event.event.type === "text" ? [Number(event.event.delta)] : []));
}

describe.each(backends)("session stream on $backend", ({ backend }) => {
  it("loses no event across reconnects and a server restart", async () => {
    const dataDir = tempDir(cleanups);
    const repository = makeRepository(cleanups);
    const config = { databaseUrl: await databaseUrlFor(cleanups, backend), workspaceAgent: false };
    let harness = await startTestServer(cleanups, { dataDir, config });
    const session = await openSession(harness, repository);
    const path = serverPath(ServerPath.sessionStream, { session_id: session.id });

    // Every client session's frames, in order; the union must be every event exactly once.
    const received: number[] = [];
    let after: number | undefined;
    const connect = async () => {
      const client = new StreamClient(
        harness.server.url,
        path,
        after === undefined ? {} : { after },
      );
      await client.opened;
      return client;
    };
    const drain = (client: StreamClient) => {
      received.push(...numbersOf(client));
      after = client.lastEventId() || after;
    };

    // Phase 1: a producer publishes while the client drops and reconnects mid-stream.
    const producer = publishNumbers(harness, session.id, 1, 150);
    for (let round = 0; round < 5; round += 1) {
      const client = await connect();
      await client.waitFor((current) => current.frames.some((frame) => frame.type === "ready"));
      await new Promise((resolveWait) => setTimeout(resolveWait, 15));
      await client.close();
      drain(client);
    }
    await producer;

    // Phase 2: the server restarts while a client is connected; the client sees the close.
    const connected = await connect();
    await connected.waitFor((client) => client.frames.some((frame) => frame.type === "ready"));
    await harness.server.close();
    expect((await connected.closed).code).toBe(1001);
    drain(connected);
    harness = await startTestServer(cleanups, { dataDir, config });

    // Phase 3: more events on the restarted server; a reconnect with the last id gets the rest.
    await publishNumbers(harness, session.id, 151, 200);
    const last = await connect();
    await last.waitFor((client) => numbersOf(client).includes(200));
    drain(last);
    await last.close();

    expect(received).toEqual(Array.from({ length: 200 }, (_, index) => index + 1));
  });
});

describe.runIf(testPostgresUrl)("session stream across replicas", () => {
  it("delivers an event published on one replica to a client of another", async () => {
    const repository = makeRepository(cleanups);
    // Two replicas on one database of their own.
    const config = {
      databaseUrl: await databaseUrlFor(cleanups, "postgres"),
      workspaceAgent: false,
    };
    const first = await startTestServer(cleanups, { dataDir: tempDir(cleanups), config });
    const second = await startTestServer(cleanups, { dataDir: tempDir(cleanups), config });
    const session = await openSession(first, repository);
    const client = new StreamClient(
      second.server.url,
      serverPath(ServerPath.sessionStream, { session_id: session.id }),
    );
    cleanups.add(() => client.close());
    await client.opened;
    await client.waitFor((current) => current.frames.some((frame) => frame.type === "ready"));
    await publishNumbers(first, session.id, 1, 20);
    await client.waitFor((current) => numbersOf(current).length === 20, 60_000);
    expect(numbersOf(client)).toEqual(Array.from({ length: 20 }, (_, index) => index + 1));
  });
});

describe("session stream", () => {
  it("sends the backlog, then ready, then live events; a 404 for an unknown session", async () => {
    const harness = await startTestServer(cleanups, {
      dataDir: tempDir(cleanups),
      config: { workspaceAgent: false },
    });
    const session = await openSession(harness, makeRepository(cleanups));
    await publishNumbers(harness, session.id, 1, 3);
    const path = serverPath(ServerPath.sessionStream, { session_id: session.id });
    const client = new StreamClient(harness.server.url, path);
    cleanups.add(() => client.close());
    await client.waitFor((current) => current.frames.some((frame) => frame.type === "ready"));
    expect(client.frames.map((frame) => frame.type)).toEqual(["event", "event", "event", "ready"]);
    const ready = client.frames[3] as { type: "ready"; last_event_id: number };
    expect(ready.last_event_id).toBe(client.lastEventId());
    await publishNumbers(harness, session.id, 4, 4);
    await client.waitFor((current) => numbersOf(current).includes(4));

    const unknown = new StreamClient(
      harness.server.url,
      serverPath(ServerPath.sessionStream, { session_id: randomUUID() }),
    );
    await expect(unknown.opened).rejects.toThrow("404");
    for (const path of [
      serverPath(ServerPath.sessionStream, { session_id: "not-a-uuid" }),
      `${ServerPath.projects}/anything`,
    ]) {
      const refused = new StreamClient(harness.server.url, path);
      await expect(refused.opened).rejects.toThrow("404");
    }
  });

  it("gives every one of many clients, joining while events are published, each event once and in order", async () => {
    const harness = await startTestServer(cleanups, {
      dataDir: tempDir(cleanups),
      config: { workspaceAgent: false },
    });
    const session = await openSession(harness, makeRepository(cleanups));
    const path = serverPath(ServerPath.sessionStream, { session_id: session.id });
    const producer = publishNumbers(harness, session.id, 1, 300);
    const clients: StreamClient[] = [];
    for (let index = 0; index < 10; index += 1) {
      const client = new StreamClient(harness.server.url, path);
      cleanups.add(() => client.close());
      clients.push(client);
      await new Promise((resolveWait) => setTimeout(resolveWait, 10));
    }
    await producer;
    const all = Array.from({ length: 300 }, (_, index) => index + 1);
    for (const client of clients) {
      await client.waitFor((current) => numbersOf(current).length >= 300);
      expect(numbersOf(client)).toEqual(all);
    }
  });

  it("with auth on, accepts the admin token or an API token (header or subprotocol), and refuses others", async () => {
    const adminToken = `admin-${randomUUID()}`;
    const harness = await startTestServer(cleanups, {
      dataDir: tempDir(cleanups),
      config: { workspaceAgent: false, requireAuth: true, adminToken },
      token: adminToken,
    });
    const session = await openSession(harness, makeRepository(cleanups));
    const path = serverPath(ServerPath.sessionStream, { session_id: session.id });

    const created = await harness.api<CreateApiTokenResponse>("POST", ServerPath.apiTokens, {
      body: { name: "browser" },
    });
    expect(created.status).toBe(201);
    const apiToken = created.body.token;

    for (const options of [
      { token: adminToken },
      { token: apiToken },
      { token: apiToken, tokenAs: "subprotocol" as const },
    ]) {
      const client = new StreamClient(harness.server.url, path, options);
      await client.opened;
      await client.close();
    }
    for (const options of [{}, { token: "wrong-token-0123456789" }]) {
      const refused = new StreamClient(harness.server.url, path, options);
      await expect(refused.opened).rejects.toThrow("401");
    }

    // The API token also works for HTTP, until it is revoked.
    expect((await harness.api("GET", ServerPath.projects, { token: apiToken })).status).toBe(200);
    expect((await harness.api("GET", ServerPath.projects, { token: null })).status).toBe(401);
    const revoked = await harness.api(
      "DELETE",
      serverPath(ServerPath.apiToken, { token_id: created.body.api_token.id }),
    );
    expect(revoked.status).toBe(204);
    expect((await harness.api("GET", ServerPath.projects, { token: apiToken })).status).toBe(401);
    const listed = await harness.api<{ api_tokens: { id: string; revoked_at: string | null }[] }>(
      "GET",
      ServerPath.apiTokens,
    );
    expect(listed.text).not.toContain(apiToken);
    expect(listed.body.api_tokens[0]!.revoked_at).not.toBeNull();
  });
});

describe("the generated admin token", () => {
  it("is printed once at the first start that needs auth, works, and is stored only as a hash", async () => {
    const dataDir = tempDir(cleanups);
    const config = { workspaceAgent: false, requireAuth: true, adminToken: null };
    const first = await startTestServer(cleanups, { dataDir, config });
    const token = first.server.generatedAdminToken!;
    expect(token).toBeTruthy();
    expect(first.announced()).toContain(token);
    expect(first.logs()).not.toContain(token);
    expect((await first.api("GET", ServerPath.projects, { token })).status).toBe(200);
    expect((await first.api("GET", ServerPath.projects, { token: null })).status).toBe(401);
    const dump = await first.server.database.query("select * from api_tokens");
    expect(JSON.stringify(dump.rows)).not.toContain(token);
    await first.server.close();

    const second = await startTestServer(cleanups, { dataDir, config });
    expect(second.server.generatedAdminToken).toBeNull();
    expect(second.announced()).toBe("");
    expect((await second.api("GET", ServerPath.projects, { token })).status).toBe(200);
    await second.server.close();

    const reset = await startTestServer(cleanups, {
      dataDir,
      config: { ...config, resetAdminToken: true },
    });
    const replacement = reset.server.generatedAdminToken!;
    expect(replacement).not.toBe(token);
    expect((await reset.api("GET", ServerPath.projects, { token })).status).toBe(401);
    expect((await reset.api("GET", ServerPath.projects, { token: replacement })).status).toBe(200);
  });
});
