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
import { SessionRepository } from "./session-repository.ts";

const backends = [
  { name: "pglite", postgres: false },
  ...(testPostgresUrl ? [{ name: "postgresql", postgres: true }] : []),
];

describe.each(backends)("SessionRepository on $name", ({ postgres }) => {
  let handle: DbHandle;
  let database: PostgresTestDatabase | undefined;
  let repository: SessionRepository;

  beforeAll(async () => {
    database = postgres ? await createPostgresTestDatabase() : undefined;
    handle = await createDb(database ? { databaseUrl: database.url } : {});
    repository = new SessionRepository(handle.db);
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
    const found = await repository.session(session.id);
    expect(found?.session).toMatchObject({ id: session.id, projectId: project.id, status: "open" });
    expect(found?.worktree).toMatchObject({ path: "/new", status: "active" });
    expect(await repository.project(project.id)).toMatchObject({ name: "demo" });
    expect(await repository.session(crypto.randomUUID())).toBeUndefined();
    expect(await repository.chat(crypto.randomUUID())).toBeUndefined();
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
    expect(await repository.userMessageText(message!.id)).toBe("first");
    const [odd] = await handle.db
      .insert(messages)
      .values({ chatId: chat.id, role: "user", agentType: "claude", status: "complete" })
      .returning();
    await handle.db
      .insert(messageParts)
      .values({ messageId: odd!.id, position: 0, kind: "text", content: { text: 42 } });
    expect(await repository.userMessageText(odd!.id)).toBe("");
    expect(await repository.userMessageText(crypto.randomUUID())).toBe("");
  });

  it("reads resume ids and a pending change with the agent it is credited to", async () => {
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
    expect(await repository.resumeIdOf(older!.id)).toBe("resume-old");
    expect(await repository.resumeIdOf(current!.id)).toBeNull();
    expect(await repository.latestResumeId(session.id, "claude")).toBe("resume-old");
    expect(await repository.latestResumeId(session.id, "codex")).toBeNull();
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
    expect(await repository.pendingChange(change!.id)).toEqual({ change, agent: "claude" });
  });
});
