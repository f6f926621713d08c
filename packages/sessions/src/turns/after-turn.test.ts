// The work after an agent's turn, on PGlite and on PostgreSQL when DATABASE_URL is set, real
// git: it may start as soon as the agent is done, reading the worktree's status while the turn's
// last events are still being stored, and writes nothing until they are.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDb, type DbHandle } from "@deckhand/db";
import {
  createPostgresTestDatabase,
  createTempRepository,
  type PostgresTestDatabase,
  type TempRepository,
  testPostgresUrl,
} from "@deckhand/testkit";
import pino from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type WorktreeStatus, worktreeStatus } from "../git.ts";
import { createSessionDomain, type SessionDomain } from "../session-domain.ts";
import { SessionStore } from "../store/session-store.ts";
import { AfterTurn, type FinishedTurn } from "./after-turn.ts";
import { TurnStream } from "./turn-stream.ts";

const backends = [
  { name: "pglite", postgres: false },
  ...(testPostgresUrl ? [{ name: "postgresql", postgres: true }] : []),
];

/** Until `check` holds, or fails after a generous deadline. */
async function waitFor(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in 20 s");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.each(backends)("the work after a turn on $name", ({ postgres }) => {
  let database: DbHandle;
  let postgresDatabase: PostgresTestDatabase | undefined;
  let scratch: string;
  let repository: TempRepository;
  let domain: SessionDomain;
  let store: SessionStore;
  /** Status reads of the after-turn work, as they finish. */
  let reads: WorktreeStatus[];
  let afterTurn: AfterTurn;

  beforeAll(async () => {
    postgresDatabase = postgres ? await createPostgresTestDatabase() : undefined;
    database = await createDb(
      postgresDatabase ? { databaseUrl: postgresDatabase.url } : { dataDir: "memory://" },
    );
    scratch = mkdtempSync(join(tmpdir(), "deckhand-after-turn-"));
    repository = createTempRepository({ "README.md": "# demo\n" });
    domain = createSessionDomain({
      database,
      projectsDir: join(scratch, "projects"),
      worktreesDir: join(scratch, "worktrees"),
    });
    store = new SessionStore(database.db);
  });

  afterAll(async () => {
    await database.close();
    await postgresDatabase?.drop();
    repository.remove();
    rmSync(scratch, { recursive: true, force: true });
  });

  beforeEach(() => {
    reads = [];
    afterTurn = new AfterTurn({
      store,
      lock: domain.lock,
      pendingChanges: domain.pendingChanges,
      logger: pino({ level: "silent" }),
      readStatus: async (path) => {
        const status = await worktreeStatus(path);
        reads.push(status);
        return status;
      },
    });
  });

  /** A session whose agent wrote `notes.md` in its turn, and that turn as the work needs it. */
  async function finishedTurn(): Promise<FinishedTurn> {
    const project = await domain.projects.create({ repository_path: repository.path });
    const session = await domain.sessions.create(project.id, {});
    const chat = await domain.chats.create(session.id, {});
    const row = await store.sessions.get(session.id);
    const worktree = row!.worktree!;
    const agentSession = await store.agentSessions.ensure(session.id, "scripted", null);
    writeFileSync(join(worktree.path, "notes.md"), "written by the agent\n");
    const ref = {
      sessionId: session.id,
      chatId: chat.id,
      agent: "scripted",
      messageId: crypto.randomUUID(),
    };
    return {
      ...ref,
      worktree,
      agentSessionId: agentSession.id,
      since: null,
      stream: new TurnStream(store, ref, pino({ level: "silent" })),
    };
  }

  it("reads the worktree while the turn's events are stored, and records once they are", async () => {
    const turn = await finishedTurn();
    let tellStored: (stored: boolean) => void = () => {};
    const stored = new Promise<boolean>((resolveStored) => {
      tellStored = resolveStored;
    });
    let done = false;
    const run = afterTurn.run(turn, stored).then(() => {
      done = true;
    });
    await waitFor(() => reads.length === 1);
    expect(reads[0]!.changes.map((change) => change.path)).toEqual(["notes.md"]);
    // Nothing is written before the turn's own events are stored.
    expect(done).toBe(false);
    expect(await domain.pendingChanges.list(turn.sessionId, undefined)).toEqual([]);
    tellStored(true);
    await run;
    const recorded = await domain.pendingChanges.list(turn.sessionId, undefined);
    expect(recorded.map((change) => change.path)).toEqual(["notes.md"]);
    // The status read at the start served the record: git was asked once.
    expect(reads).toHaveLength(1);
  });

  it("writes nothing when the turn's events could not be stored", async () => {
    const turn = await finishedTurn();
    await afterTurn.run(turn, Promise.resolve(false));
    expect(await domain.pendingChanges.list(turn.sessionId, undefined)).toEqual([]);
  });
});
