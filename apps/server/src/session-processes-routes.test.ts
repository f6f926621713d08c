import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { createTempRepository } from "@deckhand/testkit";
import {
  type Chat,
  type ProcessOutputResponse,
  ServerPath,
  type Session,
  type SessionProcessList,
  serverPath,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveServerConfig } from "./config.ts";
import { type RunningServer, startServer } from "./start-server.ts";

// A real server with its real workspace agent: processes are started as agents start them (a
// process client scoped to a chat), then read and signalled through the session routes.
let server: RunningServer;
let dataDir: string;
let repository: ReturnType<typeof createTempRepository>;
let session: Session;
let chat: Chat;
let otherSession: Session;
let otherChat: Chat;

async function api<T>(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as T };
}

/** Starts a process as an agent of `chatId` does: the workspace agent records its chat. */
function startFor(chatId: string, command: string) {
  return server.agent!.processes.start({
    command,
    workdir: session.worktree_path!,
    background: true,
    chat_id: chatId,
  });
}

const processesOf = (sessionId: string) =>
  serverPath(ServerPath.sessionProcesses, { session_id: sessionId });
const outputOf = (sessionId: string, processId: string, query = "") =>
  `${serverPath(ServerPath.sessionProcessOutput, { session_id: sessionId, process_id: processId })}${query}`;
const signalOf = (sessionId: string, processId: string) =>
  serverPath(ServerPath.sessionProcessSignal, { session_id: sessionId, process_id: processId });

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "deckhand-session-processes-"));
  repository = createTempRepository({ "README.md": "hello\n" });
  const config = resolveServerConfig({ listen: "127.0.0.1:0", dataDir }, { environment: {} });
  server = await startServer(config, {
    logDestination: new PassThrough(),
    warmUpProviders: false,
  });
  const project = await server.sessions.projects.create({ repository_path: repository.path });
  session = await server.sessions.sessions.create(project.id, {});
  chat = await server.sessions.chats.create(session.id, {});
  otherSession = await server.sessions.sessions.create(project.id, {});
  otherChat = await server.sessions.chats.create(otherSession.id, {});
  // Migrating the embedded database takes a while on a loaded machine.
}, 120_000);

afterAll(async () => {
  await server?.close();
  repository?.remove();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("session processes", () => {
  it("lists only the processes of the session's chats, with their command, cwd and state", async () => {
    const mine = await startFor(chat.id, "echo mine");
    const theirs = await startFor(otherChat.id, "echo theirs");
    await server.agent!.processes.waitForExit(mine.id, null, {});
    const listed = await api<SessionProcessList>("GET", processesOf(session.id));
    expect(listed.status).toBe(200);
    const ids = listed.body.processes.map((process) => process.id);
    expect(ids).toContain(mine.id);
    expect(ids).not.toContain(theirs.id);
    expect(listed.body.processes.find((process) => process.id === mine.id)).toMatchObject({
      command: "echo mine",
      workdir: session.worktree_path,
      running: false,
      exit_code: 0,
      chat_id: chat.id,
    });
  });

  it("follows output with a cursor, the long poll answering when new output arrives", async () => {
    const ticking = await startFor(chat.id, "for i in 1 2 3; do echo tick $i; sleep 0.2; done");
    const first = await api<ProcessOutputResponse>(
      "GET",
      outputOf(session.id, ticking.id, "?cursor=0&wait=true&timeout_ms=5000"),
    );
    expect(first.status).toBe(200);
    expect(first.body.output).toMatch(/^tick 1\n/);
    expect(first.body.next_cursor).toBe(first.body.output.length);
    let seen = first.body.output;
    let cursor = first.body.next_cursor;
    let polls = 1;
    for (let running = first.body.running; running; polls += 1) {
      const next = await api<ProcessOutputResponse>(
        "GET",
        outputOf(session.id, ticking.id, `?cursor=${cursor}&wait=true&timeout_ms=5000`),
      );
      // Each answer holds only what came after the cursor.
      expect(next.body.next_cursor).toBe(cursor + next.body.output.length);
      seen += next.body.output;
      cursor = next.body.next_cursor;
      running = next.body.running;
    }
    // A poll waits for new output rather than answering at once: a handful, not a busy loop.
    expect(polls).toBeLessThan(10);
    expect(seen).toBe("tick 1\ntick 2\ntick 3\n");
    const snapshot = await api<ProcessOutputResponse>("GET", outputOf(session.id, ticking.id));
    expect(snapshot.body).toMatchObject({ output: seen, running: false, exit_code: 0 });
  });

  it("sends SIGTERM to a running process, which then reports the signal", async () => {
    const sleeper = await startFor(chat.id, "sleep 60");
    const sent = await api<{ id: string; signal: string }>(
      "POST",
      signalOf(session.id, sleeper.id),
      {
        signal: "terminate",
      },
    );
    expect(sent).toEqual({ status: 200, body: { id: sleeper.id, signal: "terminate" } });
    const done = await api<ProcessOutputResponse>(
      "GET",
      outputOf(session.id, sleeper.id, "?wait=true&timeout_ms=10000"),
    );
    expect(done.body.running).toBe(false);
    const listed = await api<SessionProcessList>("GET", processesOf(session.id));
    expect(listed.body.processes.find((process) => process.id === sleeper.id)).toMatchObject({
      running: false,
      signal: "SIGTERM",
    });
  });

  it("answers 404 for another session's process, for output and signals alike", async () => {
    const theirs = await startFor(otherChat.id, "sleep 30");
    const output = await api<{ error: { code: string; message: string } }>(
      "GET",
      outputOf(session.id, theirs.id),
    );
    expect(output.status).toBe(404);
    expect(output.body.error.message).toContain(`no process with id "${theirs.id}" in session`);
    const signalled = await api<{ error: { code: string } }>(
      "POST",
      signalOf(session.id, theirs.id),
      {
        signal: "kill",
      },
    );
    expect(signalled.status).toBe(404);
    // The process was not touched, and its own session still reaches it.
    const own = await api<ProcessOutputResponse>("GET", outputOf(otherSession.id, theirs.id));
    expect(own.body.running).toBe(true);
    await api("POST", signalOf(otherSession.id, theirs.id), { signal: "kill" });
  });

  it("answers 404 for an unknown session and 400 for a signal or query it does not know", async () => {
    const unknown = await api<{ error: { code: string } }>(
      "GET",
      processesOf("00000000-0000-4000-8000-000000000000"),
    );
    expect(unknown.status).toBe(404);
    const process = await startFor(chat.id, "true");
    const badSignal = await api<{ error: { code: string; message: string } }>(
      "POST",
      signalOf(session.id, process.id),
      { signal: "SIGHUP" },
    );
    expect(badSignal.status).toBe(400);
    expect(badSignal.body.error.message).toContain("signal");
    const badWait = await api<{ error: { code: string } }>(
      "GET",
      outputOf(session.id, process.id, "?timeout_ms=600000"),
    );
    expect(badWait.status).toBe(400);
  });
});
