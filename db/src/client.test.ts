import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { PGlite, QueryOptions, Transaction } from "@electric-sql/pglite";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  backends,
  openTestDatabase,
  type TestDatabase,
  waitFor,
} from "../test/database-fixtures.ts";
import { createDb, migrationsFolder, templateFileIsOurs } from "./client.ts";
import { DbError } from "./errors.ts";
import { projects, sessionEvents, sessions } from "./schema/index.ts";

const runFile = promisify(execFile);
const openMemoryProcess = fileURLToPath(new URL("../test/open-memory-process.ts", import.meta.url));
const writeThenWaitProcess = fileURLToPath(
  new URL("../test/write-then-wait-process.ts", import.meta.url),
);

describe.each(backends)("database on %s", (kind) => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await openTestDatabase(kind);
  });
  afterAll(async () => {
    await database?.dispose();
  });

  it("reports which engine it runs on", () => {
    expect(database.handle.kind).toBe(kind);
  });

  it("reads timestamps as dates through drizzle, inside a transaction, and raw", async () => {
    const [project] = await database.handle.db
      .insert(projects)
      .values({ name: "dated", repositoryPath: "/srv/dated" })
      .returning();
    expect(project!.createdAt).toBeInstanceOf(Date);
    const [selected] = await database.handle.db
      .select()
      .from(projects)
      .where(eq(projects.id, project!.id));
    expect(selected!.createdAt).toEqual(project!.createdAt);
    const inTransaction = await database.handle.db.transaction((transaction) =>
      transaction.select().from(projects).where(eq(projects.id, project!.id)),
    );
    expect(inTransaction[0]!.createdAt).toEqual(project!.createdAt);
    const raw = await database.handle.query<{ created_at: unknown; day: unknown }>(
      "select created_at, created_at::date as day from projects where id = $1",
      [project!.id],
    );
    expect(raw.rows[0]!.created_at).toEqual(project!.createdAt);
    expect(raw.rows[0]!.day).toBeInstanceOf(Date);
  });

  it("creates every table on start", async () => {
    const { rows } = await database.handle.query<{ table_name: string }>(
      `select table_name from information_schema.tables where table_schema = 'public'
       order by table_name`,
    );
    expect(rows.map((row) => row.table_name)).toEqual([
      "agent_sessions",
      "api_tokens",
      "batch_run_events",
      "batch_runs",
      "batch_specs",
      "changeset_events",
      "changeset_publications",
      "changesets",
      "chats",
      "executor_tokens",
      "message_parts",
      "messages",
      "model_tokens",
      "model_usage",
      "pending_changes",
      "permission_rules",
      "projects",
      "provider_probes",
      "session_events",
      "session_worktrees",
      "sessions",
      "step_results",
      "tasks",
      "workspace_steps",
      "workspaces",
    ]);
  });

  it("applies migrations again without changing anything", async () => {
    await database.handle.migrate();
    const { rows } = await database.handle.query<{ count: number | string }>(
      "select count(*) as count from drizzle.__drizzle_migrations",
    );
    const journal = await readdir(migrationsFolder);
    const migrationFiles = journal.filter((name) => name.endsWith(".sql"));
    expect(Number(rows[0]?.count)).toBe(migrationFiles.length);
  });

  it("rejects a status outside the allowed values", async () => {
    const [project] = await database.handle.db
      .insert(projects)
      .values({ name: "demo", repositoryPath: "/srv/demo" })
      .returning();
    await expect(
      database.handle.query(
        "insert into sessions (project_id, branch, status) values ($1, 'b', 'sleeping')",
        [project!.id],
      ),
    ).rejects.toThrow(/sessions_status_check/);
  });

  it("rejects a session of a project that does not exist", async () => {
    await expect(
      database.handle.db
        .insert(sessions)
        .values({ projectId: "00000000-0000-4000-8000-000000000000", branch: "b" }),
    ).rejects.toThrow();
  });

  it("rejects a model token stored other than as a SHA-256 hex hash", async () => {
    await expect(
      database.handle.query(
        "insert into model_tokens (token_hash, job_id, expires_at) values ($1, 'job', now())",
        ["not-a-hash"],
      ),
    ).rejects.toThrow(/model_tokens_token_hash_check/);
  });

  it("numbers session events in increasing order for resuming after the last id", async () => {
    const [project] = await database.handle.db
      .insert(projects)
      .values({ name: "events", repositoryUrl: "https://example.invalid/repo.git" })
      .returning();
    const [session] = await database.handle.db
      .insert(sessions)
      .values({ projectId: project!.id, branch: "deckhand/events" })
      .returning();
    const inserted = await database.handle.db
      .insert(sessionEvents)
      .values([1, 2, 3].map((n) => ({ sessionId: session!.id, type: "text", payload: { n } })))
      .returning({ id: sessionEvents.id });
    const ids = inserted.map((row) => row.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(3);
  });

  it("delivers a NOTIFY to listeners, and stops after unlisten", async () => {
    const received: string[] = [];
    const unlisten = await database.handle.listen("deckhand_test", (payload) =>
      received.push(payload),
    );
    await database.handle.notify("deckhand_test", "first");
    await waitFor(() => received.length === 1);
    await unlisten();
    await database.handle.notify("deckhand_test", "second");
    await database.handle.notify("deckhand_test_other", "ignored");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(received).toEqual(["first"]);
  });

  it("delivers a NOTIFY sent in a transaction only when it commits", async () => {
    const received: string[] = [];
    const unlisten = await database.handle.listen("deckhand_test_tx", (payload) =>
      received.push(payload),
    );
    await database.handle.db
      .transaction(async (tx) => {
        await tx.execute("select pg_notify('deckhand_test_tx', 'rolled back')" as never);
        throw new Error("roll back");
      })
      .catch(() => {});
    await database.handle.db.transaction(async (tx) => {
      await tx.execute("select pg_notify('deckhand_test_tx', 'committed')" as never);
    });
    await waitFor(() => received.length >= 1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(received).toEqual(["committed"]);
    await unlisten();
  });

  it("opens an up-to-date database without running a DDL statement", async () => {
    // An event trigger refuses every DDL statement: drizzle's own check starts with one.
    await database.handle.query(
      `create function refuse_ddl() returns event_trigger language plpgsql
       as $$ begin raise exception 'DDL while migrating: %', tg_tag; end $$`,
    );
    await database.handle.query(
      "create event trigger refuse_ddl on ddl_command_start execute function refuse_ddl()",
    );
    try {
      await expect(database.handle.migrate()).resolves.toBeUndefined();
    } finally {
      await database.handle.query("drop event trigger refuse_ddl");
      await database.handle.query("drop function refuse_ddl()");
    }
  });

  it("refuses a channel name that is not a plain identifier", async () => {
    await expect(database.handle.listen("bad channel;", () => {})).rejects.toMatchObject({
      code: "invalid_channel",
    });
  });
});

/** Opens `dataDir`, reads the one text `value` `sql` selects, and closes it again. */
async function valueAtOpen(dataDir: string, sql: string): Promise<string> {
  const handle = await createDb({ dataDir });
  try {
    const { rows } = await handle.query<{ value: string }>(sql);
    return rows[0]!.value;
  } finally {
    await handle.close();
  }
}

describe("embedded database", () => {
  it("sends drizzle's statements without a parser option of their own, also in a transaction", async () => {
    const handle = await createDb({ dataDir: "memory://" });
    const client = (handle.db as unknown as { $client: PGlite }).$client;
    const original = client.query.bind(client);
    const options: unknown[] = [];
    client.query = ((text: string, params?: unknown[], given?: QueryOptions) => {
      options.push(given);
      return original(text, params, given);
    }) as PGlite["query"];
    const originalTransaction = client.transaction.bind(client);
    client.transaction = ((callback: (transaction: Transaction) => Promise<unknown>) =>
      originalTransaction((transaction) =>
        callback({
          ...transaction,
          query: (text: string, params?: unknown[], given?: QueryOptions) => {
            options.push(given);
            return transaction.query(text, params, given);
          },
        } as Transaction),
      )) as PGlite["transaction"];
    try {
      await handle.db.insert(projects).values({ name: "plain", repositoryPath: "/srv/plain" });
      await handle.db.transaction((transaction) => transaction.select().from(projects));
      expect(options.length).toBeGreaterThan(0);
      // PGlite copies its whole parser table for a statement that names parsers.
      expect(options.filter((given) => (given as QueryOptions)?.parsers !== undefined)).toEqual([]);
    } finally {
      client.query = original;
      client.transaction = originalTransaction;
      await handle.close();
    }
  });

  it("starts each in-memory database migrated, empty and its own, even while another is open", async () => {
    const first = await createDb({ dataDir: "memory://" });
    const second = await createDb({ dataDir: "memory://" });
    try {
      await first.db.insert(projects).values({ name: "only-first", repositoryPath: "/srv/a" });
      expect(await second.db.select().from(projects)).toEqual([]);
      await second.db.insert(projects).values({ name: "only-second", repositoryPath: "/srv/b" });
      expect((await first.db.select().from(projects)).map((row) => row.name)).toEqual([
        "only-first",
      ]);
      const applied = await second.query<{ count: number }>(
        "select count(*)::int as count from drizzle.__drizzle_migrations",
      );
      const journal = await readdir(migrationsFolder);
      expect(applied.rows[0]!.count).toBe(journal.filter((name) => name.endsWith(".sql")).length);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it("keeps its data in the data directory across restarts", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "deckhand-db-"));
    try {
      const first = await createDb({ dataDir });
      await first.db.insert(projects).values({ name: "kept", repositoryPath: "/srv/kept" });
      await first.close();
      const second = await createDb({ dataDir });
      const rows = await second.db.select().from(projects);
      await second.close();
      expect(rows.map((row) => row.name)).toEqual(["kept"]);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it("starts a new data directory as a copy of the migrated template, not by initdb", async () => {
    // initdb gives every cluster a system identifier of its own; copies of one template share it.
    const identifier = (dataDir: string) =>
      valueAtOpen(dataDir, "select system_identifier::text as value from pg_control_system()");
    const first = await mkdtemp(join(tmpdir(), "deckhand-db-"));
    const second = await mkdtemp(join(tmpdir(), "deckhand-db-"));
    try {
      const firstIdentifier = await identifier(first);
      expect(await identifier(second)).toBe(firstIdentifier);
      // Reopened, it is the same database, not a new copy.
      expect(await identifier(first)).toBe(firstIdentifier);
    } finally {
      await rm(first, { recursive: true, force: true });
      await rm(second, { recursive: true, force: true });
    }
  }, 120_000);

  it("opens a new database with no WAL to replay: its first start writes almost no pages", async () => {
    // A template dumped without a checkpoint made every copy replay initdb's and the
    // migrations' WAL at its first start, and write the pages that dirtied in the checkpoint
    // ending recovery (291 pages; the statistics start over with that recovery).
    const pagesWritten = async (dataDir: string) =>
      Number(
        await valueAtOpen(
          dataDir,
          "select coalesce(sum(writes), 0)::text as value from pg_stat_io",
        ),
      );
    const directory = await mkdtemp(join(tmpdir(), "deckhand-db-"));
    try {
      expect(await pagesWritten(directory)).toBeLessThan(20);
      expect(await pagesWritten("memory://")).toBeLessThan(20);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }, 120_000);

  it("keeps what a killed process committed in a new data directory, and stays usable", async () => {
    // The first WAL segment is written with its zero pages left as holes, and the template
    // holds no WAL to replay: recovery after a kill has to find the process's commits in the
    // holes it wrote into.
    const dataDir = await mkdtemp(join(tmpdir(), "deckhand-db-"));
    const writeAndDie = async (value: string) => {
      const child = spawn(
        process.execPath,
        ["--conditions=source", writeThenWaitProcess, dataDir, value],
        {
          stdio: ["ignore", "pipe", "inherit"],
        },
      );
      const exited = once(child, "exit");
      let output = "";
      for await (const chunk of child.stdout) {
        output += String(chunk);
        if (output.includes('"written":true')) break;
      }
      child.kill("SIGKILL");
      await exited;
      expect(output).toContain('"written":true');
    };
    try {
      await writeAndDie("first");
      await writeAndDie("second");
      const handle = await createDb({ dataDir });
      try {
        const { rows } = await handle.query<{ value: string }>(
          "select value from crash_check order by value",
        );
        expect(rows.map((row) => row.value)).toEqual(["first", "second"]);
        await handle.query("insert into crash_check (value) values ('third')");
      } finally {
        await handle.close();
      }
      expect(
        await valueAtOpen(
          dataDir,
          "select string_agg(value, ',' order by value) as value from crash_check",
        ),
      ).toBe("first,second,third");
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 180_000);

  it("makes a new data directory from the template without reading the template into memory", async () => {
    // The first directory makes sure the template is cached on disk; the second, opened in a
    // process of its own, is the case of every `deckhand up` on a new data directory. Loaded
    // through PGlite, the 42 MB template was read whole three times: 120 MiB of array buffers
    // an idle server kept until a collection happened to run.
    const first = await mkdtemp(join(tmpdir(), "deckhand-db-"));
    const second = await mkdtemp(join(tmpdir(), "deckhand-db-"));
    try {
      await (await createDb({ dataDir: first })).close();
      const { stdout } = await runFile(
        process.execPath,
        ["--conditions=source", openMemoryProcess, second],
        { timeout: 120_000 },
      );
      const usage = JSON.parse(stdout) as NodeJS.MemoryUsage;
      expect(usage.arrayBuffers).toBeLessThan(32 * 1024 * 1024);
      const reopened = await createDb({ dataDir: second });
      try {
        const { rows } = await reopened.query<{ count: number }>(
          "select count(*)::int as count from drizzle.__drizzle_migrations",
        );
        const journal = await readdir(migrationsFolder);
        expect(rows[0]!.count).toBe(journal.filter((name) => name.endsWith(".sql")).length);
      } finally {
        await reopened.close();
      }
    } finally {
      await rm(first, { recursive: true, force: true });
      await rm(second, { recursive: true, force: true });
    }
  }, 120_000);

  it("keeps PostgreSQL's shared buffers small, in memory and on a new or reopened directory", async () => {
    // PGlite zeroes the whole of shared_buffers at start and WebAssembly memory never shrinks:
    // PostgreSQL's 128 MB default was resident for the life of every process holding a database.
    const sharedBuffers = async (dataDir: string) => {
      const handle = await createDb({ dataDir });
      try {
        const { rows } = await handle.query<{ shared_buffers: string }>("show shared_buffers");
        return rows[0]!.shared_buffers;
      } finally {
        await handle.close();
      }
    };
    const dataDir = await mkdtemp(join(tmpdir(), "deckhand-db-"));
    try {
      expect(await sharedBuffers("memory://")).toBe("16MB");
      expect(await sharedBuffers(dataDir)).toBe("16MB");
      expect(await sharedBuffers(dataDir)).toBe("16MB");
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it("loads a cached template only if it is this user's file and no one else may write it", () => {
    const uid = process.getuid?.() ?? 0;
    const file = (mode: number, owner = uid) => ({ uid: owner, mode, isFile: () => true });
    expect(templateFileIsOurs(file(0o100600))).toBe(true);
    expect(templateFileIsOurs(file(0o100644))).toBe(true);
    expect(templateFileIsOurs(file(0o100620))).toBe(false);
    expect(templateFileIsOurs(file(0o100602))).toBe(false);
    expect(templateFileIsOurs(file(0o100600, uid + 1))).toBe(false);
    expect(templateFileIsOurs({ uid, mode: 0o120777, isFile: () => false })).toBe(false);
  });

  it("fails with connection_failed when PostgreSQL is unreachable", async () => {
    const error = await createDb({ databaseUrl: "postgres://nobody@127.0.0.1:1/none" }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(DbError);
    expect((error as DbError).code).toBe("connection_failed");
  });
});
