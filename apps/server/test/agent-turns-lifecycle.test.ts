import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentBackend, PermissionAnswer, PromptInput } from "@deckhand/agent-backends";
import { agentSessions, messageParts, messages } from "@deckhand/db";
import {
  assistantMessageId,
  type BackendRequest,
  INTERRUPTED_ERROR,
  publishSessionEvent,
} from "@deckhand/sessions";
import { scriptedAcpAgentCommand } from "@deckhand/testkit";
import {
  type Chat,
  type CreateMessageResponse,
  type Message,
  type PendingChange,
  type Project,
  ServerPath,
  type Session,
  type SessionEvent,
  serverPath,
} from "@deckhand/wire";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  backends,
  Cleanups,
  databaseUrlFor,
  gitIn,
  makeRepository,
  StreamClient,
  startTestServer,
  type TestServer,
  tempDir,
  waitUntil,
} from "./harness.ts";

const cleanups = new Cleanups();
afterAll(() => cleanups.run());

/** What the fake agents did, for the tests to check. */
class AgentLog {
  /** Every prompt an agent received: `<agent> <text>`. */
  readonly prompts: string[] = [];
  cancels = 0;
  /** The most turns of one session seen running at once. */
  readonly mostAtOnce = new Map<string, number>();
  readonly #running = new Map<string, number>();
  /** ensureSession of an agent waits for its gate, when it has one. */
  readonly gates = new Map<string, Promise<void>>();
  /** `hold <name>` turns wait until released here. */
  readonly #holds = new Map<string, () => void>();

  enter(sessionId: string): void {
    const running = (this.#running.get(sessionId) ?? 0) + 1;
    this.#running.set(sessionId, running);
    this.mostAtOnce.set(sessionId, Math.max(running, this.mostAtOnce.get(sessionId) ?? 0));
  }

  leave(sessionId: string): void {
    this.#running.set(sessionId, (this.#running.get(sessionId) ?? 1) - 1);
  }

  hold(name: string): Promise<void> {
    return new Promise((resolveHold) => this.#holds.set(name, resolveHold));
  }

  release(name: string): void {
    this.#holds.get(name)?.();
  }
}

/**
 * A scripted backend. `hold <name>` streams and waits to be released (or cancelled); `slow`
 * takes 150 ms; `commit <file>` writes a file and commits it; `branch <name>` commits on a new
 * branch; `parts` asks permission for a tool call and waits for the answer; anything else
 * answers at once.
 */
function fakeBackend(request: BackendRequest, log: AgentLog): AgentBackend {
  const { agent, context } = request;
  const worktree = context.worktreePath;
  let cancelTurn: (() => void) | null = null;
  let answerPermission: ((answer: PermissionAnswer) => void) | null = null;
  return {
    async ensureSession() {
      await log.gates.get(agent);
      return { agentSessionId: `${agent}-${context.sessionId.slice(0, 8)}`, resumed: false };
    },
    async prompt(input: PromptInput) {
      const { messageId, onEvent, text } = input;
      log.prompts.push(`${agent} ${text}`);
      log.enter(context.sessionId);
      try {
        const [verb, argument = ""] = text.split(" ");
        await onEvent({ type: "text", message_id: messageId, delta: `${agent} on it` });
        let stopReason: "end_turn" | "cancelled" = "end_turn";
        if (verb === "hold") {
          const cancelled = new Promise<void>((resolveCancel) => {
            cancelTurn = resolveCancel;
          });
          const released = log.hold(argument).then(() => "released" as const);
          if (
            (await Promise.race([released, cancelled.then(() => "cancelled" as const)])) !==
            "released"
          ) {
            stopReason = "cancelled";
          }
        } else if (verb === "slow") {
          await new Promise((resolveWait) => setTimeout(resolveWait, 150));
          await onEvent({ type: "text", message_id: messageId, delta: " done" });
        } else if (verb === "commit") {
          writeFileSync(join(worktree, argument), `${agent} wrote this\n`);
          gitIn(worktree, "add", argument);
          gitIn(worktree, "commit", "--quiet", "-m", `${agent}: add ${argument}`);
        } else if (verb === "branch") {
          gitIn(worktree, "checkout", "--quiet", "-b", argument);
          writeFileSync(join(worktree, "elsewhere.txt"), "on another branch\n");
          gitIn(worktree, "add", "elsewhere.txt");
          gitIn(worktree, "commit", "--quiet", "-m", "work on another branch");
        } else if (verb === "parts") {
          await onEvent({
            type: "tool_call",
            message_id: messageId,
            tool_call_id: "call-parts",
            title: "Write notes.txt",
            kind: "edit",
            status: "pending",
          });
          await onEvent({
            type: "permission_request",
            message_id: messageId,
            request_id: "perm-parts",
            tool_call_id: "call-parts",
            title: "Write notes.txt?",
            options: [{ option_id: "allow", name: "Allow", kind: "allow_once" }],
          });
          const answer = await new Promise<PermissionAnswer>((resolveAnswer) => {
            answerPermission = resolveAnswer;
          });
          await onEvent({
            type: "permission_resolved",
            message_id: messageId,
            request_id: answer.requestId,
            outcome: answer.outcome,
          });
          await onEvent({
            type: "tool_update",
            message_id: messageId,
            tool_call_id: "call-parts",
            status: "completed",
          });
        }
        await onEvent({ type: "turn_end", message_id: messageId, stop_reason: stopReason });
        return { stopReason, text: "" };
      } finally {
        log.leave(context.sessionId);
        cancelTurn = null;
      }
    },
    async cancel() {
      log.cancels += 1;
      cancelTurn?.();
    },
    async respondToPermission(answer) {
      answerPermission?.(answer);
    },
    async closeSession() {},
    async dispose() {},
    health() {
      return { status: "idle", pid: null, lastError: null };
    },
  };
}

function writeProviders(dataDir: string, providers: Record<string, unknown>): void {
  writeFileSync(join(dataDir, "providers.json"), JSON.stringify({ providers }));
}

const FAKE_PROVIDERS = Object.fromEntries(
  ["alpha", "beta"].map((id) => [
    id,
    { extends: "acp", label: id, command: [process.execPath, "-e", "0"] },
  ]),
);

/** A client of one test server: sessions, messages and the stream, through the public API. */
class Client {
  readonly harness: TestServer;

  constructor(harness: TestServer) {
    this.harness = harness;
  }

  async session(): Promise<{ session: Session; chat: Chat; stream: StreamClient }> {
    const project = await this.harness.api<Project>("POST", ServerPath.projects, {
      body: { repository_path: makeRepository(cleanups) },
    });
    const session = (
      await this.harness.api<Session>(
        "POST",
        serverPath(ServerPath.projectSessions, { project_id: project.body.id }),
        { body: {} },
      )
    ).body;
    const chat = (
      await this.harness.api<Chat>(
        "POST",
        serverPath(ServerPath.sessionChats, { session_id: session.id }),
        { body: {} },
      )
    ).body;
    const stream = new StreamClient(
      this.harness.server.url,
      serverPath(ServerPath.sessionStream, { session_id: session.id }),
      { after: 0 },
    );
    cleanups.add(() => stream.close());
    await stream.opened;
    return { session, chat, stream };
  }

  async send(chat: Chat, agent: string, text: string): Promise<string> {
    const response = await this.harness.api<CreateMessageResponse>(
      "POST",
      serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
      { body: { agent, text } },
    );
    expect(response.status).toBe(202);
    return assistantMessageId(response.body.message.id);
  }

  async cancel(session: Session, agent: string): Promise<void> {
    const response = await this.harness.api<{ delivered: boolean }>(
      "POST",
      serverPath(ServerPath.agentCancel, { session_id: session.id, agent }),
    );
    expect(response.status).toBe(202);
  }

  async message(chat: Chat, messageId: string): Promise<Message | undefined> {
    const listed = await this.harness.api<{ messages: Message[] }>(
      "GET",
      serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
    );
    return listed.body.messages.find((message) => message.id === messageId);
  }
}

function eventsOf(stream: StreamClient, messageId: string): SessionEvent["event"][] {
  return stream
    .events()
    .map((event) => event.event)
    .filter((event) => "message_id" in event && event.message_id === messageId);
}

async function finished(stream: StreamClient, messageId: string) {
  await stream.waitFor((client) =>
    eventsOf(client, messageId).some((event) => event.type === "turn_finished"),
  );
  return eventsOf(stream, messageId).find((event) => event.type === "turn_finished")!;
}

describe.each(backends)(
  "agent turns on $backend: cancel, one turn per session, commits and parts",
  ({ backend }) => {
    const log = new AgentLog();
    let client: Client;

    beforeAll(async () => {
      const dataDir = tempDir(cleanups);
      writeProviders(dataDir, FAKE_PROVIDERS);
      const harness = await startTestServer(cleanups, {
        dataDir,
        // Two turns run at once; a session's later turns wait in the queue.
        config: { taskConcurrency: 2, databaseUrl: await databaseUrlFor(cleanups, backend) },
        backendFactory: (request) => fakeBackend(request, log),
      });
      client = new Client(harness);
    });

    it("a cancel while the agent starts ends the turn cancelled without prompting the agent", async () => {
      const { session, chat, stream } = await client.session();
      let open!: () => void;
      log.gates.set(
        "alpha",
        new Promise((resolveGate) => {
          open = resolveGate;
        }),
      );
      const messageId = await client.send(chat, "alpha", "hello while starting");
      await stream.waitFor((c) => eventsOf(c, messageId).some((e) => e.type === "turn_started"));
      // Still starting: the backend has no turn to cancel yet.
      await new Promise((resolveWait) => setTimeout(resolveWait, 100));
      await client.cancel(session, "alpha");
      await waitUntil(async () => (await client.message(chat, messageId))?.status === "cancelled");
      open();
      log.gates.delete("alpha");
      expect(await finished(stream, messageId)).toMatchObject({ status: "cancelled" });
      expect(eventsOf(stream, messageId).map((event) => event.type)).toEqual([
        "turn_started",
        "turn_end",
        "turn_finished",
      ]);
      expect(log.prompts).not.toContain("alpha hello while starting");
      expect((await client.message(chat, messageId))!.status).toBe("cancelled");
      // The agent is ready for the next message.
      const next = await client.send(chat, "alpha", "hello after");
      expect(await finished(stream, next)).toMatchObject({ status: "complete" });
    });

    it("a cancel ends an agent's turns queued behind another agent's at once; that agent never sees them", async () => {
      const { session, chat, stream } = await client.session();
      const holding = await client.send(chat, "alpha", "hold queue");
      await stream.waitFor((c) => eventsOf(c, holding).some((e) => e.type === "text"));
      // Both wait in the queue behind the session's running turn.
      const waiting = await client.send(chat, "beta", "waiting for the session");
      const queued = await client.send(chat, "beta", "waiting behind that one");
      await client.cancel(session, "beta");
      expect(await finished(stream, waiting)).toMatchObject({ status: "cancelled" });
      expect(await finished(stream, queued)).toMatchObject({ status: "cancelled" });
      // The other agent's turn goes on.
      expect((await client.message(chat, holding))!.status).toBe("streaming");
      for (const id of [waiting, queued]) {
        expect(eventsOf(stream, id).map((event) => event.type)).toEqual(["turn_finished"]);
      }

      log.release("queue");
      expect(await finished(stream, holding)).toMatchObject({ status: "complete" });
      // The queued tasks run when their turn comes, find their messages finished, do nothing.
      await waitUntil(async () => {
        const { rows } = await client.harness.server.database.query<{ status: string }>(
          "select status from tasks where payload->>'session_id' = $1 and status <> 'succeeded'",
          [session.id],
        );
        return rows.length === 0;
      });
      expect(log.prompts.filter((prompt) => prompt.startsWith("beta"))).toEqual([]);
      for (const id of [waiting, queued]) {
        expect(eventsOf(stream, id).map((event) => event.type)).toEqual(["turn_finished"]);
      }
    });

    it("runs the turns of different agents in one session one at a time, other sessions alongside", async () => {
      const first = await client.session();
      const other = await client.session();
      const held = await client.send(other.chat, "alpha", "hold other");
      await other.stream.waitFor((c) => eventsOf(c, held).some((e) => e.type === "text"));
      const ids = [
        await client.send(first.chat, "alpha", "slow 1"),
        await client.send(first.chat, "beta", "slow 2"),
        await client.send(first.chat, "alpha", "slow 3"),
      ];
      for (const id of ids) {
        expect(await finished(first.stream, id)).toMatchObject({ status: "complete" });
      }
      // The other session's turn was running all along: the limit is per session.
      expect((await client.message(other.chat, held))!.status).toBe("streaming");
      expect(log.mostAtOnce.get(first.session.id)).toBe(1);
      const order = first.stream
        .events()
        .map((event) => event.event)
        .filter((event) => event.type === "text" || event.type === "turn_end")
        .map((event) => ids.indexOf((event as { message_id: string }).message_id));
      // Every event of one turn comes before any of the next.
      expect(order).toEqual([...order].sort());
      log.release("other");
      await finished(other.stream, held);
    });

    it("a session's queued turns hold no worker slot: another session's turn starts while they wait", async () => {
      const busy = await client.session();
      const other = await client.session();
      // The server runs two turns at once; the busy session queues three.
      const held = await client.send(busy.chat, "alpha", "hold busy");
      await busy.stream.waitFor((c) => eventsOf(c, held).some((e) => e.type === "text"));
      const queued = [
        await client.send(busy.chat, "beta", "slow 1"),
        await client.send(busy.chat, "alpha", "slow 2"),
      ];
      const meanwhile = await client.send(other.chat, "alpha", "slow 3");
      expect(await finished(other.stream, meanwhile)).toMatchObject({ status: "complete" });
      // The busy session's later turns are still waiting for the held one.
      for (const id of queued) {
        expect(eventsOf(busy.stream, id).some((event) => event.type === "turn_finished")).toBe(
          false,
        );
      }
      log.release("busy");
      for (const id of [held, ...queued]) {
        expect(await finished(busy.stream, id)).toMatchObject({ status: "complete" });
      }
    });

    it("folds commits an agent makes into pending changes credited to it", async () => {
      const { session, chat, stream } = await client.session();
      const worktree = session.worktree_path!;
      const base = gitIn(worktree, "rev-parse", "HEAD");
      const messageId = await client.send(chat, "alpha", "commit notes.md");
      expect(await finished(stream, messageId)).toMatchObject({ status: "complete" });
      expect(gitIn(worktree, "rev-parse", "HEAD")).toBe(base);
      const folded = stream.events().find((event) => event.event.type === "commits_folded");
      expect(folded?.event).toMatchObject({
        type: "commits_folded",
        agent: "alpha",
        chat_id: chat.id,
        commits: [{ subject: "alpha: add notes.md" }],
      });
      const types = stream.events().map((event) => event.event.type);
      expect(types.indexOf("commits_folded")).toBeLessThan(types.indexOf("pending_changes"));
      const pending = await client.harness.api<{ pending_changes: PendingChange[] }>(
        "GET",
        serverPath(ServerPath.sessionPendingChanges, { session_id: session.id }),
      );
      expect(pending.body.pending_changes).toEqual([
        expect.objectContaining({ path: "notes.md", agent: "alpha", status: "pending" }),
      ]);
      expect(pending.body.pending_changes[0]!.diff).toContain("+alpha wrote this");
      const applied = await client.harness.api<{ commit: string }>(
        "POST",
        serverPath(ServerPath.applyPendingChange, {
          pending_change_id: pending.body.pending_changes[0]!.id,
        }),
      );
      expect(applied.status).toBe(200);
      expect(gitIn(worktree, "log", "-1", "--format=%s")).toBe("alpha: update notes.md");
    });

    it("reports an agent that moved HEAD off the session branch and leaves it there", async () => {
      const { session, chat, stream } = await client.session();
      const worktree = session.worktree_path!;
      const messageId = await client.send(chat, "alpha", "branch elsewhere");
      expect(await finished(stream, messageId)).toMatchObject({ status: "complete" });
      const error = eventsOf(stream, messageId).find((event) => event.type === "error");
      expect(error).toMatchObject({ message: expect.stringContaining("left the session branch") });
      expect(gitIn(worktree, "symbolic-ref", "--short", "HEAD")).toBe("elsewhere");
      expect(stream.events().some((event) => event.event.type === "commits_folded")).toBe(false);
    });

    it("stores the message's parts as they stream, the permission asked for a call with it", async () => {
      const { session, chat, stream } = await client.session();
      const messageId = await client.send(chat, "alpha", "parts");
      await stream.waitFor((c) =>
        eventsOf(c, messageId).some((e) => e.type === "permission_request"),
      );
      const during = (await client.message(chat, messageId))!;
      expect(during.status).toBe("streaming");
      expect(during.parts).toEqual([
        { position: 0, kind: "text", content: { text: "alpha on it" } },
        {
          position: 1,
          kind: "tool_call",
          content: expect.objectContaining({
            tool_call_id: "call-parts",
            status: "pending",
            permission: {
              request_id: "perm-parts",
              title: "Write notes.txt?",
              options: [{ option_id: "allow", name: "Allow", kind: "allow_once" }],
              outcome: null,
            },
          }),
        },
      ]);
      await client.harness.api(
        "POST",
        serverPath(ServerPath.agentPermission, {
          session_id: session.id,
          agent: "alpha",
          request_id: "perm-parts",
        }),
        { body: { outcome: "allow_once" } },
      );
      await finished(stream, messageId);
      const after = (await client.message(chat, messageId))!;
      expect(after.parts[1]!.content).toMatchObject({
        status: "completed",
        permission: { request_id: "perm-parts", outcome: "allow_once" },
      });
    });

    it("a turn a crashed server left unfinished ends failed, its parts made from the session log", async () => {
      const { session, chat, stream } = await client.session();
      const db = client.harness.server.database.db;
      // What a server that died mid-turn leaves: the user message, the streaming answer, its
      // events in the log and the parts stored so far (behind the log). Its task comes again.
      const [user] = await db
        .insert(messages)
        .values({ chatId: chat.id, role: "user", agentType: "alpha", status: "complete" })
        .returning();
      const answerId = assistantMessageId(user!.id);
      await db.insert(messages).values({
        id: answerId,
        chatId: chat.id,
        role: "assistant",
        agentType: "alpha",
        status: "streaming",
      });
      await db
        .insert(messageParts)
        .values({ messageId: answerId, position: 0, kind: "text", content: { text: "half" } });
      for (const event of [
        { type: "text", message_id: answerId, delta: "half" },
        { type: "text", message_id: answerId, delta: "way" },
        { type: "retry", message_id: answerId, attempt: 1, delay_ms: 0, reason: "dropped" },
        { type: "text", message_id: answerId, delta: "Halfway" },
        {
          type: "tool_call",
          message_id: answerId,
          tool_call_id: "call-1",
          title: "Run ls",
          kind: "execute",
          status: "in_progress",
        },
      ] as const) {
        await publishSessionEvent(db, session.id, chat.id, event);
      }
      await client.harness.server.agentTurns.runTurn({
        session_id: session.id,
        chat_id: chat.id,
        user_message_id: user!.id,
        agent: "alpha",
      });
      const message = (await client.message(chat, answerId))!;
      expect(message).toMatchObject({
        status: "failed",
        error: "the server stopped during this turn; send the message again",
      });
      expect(message.parts).toEqual([
        { position: 0, kind: "text", content: { text: "Halfway" } },
        {
          position: 1,
          kind: "tool_call",
          content: {
            tool_call_id: "call-1",
            title: "Run ls",
            kind: "execute",
            status: "in_progress",
          },
        },
      ]);
      expect(await finished(stream, answerId)).toMatchObject({ status: "failed" });
      // Not run again: the agent may have acted already.
      expect(eventsOf(stream, answerId).some((event) => event.type === "turn_started")).toBe(false);
    });
  },
);

describe("agent turns: server shutdown", () => {
  it("interrupts a running turn: the agent is cancelled and the message ends cancelled, interrupted", async () => {
    const log = new AgentLog();
    const dataDir = tempDir(cleanups);
    writeProviders(dataDir, FAKE_PROVIDERS);
    const options = {
      dataDir,
      backendFactory: (request: BackendRequest) => fakeBackend(request, log),
    };
    const first = new Client(await startTestServer(cleanups, options));
    const { chat, stream } = await first.session();
    const messageId = await first.send(chat, "alpha", "hold forever");
    await stream.waitFor((c) => eventsOf(c, messageId).some((e) => e.type === "text"));
    await first.harness.server.close();
    expect(log.cancels).toBeGreaterThan(0);

    // After a restart the message says what happened, and the turn is not run again.
    const second = new Client(await startTestServer(cleanups, options));
    const message = (await second.message(chat, messageId))!;
    expect(message).toMatchObject({ status: "cancelled", error: INTERRUPTED_ERROR });
    expect(message.parts).toEqual([
      { position: 0, kind: "text", content: { text: "alpha on it" } },
    ]);
    const replay = new StreamClient(
      second.harness.server.url,
      serverPath(ServerPath.sessionStream, { session_id: chat.session_id }),
      { after: 0 },
    );
    cleanups.add(() => replay.close());
    const finish = await finished(replay, messageId);
    expect(finish).toMatchObject({ status: "cancelled", reason: "interrupted" });
    expect(eventsOf(replay, messageId).find((event) => event.type === "turn_end")).toMatchObject({
      stop_reason: "cancelled",
    });
    await waitUntil(async () => {
      const { rows } = await second.harness.server.database.query<{ status: string }>(
        "select status from tasks where payload->>'session_id' = $1",
        [chat.session_id],
      );
      return rows.every((row) => row.status === "succeeded");
    });
    expect(log.prompts.filter((prompt) => prompt === "alpha hold forever")).toHaveLength(1);
    expect(
      eventsOf(replay, messageId).filter((event) => event.type === "turn_started"),
    ).toHaveLength(1);
  });
});

describe("agent turns: the scripted ACP agent between turns", () => {
  let client: Client;

  beforeAll(async () => {
    const dataDir = tempDir(cleanups);
    const stateDir = tempDir(cleanups);
    // The agent keeps its sessions in its state directory, which its sandbox must keep writable.
    writeProviders(dataDir, {
      scripted: {
        extends: "acp",
        command: scriptedAcpAgentCommand("normal", { stateDir }),
        stateDirectories: [stateDir],
      },
      forgetful: {
        extends: "acp",
        command: scriptedAcpAgentCommand("normal", { stateDir, noLoad: true }),
        stateDirectories: [stateDir],
      },
      // The built-in gemini provider, its command replaced by the scripted agent: the way
      // Deckhand starts Gemini CLI is what the agent sees.
      gemini: { command: scriptedAcpAgentCommand("normal") },
      // Qwen Code without a login of its own, and the user's OpenAI-compatible key in its env.
      qwen: {
        command: scriptedAcpAgentCommand("env-auth"),
        env: { OPENAI_API_KEY: "sk-the-users-own-qwen-key" },
      },
    });
    client = new Client(await startTestServer(cleanups, { dataDir }));
  });

  async function rows(sessionId: string, agent: string) {
    const db = client.harness.server.database.db;
    const all = await db.select().from(agentSessions).where(eq(agentSessions.sessionId, sessionId));
    return all
      .filter((row) => row.agentType === agent)
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  }

  function notices(stream: StreamClient) {
    return stream
      .events()
      .map((event) => event.event)
      .filter((event) => event.type === "agent_session");
  }

  it("marks an agent that died between turns crashed and says so on the stream; the next message starts it again", async () => {
    const { session, chat, stream } = await client.session();
    const first = await client.send(chat, "scripted", "hello");
    expect(await finished(stream, first)).toMatchObject({ status: "complete" });
    const [entry] = (await client.harness.server.agentTurns.pool.health()).filter(
      (health) => health.sessionId === session.id,
    );
    expect(entry?.pid).toBeGreaterThan(0);
    process.kill(entry!.pid!, "SIGKILL");
    await stream.waitFor((c) =>
      c.events().some((event) => event.event.type === "error" && event.event.message_id === null),
    );
    const error = stream.events().find((event) => event.event.type === "error")!;
    expect(error.event).toMatchObject({ message: expect.stringContaining("between turns") });
    expect((await rows(session.id, "scripted")).map((row) => row.status)).toEqual(["crashed"]);

    const second = await client.send(chat, "scripted", "hello again");
    expect(await finished(stream, second)).toMatchObject({ status: "complete" });
    expect((await rows(session.id, "scripted")).map((row) => row.status)).toEqual(["idle"]);
    // Reported once, not again when the next turn found it crashed.
    expect(stream.events().filter((event) => event.event.type === "error")).toHaveLength(1);
  });

  it("after the pool stopped an idle agent, its session is closed and the next turn resumes the agent's own session", async () => {
    const { session, chat, stream } = await client.session();
    const first = await client.send(chat, "scripted", "remember this");
    expect(await finished(stream, first)).toMatchObject({ status: "complete" });
    const [started] = notices(stream);
    expect(started).toMatchObject({ resumed: false, had_previous: false });

    expect(await client.harness.server.agentTurns.pool.sweepIdle(0)).toBeGreaterThan(0);
    await waitUntil(async () => (await rows(session.id, "scripted"))[0]?.status === "closed");

    const second = await client.send(chat, "scripted", "what did I say?");
    expect(await finished(stream, second)).toMatchObject({ status: "complete" });
    const [, resumed] = notices(stream);
    expect(resumed).toMatchObject({
      agent: "scripted",
      agent_session_id: (started as { agent_session_id: string }).agent_session_id,
      resumed: true,
      had_previous: true,
    });
    const [closed, live] = await rows(session.id, "scripted");
    expect(closed).toMatchObject({ status: "closed" });
    expect(live).toMatchObject({ status: "idle", resumeSessionId: closed!.resumeSessionId });
    // Replayed history is not this turn's news: the answer holds only the new reply.
    expect(eventsOf(stream, second).filter((event) => event.type === "text").length).toBe(
      eventsOf(stream, first).filter((event) => event.type === "text").length,
    );
  });

  it("stores the permission and its answer with a tool call the agent announced only after asking", async () => {
    const { session, chat, stream } = await client.session();
    const messageId = await client.send(chat, "scripted", "edit-ask-first asked.txt late call");
    await stream.waitFor((c) =>
      eventsOf(c, messageId).some((e) => e.type === "permission_request"),
    );
    const request = eventsOf(stream, messageId).find((e) => e.type === "permission_request") as {
      request_id: string;
      tool_call_id: string;
    };
    // Asked before the agent announced it: the request announces the call with its own fields.
    expect(
      eventsOf(stream, messageId).find(
        (e) => e.type === "tool_call" && e.tool_call_id === request.tool_call_id,
      ),
    ).toMatchObject({ kind: "edit", input: { path: "asked.txt" }, locations: ["asked.txt"] });
    await client.harness.api(
      "POST",
      serverPath(ServerPath.agentPermission, {
        session_id: session.id,
        agent: "scripted",
        request_id: request.request_id,
      }),
      { body: { outcome: "allow_once" } },
    );
    expect(await finished(stream, messageId)).toMatchObject({ status: "complete" });
    const parts = (await client.message(chat, messageId))!.parts;
    const call = parts.find((part) => part.kind === "tool_call");
    expect(call?.content).toMatchObject({
      tool_call_id: request.tool_call_id,
      status: "completed",
      permission: {
        request_id: request.request_id,
        title: "Edit asked.txt",
        options: [
          { option_id: "yes", name: "Allow", kind: "allow_once" },
          { option_id: "always", name: "Always allow edits", kind: "allow_always" },
          { option_id: "no", name: "Reject", kind: "reject_once" },
          { option_id: "never", name: "Never allow edits", kind: "reject_always" },
        ],
        outcome: "allow_once",
      },
    });
  });

  it("lets Gemini CLI's write_file create a file: its read of the missing file first is no failure", async () => {
    const { session, chat, stream } = await client.session();
    const created = await client.send(chat, "gemini", "write-as-gemini made-by-gemini.txt hello");
    expect(await finished(stream, created)).toMatchObject({ status: "complete" });
    expect(
      eventsOf(stream, created)
        .flatMap((event) => (event.type === "text" ? [event.delta] : []))
        .join(""),
    ).toBe("wrote made-by-gemini.txt (new file)");
    expect(readFileSync(join(session.worktree_path!, "made-by-gemini.txt"), "utf8")).toBe("hello");
    // And the file it now reads (from the worktree itself) is changed, not created again.
    const changed = await client.send(chat, "gemini", "write-as-gemini made-by-gemini.txt again");
    expect(await finished(stream, changed)).toMatchObject({ status: "complete" });
    expect(readFileSync(join(session.worktree_path!, "made-by-gemini.txt"), "utf8")).toBe("again");
  });

  it("logs Qwen Code in with the auth method its environment serves instead of failing with Authentication required", async () => {
    const { chat, stream } = await client.session();
    const messageId = await client.send(chat, "qwen", "hello");
    expect(await finished(stream, messageId)).toMatchObject({ status: "complete" });
    expect(
      eventsOf(stream, messageId)
        .flatMap((event) => (event.type === "text" ? [event.delta] : []))
        .join(""),
    ).toBe("scripted reply");
  });

  it("tells the client when an agent that cannot resume starts a new session instead", async () => {
    const { session, chat, stream } = await client.session();
    const first = await client.send(chat, "forgetful", "remember this");
    expect(await finished(stream, first)).toMatchObject({ status: "complete" });
    await client.harness.server.agentTurns.pool.sweepIdle(0);
    await waitUntil(async () => (await rows(session.id, "forgetful"))[0]?.status === "closed");
    const second = await client.send(chat, "forgetful", "what did I say?");
    expect(await finished(stream, second)).toMatchObject({ status: "complete" });
    const [started, restarted] = notices(stream);
    expect(started).toMatchObject({ resumed: false, had_previous: false });
    expect(restarted).toMatchObject({ resumed: false, had_previous: true });
    expect((restarted as { agent_session_id: string }).agent_session_id).not.toBe(
      (started as { agent_session_id: string }).agent_session_id,
    );
  });
});
