import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentBackend, PermissionAnswer, PromptInput } from "@deckhand/agent-backends";
import { assistantMessageId, type BackendRequest } from "@deckhand/sessions";
import {
  type Chat,
  type CreateMessageResponse,
  type Message,
  MODEL_TOKEN_PREFIX,
  type PendingChange,
  type Project,
  ServerPath,
  type Session,
  serverPath,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Cleanups,
  makeRepository,
  StreamClient,
  startTestServer,
  type TestServer,
  tempDir,
} from "./harness.ts";

const cleanups = new Cleanups();
afterAll(() => cleanups.run());

const requests: BackendRequest[] = [];
let disposed = 0;

/**
 * A scripted backend: "edit" writes a file after asking permission; "wait" runs until it is
 * cancelled. It goes through the same server path a real ACP or native backend does.
 */
function fakeBackend(request: BackendRequest): AgentBackend {
  let pendingPermission: ((answer: PermissionAnswer) => void) | null = null;
  let cancelTurn: (() => void) | null = null;
  return {
    async ensureSession() {
      return { agentSessionId: `fake-${request.context.sessionId.slice(0, 8)}`, resumed: false };
    },
    async prompt(input: PromptInput) {
      const { messageId, onEvent } = input;
      await onEvent({ type: "text", message_id: messageId, delta: "Looking" });
      await onEvent({ type: "text", message_id: messageId, delta: " at it." });
      if (input.text === "hello") {
        await onEvent({ type: "turn_end", message_id: messageId, stop_reason: "end_turn" });
        return { stopReason: "end_turn", text: "Looking at it." };
      }
      if (input.text === "retry") {
        await onEvent({
          type: "retry",
          message_id: messageId,
          attempt: 1,
          delay_ms: 0,
          reason: "dropped",
        });
        await onEvent({ type: "text", message_id: messageId, delta: "Final answer." });
        await onEvent({ type: "turn_end", message_id: messageId, stop_reason: "end_turn" });
        return { stopReason: "end_turn", text: "Final answer." };
      }
      if (input.text.startsWith("slow ")) {
        await new Promise((resolveWait) => setTimeout(resolveWait, 200));
        await onEvent({ type: "text", message_id: messageId, delta: input.text });
        await onEvent({ type: "turn_end", message_id: messageId, stop_reason: "end_turn" });
        return { stopReason: "end_turn", text: input.text };
      }
      if (input.text === "wait") {
        await new Promise<void>((resolveWait) => {
          cancelTurn = resolveWait;
        });
        await onEvent({ type: "turn_end", message_id: messageId, stop_reason: "cancelled" });
        return { stopReason: "cancelled", text: "Looking at it." };
      }
      await onEvent({
        type: "tool_call",
        message_id: messageId,
        tool_call_id: "call-1",
        title: "Write notes.txt",
        kind: "edit",
        status: "pending",
        locations: ["notes.txt"],
      });
      await onEvent({
        type: "permission_request",
        message_id: messageId,
        request_id: "perm-1",
        tool_call_id: "call-1",
        title: "Write notes.txt?",
        options: [
          { option_id: "allow", name: "Allow", kind: "allow_once" },
          { option_id: "reject", name: "Reject", kind: "reject_once" },
        ],
      });
      const answer = await new Promise<PermissionAnswer>((resolveAnswer) => {
        pendingPermission = resolveAnswer;
      });
      await onEvent({
        type: "permission_resolved",
        message_id: messageId,
        request_id: answer.requestId,
        outcome: answer.outcome,
      });
      if (answer.outcome === "allow_once") {
        writeFileSync(join(request.context.worktreePath, "notes.txt"), "written by the agent\n");
      }
      await onEvent({
        type: "tool_update",
        message_id: messageId,
        tool_call_id: "call-1",
        status: answer.outcome === "allow_once" ? "completed" : "failed",
        content: answer.outcome,
      });
      await onEvent({ type: "turn_end", message_id: messageId, stop_reason: "end_turn" });
      return { stopReason: "end_turn", text: "Looking at it." };
    },
    async cancel() {
      cancelTurn?.();
    },
    async respondToPermission(answer) {
      pendingPermission?.(answer);
    },
    async closeSession() {},
    async dispose() {
      disposed += 1;
    },
    health() {
      return { status: "idle", pid: null, lastError: null };
    },
  };
}

let harness: TestServer;
let session: Session;
let chat: Chat;

beforeAll(async () => {
  const dataDir = tempDir(cleanups);
  // A custom provider the registry resolves (node itself); the fake factory stands in for it.
  writeFileSync(
    join(dataDir, "providers.json"),
    JSON.stringify({
      providers: {
        fake: { extends: "acp", label: "Fake", command: [process.execPath, "-e", "0"] },
        // Built-ins with their command swapped for one that exists here.
        codex: { command: [process.execPath, "-e", "0"] },
        claude: { command: [process.execPath, "-e", "0"] },
      },
    }),
  );
  harness = await startTestServer(cleanups, {
    dataDir,
    config: {
      modelUpstreams: {
        codex: {
          kind: "openai",
          baseUrl: "http://127.0.0.1:9/v1",
          apiKey: "sk-not-used-0123456789",
        },
      },
    },
    backendFactory: (request) => {
      requests.push(request);
      return fakeBackend(request);
    },
  });
  const project = await harness.api<Project>("POST", ServerPath.projects, {
    body: { repository_path: makeRepository(cleanups) },
  });
  session = (
    await harness.api<Session>(
      "POST",
      serverPath(ServerPath.projectSessions, { project_id: project.body.id }),
      { body: {} },
    )
  ).body;
  chat = (
    await harness.api<Chat>(
      "POST",
      serverPath(ServerPath.sessionChats, { session_id: session.id }),
      {
        body: {},
      },
    )
  ).body;
});

async function send(text: string, agent = "fake"): Promise<CreateMessageResponse> {
  const response = await harness.api<CreateMessageResponse>(
    "POST",
    serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
    { body: { agent, text } },
  );
  expect(response.status).toBe(202);
  return response.body;
}

async function waitForReply(userMessageId: string): Promise<Message> {
  const id = assistantMessageId(userMessageId);
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const messages = await harness.api<{ messages: Message[] }>(
      "GET",
      serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
    );
    const reply = messages.body.messages.find((message) => message.id === id);
    if (reply && reply.status !== "streaming") return reply;
    await new Promise((resolveWait) => setTimeout(resolveWait, 50));
  }
  throw new Error(`no finished reply to ${userMessageId}`);
}

describe("agent turns", () => {
  it("streams a turn, waits for a permission answer, records pending changes and the answer's parts", async () => {
    const stream = new StreamClient(
      harness.server.url,
      serverPath(ServerPath.sessionStream, { session_id: session.id }),
    );
    cleanups.add(() => stream.close());
    await stream.opened;
    const posted = await send("edit");
    await stream.waitFor((client) =>
      client.events().some((event) => event.event.type === "permission_request"),
    );
    const answered = await harness.api(
      "POST",
      serverPath(ServerPath.agentPermission, {
        session_id: session.id,
        agent: "fake",
        request_id: "perm-1",
      }),
      { body: { outcome: "allow_once" } },
    );
    expect(answered.status).toBe(202);
    await stream.waitFor((client) =>
      client.events().some((event) => event.event.type === "turn_finished"),
    );
    const types = stream.events().map((event) => event.event.type);
    expect(types).toEqual([
      "message_created",
      "turn_started",
      "agent_session",
      "text",
      "text",
      "tool_call",
      "permission_request",
      "permission_resolved",
      "tool_update",
      "turn_end",
      "pending_changes",
      "turn_finished",
    ]);
    expect(requests[0]!.context).toMatchObject({
      sessionId: session.id,
      chatId: chat.id,
      worktreePath: session.worktree_path,
      resumeSessionId: null,
    });
    // A custom provider has no model-proxy route of its own.
    expect(requests[0]!.context.modelProxy).toBeNull();

    const messages = await harness.api<{ messages: Message[] }>(
      "GET",
      serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
    );
    const answer = messages.body.messages.find((message) => message.role === "assistant")!;
    expect(answer.id).toBe(assistantMessageId(posted.message.id));
    expect(answer).toMatchObject({ agent: "fake", status: "complete" });
    expect(answer.parts.map((part) => part.kind)).toEqual(["text", "tool_call"]);
    expect(answer.parts[0]!.content).toEqual({ text: "Looking at it." });
    expect(answer.parts[1]!.content).toMatchObject({ tool_call_id: "call-1", status: "completed" });

    const pending = await harness.api<{ pending_changes: PendingChange[] }>(
      "GET",
      serverPath(ServerPath.sessionPendingChanges, { session_id: session.id }),
    );
    expect(pending.body.pending_changes).toEqual([
      expect.objectContaining({ path: "notes.txt", agent: "fake", chat_id: chat.id }),
    ]);
    const health = await harness.api<{ agents: { agent: string; session_id: string }[] }>(
      "GET",
      ServerPath.health,
    );
    expect(health.body.agents).toEqual([
      expect.objectContaining({ agent: "fake", session_id: session.id }),
    ]);
  });

  it("cancels a running turn through the API; the message ends cancelled", async () => {
    const stream = new StreamClient(
      harness.server.url,
      serverPath(ServerPath.sessionStream, { session_id: session.id }),
      { after: 0 },
    );
    cleanups.add(() => stream.close());
    await stream.waitFor((client) => client.frames.some((frame) => frame.type === "ready"));
    const before = stream.lastEventId();
    await send("wait");
    await stream.waitFor((client) =>
      client.events().some((event) => event.id > before && event.event.type === "text"),
    );
    const cancelled = await harness.api(
      "POST",
      serverPath(ServerPath.agentCancel, { session_id: session.id, agent: "fake" }),
    );
    expect(cancelled.status).toBe(202);
    await stream.waitFor((client) =>
      client
        .events()
        .some(
          (event) =>
            event.id > before &&
            event.event.type === "turn_finished" &&
            event.event.status === "cancelled",
        ),
    );
    // One backend served both turns of the session.
    expect(requests).toHaveLength(1);
  });

  it("refuses to apply or reject a pending change while a turn of its session runs, then applies it", async () => {
    writeFileSync(join(session.worktree_path!, "during-turn.txt"), "written before the turn\n");
    const agentSessionId = await harness.server.sessions.agentSessions.ensure(
      session.id,
      "fake",
      chat.id,
    );
    const recorded = await harness.server.sessions.pendingChanges.record({
      sessionId: session.id,
      worktreePath: session.worktree_path!,
      agentSession: { id: agentSessionId, agent: "fake" },
      chatId: chat.id,
    });
    const change = recorded.find((pending) => pending.path === "during-turn.txt")!;
    const stream = new StreamClient(
      harness.server.url,
      serverPath(ServerPath.sessionStream, { session_id: session.id }),
      { after: 0 },
    );
    cleanups.add(() => stream.close());
    await stream.waitFor((client) => client.frames.some((frame) => frame.type === "ready"));
    const before = stream.lastEventId();
    await send("wait");
    await stream.waitFor((client) =>
      client.events().some((event) => event.id > before && event.event.type === "text"),
    );
    for (const action of [ServerPath.applyPendingChange, ServerPath.rejectPendingChange]) {
      const refused = await harness.api<{ error: { code: string; message: string } }>(
        "POST",
        serverPath(action, { pending_change_id: change.id }),
      );
      expect(refused.status).toBe(409);
      expect(refused.body.error.code).toBe("conflict");
      expect(refused.body.error.message).toContain("an agent's turn is running");
    }
    const still = await harness.api<{ pending_changes: PendingChange[] }>(
      "GET",
      serverPath(ServerPath.sessionPendingChanges, { session_id: session.id }),
    );
    expect(still.body.pending_changes.find((pending) => pending.id === change.id)?.status).toBe(
      "pending",
    );
    await harness.api(
      "POST",
      serverPath(ServerPath.agentCancel, { session_id: session.id, agent: "fake" }),
    );
    await stream.waitFor((client) =>
      client.events().some((event) => event.id > before && event.event.type === "turn_finished"),
    );
    const applied = await harness.api<{ commit: string }>(
      "POST",
      serverPath(ServerPath.applyPendingChange, { pending_change_id: change.id }),
    );
    expect(applied.status).toBe(200);
  });

  it("stores only the text after a retry, as the stream's retry rule says", async () => {
    const posted = await send("retry");
    const reply = await waitForReply(posted.message.id);
    expect(reply.parts).toEqual([
      { position: 0, kind: "text", content: { text: "Final answer." } },
    ]);
  });

  it("runs two messages to one agent one after the other, never interleaved", async () => {
    const first = await send("slow one");
    const second = await send("slow two");
    await waitForReply(first.message.id);
    await waitForReply(second.message.id);
    const { rows } = await harness.server.database.query<{ type: string; message_id: string }>(
      `select type, payload->>'message_id' as message_id from session_events
       where payload->>'message_id' in ($1, $2) and type in ('text', 'turn_end') order by id`,
      [assistantMessageId(first.message.id), assistantMessageId(second.message.id)],
    );
    const order = rows.map((row) =>
      row.message_id === assistantMessageId(first.message.id) ? 1 : 2,
    );
    // Every event of the first turn, its turn_end included, comes before any of the second.
    expect(order).toEqual([...order].sort());
    expect(order.filter((turn) => turn === 1).length).toBeGreaterThan(1);
    expect(order.filter((turn) => turn === 2).length).toBeGreaterThan(1);
  });

  it("does not run a turn twice when its task is delivered again", async () => {
    const posted = await send("edit-again");
    // Answer the permission so the first run finishes.
    const answer = () =>
      harness.api(
        "POST",
        serverPath(ServerPath.agentPermission, {
          session_id: session.id,
          agent: "fake",
          request_id: "perm-1",
        }),
        { body: { outcome: "reject_once" } },
      );
    for (let attempt = 0; attempt < 50; attempt += 1) {
      await answer();
      const messages = await harness.api<{ messages: Message[] }>(
        "GET",
        serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
      );
      const reply = messages.body.messages.find(
        (message) => message.id === assistantMessageId(posted.message.id),
      );
      if (reply && reply.status !== "streaming") break;
      await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    }
    const countTurns = async () =>
      Number(
        (
          await harness.server.database.query<{ count: string }>(
            "select count(*) as count from session_events where type = 'turn_started'",
          )
        ).rows[0]!.count,
      );
    const turnsBefore = await countTurns();
    await harness.server.agentTurns.runTurn({
      session_id: session.id,
      chat_id: chat.id,
      user_message_id: posted.message.id,
      agent: "fake",
    });
    expect(await countTurns()).toBe(turnsBefore);
  });

  it("points a built-in agent at the proxy only when its agent type has an upstream", async () => {
    await send("hello", "codex");
    await send("hello", "claude");
    const deadline = Date.now() + 10_000;
    const of = (agent: string) => requests.find((request) => request.agent === agent);
    while ((!of("codex") || !of("claude")) && Date.now() < deadline) {
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
    const codex = of("codex")!;
    expect(codex.context.modelProxy?.url).toMatch(/\/codex$/);
    expect(codex.context.modelProxy?.token.startsWith(MODEL_TOKEN_PREFIX)).toBe(true);
    // The token reaches the agent through its environment, as its provider definition says.
    expect(Object.values(codex.provider.env)).toContain(codex.context.modelProxy!.token);
    const claude = of("claude")!;
    expect(claude.context.modelProxy).toBeNull();
    expect(JSON.stringify(claude.provider.env)).not.toContain(MODEL_TOKEN_PREFIX);
  });

  it("closing the session disposes its backends", async () => {
    const before = disposed;
    const closed = await harness.api(
      "DELETE",
      `${serverPath(ServerPath.session, { session_id: session.id })}?force=true`,
    );
    expect(closed.status).toBe(200);
    // The fake agent's, codex's and claude's backends.
    expect(disposed).toBe(before + 3);
  });
});
