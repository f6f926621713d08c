import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TaskRegistry } from "@deckhand/db";
import type { HttpError } from "@deckhand/http-kit";
import { mintModelToken } from "@deckhand/model-proxy";
import {
  AGENT_TURN_TASK,
  type AgentTurnPayload,
  createSessionDomain,
  publishSessionEvent,
} from "@deckhand/sessions";
import { type FakeModel, startFakeModel, turn } from "@deckhand/testkit";
import {
  type Chat,
  type CreateMessageResponse,
  type Message,
  type PendingChange,
  type Project,
  ServerPath,
  type ServerRoute,
  type Session,
  type SessionActivityEvent,
  SessionActivityEventSchema,
  type SessionUsageResponse,
  serverPath,
  serverRoutes,
  type UsageResponse,
  WireHeader,
  WirePath,
  WireSubprotocol,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { sessionsErrorToHttp } from "../src/sessions-http-errors.ts";
import {
  backends,
  Cleanups,
  checkResponse,
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

let harness: TestServer;
let model: FakeModel;
const UPSTREAM_KEY = "sk-usage-upstream-key-0123456789";
let repository: string;
const turns: AgentTurnPayload[] = [];

/**
 * The test agent: writes `agent-<n>.txt`, edits README.md, streams a text event and a turn end,
 * then records the worktree's changes as pending, the way the agent-backends worker will.
 */
function testRegistry(): TaskRegistry {
  return new TaskRegistry().register<AgentTurnPayload>(AGENT_TURN_TASK, {
    async handle(payload) {
      turns.push(payload);
      const worktree = await harness.server.sessions.sessions.activeWorktree(payload.session_id);
      writeFileSync(join(worktree.path, `agent-${turns.length}.txt`), `turn ${turns.length}\n`);
      writeFileSync(join(worktree.path, "README.md"), `# demo\n\nedited by turn ${turns.length}\n`);
      const agentSessionId = await harness.server.sessions.agentSessions.ensure(
        payload.session_id,
        payload.agent,
        payload.chat_id,
      );
      const db = harness.server.database.db;
      await publishSessionEvent(db, payload.session_id, payload.chat_id, {
        type: "text",
        message_id: payload.user_message_id,
        delta: "done",
      });
      await harness.server.sessions.pendingChanges.record({
        sessionId: payload.session_id,
        worktreePath: worktree.path,
        agentSession: { id: agentSessionId, agent: payload.agent },
        chatId: payload.chat_id,
      });
      await publishSessionEvent(db, payload.session_id, payload.chat_id, {
        type: "turn_end",
        message_id: payload.user_message_id,
        stop_reason: "end_turn",
      });
    },
  });
}

async function newSession(): Promise<{ project: Project; session: Session; chat: Chat }> {
  const project = await harness.api<Project>("POST", ServerPath.projects, {
    body: { repository_path: repository },
  });
  expect(project.status).toBe(201);
  const session = await harness.api<Session>(
    "POST",
    serverPath(ServerPath.projectSessions, { project_id: project.body.id }),
    { body: { title: "demo" } },
  );
  expect(session.status).toBe(201);
  const chat = await harness.api<Chat>(
    "POST",
    serverPath(ServerPath.sessionChats, { session_id: session.body.id }),
    { body: {} },
  );
  expect(chat.status).toBe(201);
  return { project: project.body, session: session.body, chat: chat.body };
}

describe.each(backends)("the server API on $backend", ({ backend }) => {
  beforeAll(async () => {
    turns.length = 0;
    repository = makeRepository(cleanups, { "README.md": "# demo\n", "keep.txt": "keep\n" });
    model = await startFakeModel();
    cleanups.add(() => model.close());
    harness = await startTestServer(cleanups, {
      dataDir: tempDir(cleanups),
      tasks: testRegistry(),
      config: {
        databaseUrl: await databaseUrlFor(cleanups, backend),
        modelUpstreams: {
          codex: { kind: "openai", baseUrl: `${model.url}/v1`, apiKey: UPSTREAM_KEY },
          claude: { kind: "anthropic", baseUrl: `${model.url}/v1`, apiKey: UPSTREAM_KEY },
        },
      },
    });
  });
  afterAll(() => cleanups.run());

  describe("projects", () => {
    it("adds a local repository with its current branch as the default", async () => {
      const { status, body } = await harness.api<Project>("POST", ServerPath.projects, {
        body: { repository_path: join(repository, ".") },
      });
      expect(status).toBe(201);
      expect(body).toMatchObject({ repository_path: repository, default_branch: "main" });
      const listed = await harness.api<{ projects: Project[] }>("GET", ServerPath.projects);
      expect(listed.body.projects.map((project) => project.id)).toContain(body.id);
      const one = await harness.api("GET", serverPath(ServerPath.project, { project_id: body.id }));
      expect(one.body).toEqual(body);
    });

    it("clones a repository URL into the data directory", async () => {
      const { status, body } = await harness.api<Project>("POST", ServerPath.projects, {
        body: { repository_url: `file://${repository}`, name: "cloned" },
      });
      expect(status).toBe(201);
      expect(body.name).toBe("cloned");
      expect(body.repository_path).toContain(harness.config.dataDir);
      expect(existsSync(join(body.repository_path!, "keep.txt"))).toBe(true);
    });

    it("refuses a directory that is not a git repository, and a failed clone, with a 400", async () => {
      const notGit = tempDir(cleanups);
      const local = await harness.api<{ error: { code: string; message: string } }>(
        "POST",
        ServerPath.projects,
        { body: { repository_path: notGit } },
      );
      expect(local.status).toBe(400);
      expect(local.body.error.message).toContain("not a git repository");
      const clone = await harness.api<{ error: { code: string } }>("POST", ServerPath.projects, {
        body: { repository_url: `file://${notGit}/missing` },
      });
      expect(clone.status).toBe(400);
      expect(clone.body.error.code).toBe("invalid_request");
    });

    it("names the field when neither or both of path and URL are given", async () => {
      const neither = await harness.api<{ error: { message: string } }>(
        "POST",
        ServerPath.projects,
        {
          body: {},
        },
      );
      expect(neither.status).toBe(400);
      expect(neither.body.error.message).toContain(
        "exactly one of repository_path or repository_url",
      );
    });

    it("answers 404 for an unknown or malformed project id", async () => {
      for (const id of ["00000000-0000-4000-8000-000000000000", "not-a-uuid"]) {
        const { status, body } = await harness.api<{ error: { code: string } }>(
          "GET",
          serverPath(ServerPath.project, { project_id: id }),
        );
        expect(status).toBe(404);
        expect(body.error.code).toBe("not_found");
      }
    });
  });

  describe("sessions", () => {
    it("creates a shared worktree on a new branch from the default branch", async () => {
      const { session } = await newSession();
      expect(session.branch).toMatch(/^deckhand\/[0-9a-f]{8}$/);
      expect(session.worktree_path).toContain(join(harness.config.dataDir, "workspaces"));
      expect(readFileSync(join(session.worktree_path!, "keep.txt"), "utf8")).toBe("keep\n");
      expect(gitIn(session.worktree_path!, "rev-parse", "--abbrev-ref", "HEAD")).toBe(
        session.branch,
      );
      expect(session.base_commit).toBe(gitIn(repository, "rev-parse", "main"));
      expect(session.approval_policy).toBe("on-request");
    });

    it("keeps the approval policy a session is opened with", async () => {
      const project = await harness.api<Project>("POST", ServerPath.projects, {
        body: { repository_path: repository },
      });
      const created = await harness.api<Session>(
        "POST",
        serverPath(ServerPath.projectSessions, { project_id: project.body.id }),
        { body: { approval_policy: "untrusted" } },
      );
      expect(created.body.approval_policy).toBe("untrusted");
      const read = await harness.api<Session>(
        "GET",
        serverPath(ServerPath.session, { session_id: created.body.id }),
      );
      expect(read.body.approval_policy).toBe("untrusted");
      const refused = await harness.api(
        "POST",
        serverPath(ServerPath.projectSessions, { project_id: project.body.id }),
        {
          body: { approval_policy: "sometimes" },
        },
      );
      expect(refused.status).toBe(400);
    });

    it("answers 409 when the requested branch exists already", async () => {
      const { project, session } = await newSession();
      const again = await harness.api<{ error: { code: string } }>(
        "POST",
        serverPath(ServerPath.projectSessions, { project_id: project.id }),
        { body: { branch: session.branch } },
      );
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe("conflict");
    });

    it("refuses to close a session with unapplied changes unless forced, then removes the worktree", async () => {
      const { session } = await newSession();
      writeFileSync(join(session.worktree_path!, "scratch.txt"), "unsaved\n");
      const sessionPath = serverPath(ServerPath.session, { session_id: session.id });
      const refused = await harness.api<{ error: { code: string; message: string } }>(
        "DELETE",
        sessionPath,
      );
      expect(refused.status).toBe(409);
      expect(refused.body.error.message).toContain("force=true");
      expect(existsSync(session.worktree_path!)).toBe(true);
      const closed = await harness.api<Session>("DELETE", `${sessionPath}?force=true`);
      expect(closed.status).toBe(200);
      expect(closed.body).toMatchObject({ status: "closed", worktree_path: null });
      expect(existsSync(session.worktree_path!)).toBe(false);
      // The branch stays in the repository.
      expect(gitIn(repository, "branch", "--list", session.branch)).toContain(session.branch);
      const chat = await harness.api<{ error: { code: string } }>(
        "POST",
        serverPath(ServerPath.sessionChats, { session_id: session.id }),
        { body: {} },
      );
      expect(chat.status).toBe(409);
    });

    it("archives and unarchives a session, refusing a body that is not exactly {archived: boolean} with a 400", async () => {
      const { session } = await newSession();
      const path = serverPath(ServerPath.session, { session_id: session.id });
      for (const body of [{}, { archived: "yes" }, { archived: true, title: "x" }]) {
        const refused = await harness.api<{ error: { code: string } }>("PATCH", path, { body });
        expect(refused.status, JSON.stringify(body)).toBe(400);
        expect(refused.body.error.code).toBe("invalid_request");
      }
      const missing = await harness.api(
        "PATCH",
        serverPath(ServerPath.session, { session_id: "nope" }),
        {
          body: { archived: true },
        },
      );
      expect(missing.status).toBe(404);

      const archived = await harness.api<Session>("PATCH", path, { body: { archived: true } });
      expect(archived.status).toBe(200);
      expect(archived.body.archived_at).not.toBeNull();
      const listed = async (query: string) =>
        (
          await harness.api<{ sessions: Session[] }>("GET", `${ServerPath.sessions}${query}`)
        ).body.sessions.map((listedSession) => listedSession.id);
      expect(await listed("")).not.toContain(session.id);
      expect(await listed("?archived=true")).toContain(session.id);
      expect(await listed(`?archived=any&q=${encodeURIComponent(session.branch)}`)).toEqual([
        session.id,
      ]);
      expect((await harness.api("GET", `${ServerPath.sessions}?archived=maybe`)).status).toBe(400);

      const restored = await harness.api<Session>("PATCH", path, { body: { archived: false } });
      expect(restored.body.archived_at).toBeNull();
      expect(await listed("")).toContain(session.id);
    });

    it("pushes a session on the activity stream when a new event is stored and when it is archived", async () => {
      const { session, chat } = await newSession();
      const socket = new WebSocket(
        `${harness.server.url.replace(/^http/, "ws")}${ServerPath.sessionActivity}`,
        [WireSubprotocol.sessionActivity],
      );
      cleanups.add(() => socket.close());
      const frames: { type: string; event?: SessionActivityEvent }[] = [];
      socket.on("message", (data) => frames.push(JSON.parse(data.toString())));
      const framesOf = () =>
        frames.flatMap((frame) =>
          frame.event?.session.id === session.id
            ? [SessionActivityEventSchema.parse(frame.event)]
            : [],
        );
      await waitUntil(() => frames.some((frame) => frame.type === "ready"));

      const published = await publishSessionEvent(harness.server.database.db, session.id, chat.id, {
        type: "plan",
        message_id: crypto.randomUUID(),
        entries: [],
      });
      await waitUntil(() =>
        framesOf().some((event) => event.session.last_event_id === published.id),
      );
      await harness.api("PATCH", serverPath(ServerPath.session, { session_id: session.id }), {
        body: { archived: true },
      });
      await waitUntil(() => framesOf().some((event) => event.session.archived_at !== null));
      const ids = frames.flatMap((frame) => (frame.event ? [frame.event.id] : []));
      expect(ids).toEqual(ids.map((_, index) => index + 1));
    });

    it("closes a clean session without force", async () => {
      const { session } = await newSession();
      const closed = await harness.api<Session>(
        "DELETE",
        serverPath(ServerPath.session, { session_id: session.id }),
      );
      expect(closed.status).toBe(200);
      expect(closed.body.status).toBe("closed");
    });
  });

  describe("messages, turns and pending changes", () => {
    it("stores a user message, runs the agent's turn as a task, and turns its edits into pending changes", async () => {
      const { session, chat } = await newSession();
      const stream = new StreamClient(
        harness.server.url,
        serverPath(ServerPath.sessionStream, { session_id: session.id }),
      );
      cleanups.add(() => stream.close());
      await stream.opened;

      const posted = await harness.api<CreateMessageResponse>(
        "POST",
        serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
        { body: { agent: "test-agent", text: "please edit" } },
      );
      expect(posted.status).toBe(202);
      expect(posted.body.message).toMatchObject({
        role: "user",
        agent: "test-agent",
        parts: [{ position: 0, kind: "text", content: { text: "please edit" } }],
      });
      await stream.waitFor((client) =>
        client.events().some((event) => event.event.type === "turn_end"),
      );
      const types = stream.events().map((event) => event.event.type);
      expect(types).toEqual(["message_created", "text", "pending_changes", "turn_end"]);
      const ids = stream.events().map((event) => event.id);
      expect(ids).toEqual([...ids].sort((left, right) => left - right));

      const messages = await harness.api<{ messages: Message[] }>(
        "GET",
        serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
      );
      expect(messages.body.messages.map((message) => message.id)).toEqual([posted.body.message.id]);

      const listed = await harness.api<{ pending_changes: PendingChange[] }>(
        "GET",
        serverPath(ServerPath.sessionPendingChanges, { session_id: session.id }),
      );
      const byPath = new Map(listed.body.pending_changes.map((change) => [change.path, change]));
      expect([...byPath.keys()].sort()).toEqual(["README.md", "agent-1.txt"].sort());
      const added = byPath.get(turns.length === 1 ? "agent-1.txt" : "agent-1.txt")!;
      expect(added).toMatchObject({ agent: "test-agent", status: "pending", chat_id: chat.id });
      expect(added.diff).toContain("+turn 1");
      expect(byPath.get("README.md")!.diff).toContain("+edited by turn 1");

      const applied = await harness.api<{ pending_change: PendingChange; commit: string }>(
        "POST",
        serverPath(ServerPath.applyPendingChange, { pending_change_id: added.id }),
      );
      expect(applied.status).toBe(200);
      expect(applied.body.pending_change.status).toBe("applied");
      expect(gitIn(repository, "rev-parse", session.branch)).toBe(applied.body.commit);
      expect(gitIn(repository, "show", "--name-only", "--format=%s", session.branch)).toContain(
        "agent-1.txt",
      );

      const rejected = await harness.api<{ pending_change: PendingChange }>(
        "POST",
        serverPath(ServerPath.rejectPendingChange, {
          pending_change_id: byPath.get("README.md")!.id,
        }),
      );
      expect(rejected.status).toBe(200);
      expect(readFileSync(join(session.worktree_path!, "README.md"), "utf8")).toBe("# demo\n");

      const again = await harness.api<{ error: { code: string } }>(
        "POST",
        serverPath(ServerPath.applyPendingChange, { pending_change_id: added.id }),
      );
      expect(again.status).toBe(409);
      await stream.waitFor(
        (client) =>
          client.events().filter((event) => event.event.type === "pending_change_resolved")
            .length === 2,
      );
      // Clean again: closing needs no force.
      const closed = await harness.api(
        "DELETE",
        serverPath(ServerPath.session, { session_id: session.id }),
      );
      expect(closed.status).toBe(200);
    });

    it("resolves a pending change once when two replicas apply it at the same time", async () => {
      const { session, chat } = await newSession();
      writeFileSync(join(session.worktree_path!, "race.txt"), "raced\n");
      const agentSessionId = await harness.server.sessions.agentSessions.ensure(
        session.id,
        "racer",
        chat.id,
      );
      const [change] = await harness.server.sessions.pendingChanges.record({
        sessionId: session.id,
        worktreePath: session.worktree_path!,
        agentSession: { id: agentSessionId, agent: "racer" },
        chatId: chat.id,
      });
      // A second replica: its own service (and in-process lock) over the same database.
      const replica = createSessionDomain({
        database: harness.server.database,
        projectsDir: join(harness.config.dataDir, "projects"),
        worktreesDir: join(harness.config.dataDir, "workspaces", "sessions"),
      });
      const before = gitIn(repository, "rev-list", "--count", session.branch);
      const [viaApi, viaReplica] = await Promise.allSettled([
        harness.api<{ commit: string } | { error: { code: string } }>(
          "POST",
          serverPath(ServerPath.applyPendingChange, { pending_change_id: change!.id }),
        ),
        replica.pendingChanges.apply(change!.id),
      ]);
      const outcomes = [
        viaApi.status === "fulfilled" ? viaApi.value.status : "rejected",
        viaReplica.status === "fulfilled"
          ? 200
          : (sessionsErrorToHttp(viaReplica.reason) as HttpError).status,
      ].sort();
      expect(outcomes).toEqual([200, 409]);
      if (viaApi.status === "fulfilled" && viaApi.value.status === 409) {
        expect(viaApi.value.body).toMatchObject({ error: { code: "conflict" } });
      }
      // One commit, one resolution event, and the change applied.
      expect(Number(gitIn(repository, "rev-list", "--count", session.branch))).toBe(
        Number(before) + 1,
      );
      const { rows } = await harness.server.database.query<{ count: string | number }>(
        `select count(*) as count from session_events
         where session_id = $1 and type = 'pending_change_resolved'`,
        [session.id],
      );
      expect(Number(rows[0]!.count)).toBe(1);
      const listed = await harness.api<{ pending_changes: PendingChange[] }>(
        "GET",
        serverPath(ServerPath.sessionPendingChanges, { session_id: session.id }),
      );
      expect(listed.body.pending_changes.map((pending) => pending.status)).toEqual(["applied"]);
      // A late reject of the same change is a conflict too, in the error shape.
      const late = await harness.api<{ error: { code: string; message: string } }>(
        "POST",
        serverPath(ServerPath.rejectPendingChange, { pending_change_id: change!.id }),
      );
      expect(late.status).toBe(409);
      expect(late.body.error).toMatchObject({ code: "conflict" });
      expect(late.body.error.message).toContain("applied already");
    });

    it("rejects a message for a malformed agent id without storing anything", async () => {
      const { chat } = await newSession();
      const response = await harness.api<{ error: { message: string } }>(
        "POST",
        serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
        { body: { agent: "Not An Id", text: "hi" } },
      );
      expect(response.status).toBe(400);
      expect(response.body.error.message).toContain("agent");
      const messages = await harness.api<{ messages: Message[] }>(
        "GET",
        serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
      );
      expect(messages.body.messages).toEqual([]);
    });
  });

  describe("model usage", () => {
    it("reports each request proxied for a session's job, with the totals", async () => {
      const { session, chat } = await newSession();
      const agentSessionId = await harness.server.sessions.agentSessions.ensure(
        session.id,
        "codex",
        chat.id,
      );
      const jobId = `agent-session:${agentSessionId}`;
      const { token } = await mintModelToken(harness.server.modelTokens, {
        jobId,
        ttlMs: 60_000,
      });
      model.script([
        turn.text("first", { usage: { input: 120, output: 30 } }),
        turn.text("second", { usage: { input: 9, output: 4 } }),
        turn.fail({ status: 503, message: "overloaded" }),
      ]);
      const proxied = async (path: string, body: object) => {
        const request = JSON.stringify(body);
        const response = await fetch(`${harness.server.url}${WirePath.modelProvider}${path}`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            [WireHeader.authorization]: `Bearer ${token}`,
            [WireHeader.jobId]: jobId,
          },
          body: request,
        });
        const answer = Buffer.from(await response.arrayBuffer());
        return {
          status: response.status,
          requestBytes: request.length,
          responseBytes: answer.length,
        };
      };
      const responses = await proxied("/codex/v1/responses", {
        model: "gpt-5-codex",
        input: "hi",
        stream: true,
      });
      const messages = await proxied("/claude/v1/messages", {
        model: "claude-sonnet-4-5",
        max_tokens: 100,
        messages: [{ role: "user", content: "hi" }],
        stream: true,
      });
      const failed = await proxied("/codex/v1/responses", { model: "gpt-5-codex", input: "again" });
      expect([responses.status, messages.status, failed.status]).toEqual([200, 200, 503]);

      // Recorded when each answer ended, which may be just after the client read its last byte.
      let usage: { status: number; body: UsageResponse } | undefined;
      await waitUntil(
        async () => {
          usage = await harness.api<UsageResponse>("GET", `${ServerPath.usage}?job_id=${jobId}`);
          return usage.body.usage.length === 3;
        },
        60_000,
        "three usage rows",
      );
      expect(usage!.status).toBe(200);
      const rows = [...usage!.body.usage].sort((left, right) =>
        left.created_at.localeCompare(right.created_at),
      );
      const upstream = `${model.url}/v1`;
      expect(rows).toMatchObject([
        {
          job_id: jobId,
          agent_type: "codex",
          upstream_kind: "openai",
          endpoint: "responses",
          model: "gpt-5-codex",
          input_tokens: 120,
          output_tokens: 30,
          total_tokens: 150,
          request_bytes: responses.requestBytes,
          response_bytes: responses.responseBytes,
          status: 200,
          outcome: "completed",
        },
        {
          agent_type: "claude",
          upstream_kind: "anthropic",
          endpoint: "messages",
          model: "claude-sonnet-4-5",
          input_tokens: 9,
          output_tokens: 4,
          total_tokens: 13,
          request_bytes: messages.requestBytes,
          response_bytes: messages.responseBytes,
          status: 200,
          outcome: "completed",
        },
        {
          agent_type: "codex",
          endpoint: "responses",
          input_tokens: null,
          output_tokens: null,
          request_bytes: failed.requestBytes,
          response_bytes: failed.responseBytes,
          status: 503,
        },
      ]);
      // The upstream is named by its base URL, never by its key.
      expect(rows.map((row) => row.upstream)).toEqual([upstream, upstream, upstream]);
      expect(usage!.body).toMatchObject({
        job_id: jobId,
        totals: {
          requests: 3,
          input_tokens: 129,
          output_tokens: 34,
          total_tokens: 163,
          request_bytes: responses.requestBytes + messages.requestBytes + failed.requestBytes,
          response_bytes: responses.responseBytes + messages.responseBytes + failed.responseBytes,
        },
      });

      // Another job's usage is its own.
      const other = await harness.api<UsageResponse>("GET", `${ServerPath.usage}?job_id=other-job`);
      expect(other.body).toEqual({
        job_id: "other-job",
        usage: [],
        totals: {
          requests: 0,
          input_tokens: 0,
          output_tokens: 0,
          total_tokens: 0,
          request_bytes: 0,
          response_bytes: 0,
        },
      });
      const missing = await harness.api<{ error: { code: string } }>("GET", ServerPath.usage);
      expect(missing.status).toBe(400);

      // Per session: every agent the session ran, each under its own job, with the same rows.
      const quietAgent = await harness.server.sessions.agentSessions.ensure(
        session.id,
        "claude",
        null,
      );
      const bySession = await harness.api<SessionUsageResponse>(
        "GET",
        serverPath(ServerPath.sessionUsage, { session_id: session.id }),
      );
      expect(bySession.status).toBe(200);
      expect(bySession.body.session_id).toBe(session.id);
      expect(bySession.body.jobs).toEqual([
        { job_id: jobId, agent: "codex", chat_id: chat.id, totals: usage!.body.totals },
        {
          job_id: `agent-session:${quietAgent}`,
          agent: "claude",
          chat_id: null,
          totals: other.body.totals,
        },
      ]);
      expect(bySession.body.totals).toEqual(usage!.body.totals);
      expect(
        [...bySession.body.usage].sort((left, right) =>
          left.created_at.localeCompare(right.created_at),
        ),
      ).toEqual(rows);
      // Another session's usage is its own; a session that does not exist is a 404.
      const { session: otherSession } = await newSession();
      const elsewhere = await harness.api<SessionUsageResponse>(
        "GET",
        serverPath(ServerPath.sessionUsage, { session_id: otherSession.id }),
      );
      expect(elsewhere.body).toEqual({
        session_id: otherSession.id,
        jobs: [],
        usage: [],
        totals: other.body.totals,
      });
      const unknown = await harness.api(
        "GET",
        serverPath(ServerPath.sessionUsage, { session_id: "00000000-0000-4000-8000-000000000000" }),
      );
      expect(unknown.status).toBe(404);
      const malformed = await harness.api(
        "GET",
        serverPath(ServerPath.sessionUsage, { session_id: "not-a-session" }),
      );
      expect(malformed.status).toBe(404);
    });
  });

  describe("the API surface", () => {
    it("answers every route of the OpenAPI document (none falls through to the unknown-route 404)", async () => {
      const unknownRoute = /no route for/;
      const missingId = "00000000-0000-4000-8000-000000000000";
      // Every route as the general shape, whether or not it declares a body.
      const routes: readonly ServerRoute[] = serverRoutes;
      for (const route of routes) {
        const path = route.path.replace(/:([a-z_]+)/g, missingId);
        const response = await harness.api<{ error?: { message: string } }>(
          route.method.toUpperCase(),
          path,
          route.body ? { body: {} } : {},
        );
        expect(response.body?.error?.message ?? "", `${route.method} ${route.path}`).not.toMatch(
          unknownRoute,
        );
      }
    });

    it("checks every body it reads against the wire, so drift fails a test", async () => {
      await newSession();
      const listed = await harness.api<{ projects: Project[] }>("GET", ServerPath.projects);
      const project = listed.body.projects[0]!;
      const check = (status: number, body: unknown) =>
        checkResponse("GET", ServerPath.projects, status, JSON.stringify(body));
      expect(check(200, listed.body)).toEqual(listed.body);
      expect(() => check(200, { projects: [{ ...project, extra: 1 }] })).toThrow(/differs/);
      const { name: _name, ...nameless } = project;
      expect(() => check(200, { projects: [nameless] })).toThrow(/does not match/);
      expect(() => check(500, { message: "flat" })).toThrow(/error response/);
      expect(() => checkResponse("POST", `${ServerPath.projects}/x/nothing`, 200, "{}")).toThrow(
        /no route/,
      );
    });

    it("answers an unknown route with a 404 in the error shape", async () => {
      const response = await harness.api<{ error: { code: string; message: string } }>(
        "GET",
        `${ServerPath.projects}/x/nothing-here`,
      );
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe("not_found");
    });

    it("answers a plain GET of a stream with 426", async () => {
      const { session } = await newSession();
      const response = await harness.api(
        "GET",
        serverPath(ServerPath.sessionStream, { session_id: session.id }),
      );
      expect(response.status).toBe(426);
    });

    it("waits for the task handler once per message (idempotent per message)", async () => {
      await waitUntil(() => turns.length >= 1, 5_000, "the first turn");
      const keys = turns.map((turn) => turn.user_message_id);
      expect(new Set(keys).size).toBe(keys.length);
    });
  });
});
