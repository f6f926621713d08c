// A session's activity and latest event id, derived from stored messages and stream events, and
// the session list across projects: archived filter and search. PGlite, real git.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { agentSessions, createDb, type DbHandle, messages, pendingChanges } from "@deckhand/db";
import { createTempRepository, type TempRepository } from "@deckhand/testkit";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSessionDomain, type SessionDomain } from "../session-domain.ts";
import { SessionsError } from "../sessions-error.ts";
import { publishSessionEvent } from "../store/session-events.ts";
import { assistantMessageId } from "../turns/turn-messages.ts";

let database: DbHandle;
let scratch: string;
let repository: TempRepository;
let service: SessionDomain;

beforeAll(async () => {
  database = await createDb({ dataDir: "memory://" });
  scratch = mkdtempSync(join(tmpdir(), "deckhand-activity-"));
  repository = createTempRepository({ "README.md": "# demo\n" });
  service = createSessionDomain({
    database,
    projectsDir: join(scratch, "projects"),
    worktreesDir: join(scratch, "worktrees"),
  });
});

afterAll(async () => {
  await database.close();
  repository.remove();
  rmSync(scratch, { recursive: true, force: true });
});

/** What the turn runner stores when a turn starts: the assistant message, streaming. */
async function startTurn(sessionId: string, chatId: string, userMessageId: string) {
  const id = assistantMessageId(userMessageId);
  await database.db
    .insert(messages)
    .values({ id, chatId, role: "assistant", agentType: "codex", status: "streaming" });
  await publishSessionEvent(database.db, sessionId, chatId, {
    type: "turn_started",
    chat_id: chatId,
    message_id: id,
    user_message_id: userMessageId,
    agent: "codex",
  });
  return id;
}

async function finishTurn(messageId: string, status: "complete" | "failed" | "cancelled") {
  await database.db
    .update(messages)
    .set({ status, completedAt: new Date() })
    .where(eq(messages.id, messageId));
}

describe("session activity", () => {
  it("follows a turn: queued and streaming are running, a waiting permission needs input, a failed turn stays failed until the next", async () => {
    const project = await service.projects.create({ repository_path: repository.path });
    const session = await service.sessions.create(project.id, { title: "activity" });
    expect(session).toMatchObject({
      activity: "idle",
      last_event_id: 0,
      archived_at: null,
      pending_changes: 0,
      // Nothing happened yet: its last activity is its start.
      last_activity_at: session.created_at,
    });
    const chat = await service.chats.create(session.id, {});

    const first = await service.messages.create(chat.id, { agent: "codex", text: "go" });
    const queued = await service.sessions.get(session.id);
    expect(queued.activity).toBe("running");
    expect(queued.last_event_id).toBeGreaterThan(0);
    expect(Date.parse(queued.last_activity_at)).toBeGreaterThanOrEqual(
      Date.parse(session.created_at),
    );

    const assistant = await startTurn(session.id, chat.id, first.message.id);
    expect((await service.sessions.get(session.id)).activity).toBe("running");

    await publishSessionEvent(database.db, session.id, chat.id, {
      type: "permission_request",
      message_id: assistant,
      request_id: "request-1",
      tool_call_id: null,
      title: "Run tests",
      options: [{ option_id: "allow", name: "Allow", kind: "allow_once" }],
    });
    const waiting = await service.sessions.get(session.id);
    expect(waiting.activity).toBe("needs_input");
    expect(waiting.last_event_id).toBeGreaterThan(queued.last_event_id);

    await publishSessionEvent(database.db, session.id, chat.id, {
      type: "permission_resolved",
      message_id: assistant,
      request_id: "request-1",
      outcome: "allow_once",
    });
    expect((await service.sessions.get(session.id)).activity).toBe("running");

    await finishTurn(assistant, "failed");
    expect((await service.sessions.get(session.id)).activity).toBe("failed");

    const second = await service.messages.create(chat.id, { agent: "codex", text: "again" });
    expect((await service.sessions.get(session.id)).activity).toBe("running");
    await finishTurn(await startTurn(session.id, chat.id, second.message.id), "complete");
    expect((await service.sessions.get(session.id)).activity).toBe("idle");
  });

  it("counts the changes waiting for review", async () => {
    const project = await service.projects.create({ repository_path: repository.path });
    const session = await service.sessions.create(project.id, { title: "pending" });
    const chat = await service.chats.create(session.id, {});
    const [agent] = await database.db
      .insert(agentSessions)
      .values({ sessionId: session.id, agentType: "codex", chatId: chat.id })
      .returning();
    for (const [path, status] of [
      ["a.txt", "pending"],
      ["b.txt", "pending"],
      ["c.txt", "applied"],
    ] as const) {
      await database.db.insert(pendingChanges).values({
        sessionId: session.id,
        agentSessionId: agent!.id,
        chatId: chat.id,
        path,
        diff: `+${path}`,
        status,
      });
    }
    expect((await service.sessions.get(session.id)).pending_changes).toBe(2);
    const listed = await service.sessions.listAll({ q: "pending" });
    expect(listed.find((candidate) => candidate.id === session.id)?.pending_changes).toBe(2);
  });

  it("drops a permission request of a turn that ended unanswered", async () => {
    const project = await service.projects.create({ repository_path: repository.path });
    const session = await service.sessions.create(project.id, {});
    const chat = await service.chats.create(session.id, {});
    const posted = await service.messages.create(chat.id, { agent: "codex", text: "go" });
    const assistant = await startTurn(session.id, chat.id, posted.message.id);
    await publishSessionEvent(database.db, session.id, chat.id, {
      type: "permission_request",
      message_id: assistant,
      request_id: "request-2",
      tool_call_id: null,
      title: "Edit",
      options: [{ option_id: "allow", name: "Allow", kind: "allow_once" }],
    });
    expect((await service.sessions.get(session.id)).activity).toBe("needs_input");
    await finishTurn(assistant, "cancelled");
    expect((await service.sessions.get(session.id)).activity).toBe("idle");
  });
});

describe("the session list across projects", () => {
  it("hides archived sessions unless asked, and finds sessions by title, branch or project name", async () => {
    const project = await service.projects.create({
      repository_path: repository.path,
      name: "Harbour",
    });
    const mooring = await service.sessions.create(project.id, {
      title: "Fix the mooring",
      branch: "fix/mooring-lines",
    });
    const sails = await service.sessions.create(project.id, {
      title: "Trim 100% of sails",
      branch: "sails",
    });
    const idsOf = async (query: Parameters<SessionDomain["sessions"]["listAll"]>[0]) =>
      (await service.sessions.listAll(query))
        .map((session) => session.id)
        .filter((id) => id === mooring.id || id === sails.id);

    expect(await idsOf({})).toEqual([sails.id, mooring.id]);
    expect(await idsOf({ q: "MOORING" })).toEqual([mooring.id]);
    expect(await idsOf({ q: "lines fix" })).toEqual([mooring.id]);
    expect(await idsOf({ q: "harbour" })).toEqual([sails.id, mooring.id]);
    // Search text is literal: % and _ are not wildcards.
    expect(await idsOf({ q: "100%" })).toEqual([sails.id]);
    expect(await idsOf({ q: "fix_" })).toEqual([]);

    const archived = await service.sessions.update(mooring.id, { archived: true });
    expect(archived.archived_at).not.toBeNull();
    expect(await idsOf({})).toEqual([sails.id]);
    expect(await idsOf({ archived: "true" })).toEqual([mooring.id]);
    expect(await idsOf({ archived: "any" })).toEqual([sails.id, mooring.id]);
    // Archiving again keeps when it was first archived.
    expect((await service.sessions.update(mooring.id, { archived: true })).archived_at).toBe(
      archived.archived_at,
    );

    const restored = await service.sessions.update(mooring.id, { archived: false });
    expect(restored.archived_at).toBeNull();
    expect(await idsOf({})).toEqual([sails.id, mooring.id]);
  });

  it("answers not_found when archiving a session that does not exist", async () => {
    const error = await service.sessions
      .update(crypto.randomUUID(), { archived: true })
      .catch((caught: unknown) => caught);
    expect(SessionsError.isInstance(error) && error.code).toBe("not_found");
  });
});
