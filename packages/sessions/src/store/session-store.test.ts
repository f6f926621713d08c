import {
  agentSessions,
  chats,
  createDb,
  type DbHandle,
  messageParts,
  messages,
  pendingChanges,
  projects,
  sessions,
  sessionWorktrees,
} from "@deckhand/db";
import {
  createPostgresTestDatabase,
  type PostgresTestDatabase,
  testPostgresUrl,
} from "@deckhand/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionStore } from "./session-store.ts";

const backends = [
  { name: "pglite", postgres: false },
  ...(testPostgresUrl ? [{ name: "postgresql", postgres: true }] : []),
];

describe.each(backends)("SessionStore on $name", ({ postgres }) => {
  let handle: DbHandle;
  let database: PostgresTestDatabase | undefined;
  let store: SessionStore;

  beforeAll(async () => {
    database = postgres ? await createPostgresTestDatabase() : undefined;
    handle = await createDb(database ? { databaseUrl: database.url } : {});
    store = new SessionStore(handle.db);
  });
  afterAll(async () => {
    await handle.close();
    await database?.drop();
  });

  async function seed() {
    const [project] = await handle.db
      .insert(projects)
      .values({ name: "demo", repositoryPath: "/nowhere" })
      .returning();
    const [session] = await handle.db
      .insert(sessions)
      .values({ projectId: project!.id, branch: "deckhand/demo" })
      .returning();
    const [chat] = await handle.db.insert(chats).values({ sessionId: session!.id }).returning();
    return { project: project!, session: session!, chat: chat! };
  }

  it("reads a session with its latest worktree row, and nothing for an unknown id", async () => {
    const { project, session } = await seed();
    await handle.db.insert(sessionWorktrees).values({
      sessionId: session.id,
      path: "/old",
      branch: session.branch,
      baseCommit: "a".repeat(40),
      status: "removed",
      createdAt: new Date(Date.now() - 60_000),
    });
    await handle.db.insert(sessionWorktrees).values({
      sessionId: session.id,
      path: "/new",
      branch: session.branch,
      baseCommit: "b".repeat(40),
    });
    const found = await store.sessions.get(session.id);
    expect(found?.session).toMatchObject({ id: session.id, projectId: project.id, status: "open" });
    expect(found?.worktree).toMatchObject({ path: "/new", status: "active" });
    expect(await store.projects.get(project.id)).toMatchObject({ name: "demo" });
    expect(await store.sessions.get(crypto.randomUUID())).toBeUndefined();
    expect(await store.chats.get(crypto.randomUUID())).toBeUndefined();
  });

  it("reads a user message's text from its first part, and an empty text from anything else", async () => {
    const { chat } = await seed();
    const [message] = await handle.db
      .insert(messages)
      .values({ chatId: chat.id, role: "user", agentType: "claude", status: "complete" })
      .returning();
    await handle.db.insert(messageParts).values([
      { messageId: message!.id, position: 1, kind: "text", content: { text: "second" } },
      { messageId: message!.id, position: 0, kind: "text", content: { text: "first" } },
    ]);
    expect(await store.messages.userMessageText(message!.id)).toBe("first");
    const [odd] = await handle.db
      .insert(messages)
      .values({ chatId: chat.id, role: "user", agentType: "claude", status: "complete" })
      .returning();
    await handle.db
      .insert(messageParts)
      .values({ messageId: odd!.id, position: 0, kind: "text", content: { text: 42 } });
    expect(await store.messages.userMessageText(odd!.id)).toBe("");
    expect(await store.messages.userMessageText(crypto.randomUUID())).toBe("");
  });

  it("finds the live agent session, the latest resume id, and a pending change with the agent it is credited to", async () => {
    const { session, chat } = await seed();
    const [older] = await handle.db
      .insert(agentSessions)
      .values({
        sessionId: session.id,
        agentType: "claude",
        chatId: chat.id,
        resumeSessionId: "resume-old",
        status: "closed",
        lastActiveAt: new Date(Date.now() - 60_000),
      })
      .returning();
    const [current] = await handle.db
      .insert(agentSessions)
      .values({ sessionId: session.id, agentType: "claude", chatId: null })
      .returning();
    // The live one (not the closed one) is the session's, with no resume id of its own yet.
    expect(older!.status).toBe("closed");
    expect(await store.agentSessions.ensure(session.id, "claude", null)).toEqual({
      id: current!.id,
      resumeSessionId: null,
    });
    expect(await store.agentSessions.latestResumeId(session.id, "claude")).toBe("resume-old");
    expect(await store.agentSessions.latestResumeId(session.id, "codex")).toBeNull();
    const [change] = await handle.db
      .insert(pendingChanges)
      .values({
        sessionId: session.id,
        agentSessionId: current!.id,
        chatId: chat.id,
        path: "a.txt",
        diff: "+a",
      })
      .returning();
    expect(await store.pendingChanges.get(change!.id)).toEqual({ change, agent: "claude" });
  });
});
