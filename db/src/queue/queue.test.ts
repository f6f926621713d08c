import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  backends,
  openTestDatabase,
  type TestDatabase,
  waitFor,
} from "../../test/database-fixtures.ts";
import type { DbHandle } from "../client.ts";
import { projects } from "../schema/projects.ts";
import { tasks } from "../schema/tasks.ts";
import { enqueue, TASK_CHANNEL } from "./enqueue.ts";
import { type TaskDefinition, TaskRegistry } from "./registry.ts";
import { TaskWorker, type WorkerOptions } from "./worker.ts";

describe.each(backends)("durable queue on %s", (kind) => {
  let database: TestDatabase;
  const workers: TaskWorker[] = [];

  beforeAll(async () => {
    database = await openTestDatabase(kind);
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
  });
  afterAll(async () => {
    await database?.dispose();
  });

  // Each test uses its own task type, so a worker never claims another test's tasks.
  function uniqueType(): string {
    return `test.${randomUUID()}`;
  }

  async function startWorker(
    type: string,
    definition: TaskDefinition<unknown>,
    options: Partial<WorkerOptions> = {},
  ): Promise<TaskWorker> {
    const registry = new TaskRegistry().register(type, definition);
    const worker = new TaskWorker({
      database: database.handle,
      registry,
      pollIntervalMs: 60_000,
      backoffBaseMs: 50,
      ...options,
    });
    workers.push(worker);
    await worker.start();
    return worker;
  }

  async function taskRow(id: number) {
    const [row] = await database.handle.db.select().from(tasks).where(eq(tasks.id, id));
    return row!;
  }

  it("enqueues in one statement, its NOTIFY included; an existing key notifies nothing", async () => {
    const type = uniqueType();
    const notices: string[] = [];
    const unlisten = await database.handle.listen(TASK_CHANNEL, (payload) => {
      notices.push(payload);
    });
    // Every statement drizzle sends for the handle's database goes through its session's logger.
    const session = (database.handle.db as unknown as { session: Record<string, unknown> })
      .session as { options: { logger?: unknown }; logger: unknown };
    const saved = { options: session.options.logger, session: session.logger };
    const sent: string[] = [];
    const logger = { logQuery: (query: string) => sent.push(query) };
    session.options.logger = logger;
    session.logger = logger;
    try {
      const first = await enqueue(database.handle.db, { type, idempotencyKey: type });
      expect(sent).toHaveLength(1);
      await waitFor(() => notices.includes(type));
      sent.length = 0;
      const again = await enqueue(database.handle.db, { type, idempotencyKey: type });
      expect(again).toEqual({ id: first.id, created: false });
      // The insert that found the key, and the lookup of the task that has it.
      expect(sent).toHaveLength(2);
      expect(notices.filter((notice) => notice === type)).toHaveLength(1);
    } finally {
      session.options.logger = saved.options;
      session.logger = saved.session;
      await unlisten();
    }
  });

  it("runs a task enqueued in a committed transaction, woken by NOTIFY without polling", async () => {
    const type = uniqueType();
    const seen: unknown[] = [];
    // A one-minute poll interval: only the NOTIFY can make this test finish in time.
    await startWorker(type, {
      async handle(payload) {
        seen.push(payload);
      },
    });
    const { id } = await database.handle.db.transaction(async (tx) => {
      await tx.insert(projects).values({ name: "queued", repositoryPath: "/srv/queued" });
      return enqueue(tx, { type, payload: { hello: "world" } });
    });
    await waitFor(async () => (await taskRow(id)).status === "succeeded", 60_000);
    expect(seen).toEqual([{ hello: "world" }]);
    expect((await taskRow(id)).attempts).toBe(1);
  });

  it("drops the task when the enqueuing transaction rolls back", async () => {
    const type = uniqueType();
    await database.handle.db
      .transaction(async (tx) => {
        await enqueue(tx, { type });
        throw new Error("roll back");
      })
      .catch(() => {});
    const rows = await database.handle.db.select().from(tasks).where(eq(tasks.type, type));
    expect(rows).toEqual([]);
  });

  it("finds tasks by polling when it does not listen", async () => {
    const type = uniqueType();
    let runs = 0;
    await startWorker(
      type,
      {
        async handle() {
          runs += 1;
        },
      },
      { listen: false, pollIntervalMs: 50 },
    );
    const { id } = await enqueue(database.handle.db, { type });
    await waitFor(async () => (await taskRow(id)).status === "succeeded", 60_000);
    expect(runs).toBe(1);
  });

  it("returns the existing task for a repeated idempotency key", async () => {
    const type = uniqueType();
    const key = `key-${randomUUID()}`;
    const first = await enqueue(database.handle.db, { type, idempotencyKey: key });
    const second = await enqueue(database.handle.db, { type, idempotencyKey: key });
    expect(first.created).toBe(true);
    expect(second).toEqual({ id: first.id, created: false });
    const rows = await database.handle.db.select().from(tasks).where(eq(tasks.type, type));
    expect(rows).toHaveLength(1);
  });

  it("retries a failing task with growing delays, then marks it failed with the reason", async () => {
    const type = uniqueType();
    const startedAt: number[] = [];
    await startWorker(type, {
      async handle() {
        startedAt.push(Date.now());
        throw new Error(`attempt ${startedAt.length} broke`);
      },
    });
    const { id } = await enqueue(database.handle.db, { type, maxAttempts: 3 });
    await waitFor(async () => (await taskRow(id)).status === "failed", 60_000);
    const row = await taskRow(id);
    expect(row.attempts).toBe(3);
    expect(row.lastError).toBe("Error: attempt 3 broke");
    expect(row.lockedBy).toBeNull();
    // Backoff base 50 ms: the second retry waits about twice as long as the first.
    const [first, second, third] = startedAt;
    expect(second! - first!).toBeGreaterThanOrEqual(40);
    expect(third! - second!).toBeGreaterThanOrEqual(90);
  });

  it("deletes succeeded tasks past the retention period and keeps failed and recent ones", async () => {
    const type = uniqueType();
    const ids: Record<string, number> = {};
    for (const [name, status, ageMs] of [
      ["old-succeeded", "succeeded", 60_000],
      ["recent-succeeded", "succeeded", 0],
      ["old-failed", "failed", 60_000],
    ] as const) {
      const { id } = await enqueue(database.handle.db, { type });
      await database.handle.query(
        `update tasks set status = $2, completed_at = now() - $3 * interval '1 millisecond'
         where id = $1`,
        [id, status, ageMs],
      );
      ids[name] = id;
    }
    await startWorker(
      type,
      { async handle() {} },
      { retainSucceededMs: 30_000, cleanupIntervalMs: 0 },
    );
    await waitFor(async () => {
      const { rows } = await database.handle.query("select 1 from tasks where id = $1", [
        ids["old-succeeded"],
      ]);
      return rows.length === 0;
    }, 60_000);
    for (const kept of ["recent-succeeded", "old-failed"]) {
      const { rows } = await database.handle.query("select status from tasks where id = $1", [
        ids[kept],
      ]);
      expect(rows, kept).toHaveLength(1);
    }
  });

  it("accepts an idempotency key again once the task that used it was cleaned up", async () => {
    const type = uniqueType();
    const key = `key-${randomUUID()}`;
    const first = await enqueue(database.handle.db, { type, idempotencyKey: key });
    await database.handle.query(
      `update tasks set status = 'succeeded', completed_at = now() - interval '1 minute'
       where id = $1`,
      [first.id],
    );
    await startWorker(
      type,
      { async handle() {} },
      { retainSucceededMs: 30_000, cleanupIntervalMs: 0, pollIntervalMs: 50 },
    );
    await waitFor(async () => {
      const { rows } = await database.handle.query("select 1 from tasks where id = $1", [first.id]);
      return rows.length === 0;
    }, 60_000);
    const again = await enqueue(database.handle.db, { type, idempotencyKey: key });
    expect(again.created).toBe(true);
    expect(again.id).not.toBe(first.id);
  });

  it("keeps succeeded tasks for good when the retention is Infinity", async () => {
    const type = uniqueType();
    const old = await enqueue(database.handle.db, { type });
    await database.handle.query(
      `update tasks set status = 'succeeded', completed_at = now() - interval '400 days'
       where id = $1`,
      [old.id],
    );
    await startWorker(
      type,
      { async handle() {} },
      { retainSucceededMs: Number.POSITIVE_INFINITY, cleanupIntervalMs: 0, pollIntervalMs: 50 },
    );
    // Every claim cycle runs the cleanup first, so once a later task has run, it has had its
    // chance to delete the old one.
    const later = await enqueue(database.handle.db, { type });
    await waitFor(async () => (await taskRow(later.id)).status === "succeeded", 60_000);
    expect((await taskRow(old.id)).status).toBe("succeeded");
  });

  it("refuses a negative retention for succeeded tasks", () => {
    expect(
      () =>
        new TaskWorker({
          database: database.handle,
          registry: new TaskRegistry(),
          retainSucceededMs: -1,
        }),
    ).toThrow(expect.objectContaining({ code: "invalid_options" }));
  });

  it("succeeds on a retry after a transient failure", async () => {
    const type = uniqueType();
    let runs = 0;
    await startWorker(type, {
      async handle() {
        runs += 1;
        if (runs === 1) throw new Error("transient");
      },
    });
    const { id } = await enqueue(database.handle.db, { type });
    await waitFor(async () => (await taskRow(id)).status === "succeeded", 60_000);
    expect((await taskRow(id)).attempts).toBe(2);
  });

  it("fails a task with an invalid payload at once, without retrying", async () => {
    const type = uniqueType();
    let runs = 0;
    await startWorker(type, {
      schema: z.object({ count: z.number() }) as z.ZodType<unknown>,
      async handle() {
        runs += 1;
      },
    });
    const { id } = await enqueue(database.handle.db, { type, payload: { count: "three" } });
    await waitFor(async () => (await taskRow(id)).status === "failed", 60_000);
    const row = await taskRow(id);
    expect(row.attempts).toBe(1);
    expect(row.lastError).toMatch(/invalid/);
    expect(runs).toBe(0);
  });

  it("waits for a task's run_at before running it", async () => {
    const type = uniqueType();
    let ranAt = 0;
    await startWorker(type, {
      async handle() {
        ranAt = Date.now();
      },
    });
    const runAt = new Date(Date.now() + 300);
    const { id } = await enqueue(database.handle.db, { type, runAt });
    await waitFor(async () => (await taskRow(id)).status === "succeeded", 60_000);
    expect(ranAt).toBeGreaterThanOrEqual(runAt.getTime() - 20);
  });

  it("claims a task again when its lease has expired", async () => {
    const type = uniqueType();
    const { id } = await enqueue(database.handle.db, { type });
    // As if a worker claimed it and then died without heartbeating.
    await database.handle.query(
      `update tasks set status = 'running', locked_by = 'dead-worker', attempts = 1,
         locked_until = now() - interval '1 second' where id = $1`,
      [id],
    );
    const attempts: number[] = [];
    await startWorker(type, {
      async handle(_payload, context) {
        attempts.push(context.attempt);
      },
    });
    await waitFor(async () => (await taskRow(id)).status === "succeeded", 60_000);
    expect(attempts).toEqual([2]);
  });

  it("fails a task whose last allowed attempt lost its lease", async () => {
    const type = uniqueType();
    const { id } = await enqueue(database.handle.db, { type, maxAttempts: 1 });
    await database.handle.query(
      `update tasks set status = 'running', locked_by = 'dead-worker', attempts = 1,
         locked_until = now() - interval '1 second' where id = $1`,
      [id],
    );
    await startWorker(type, { async handle() {} });
    await waitFor(async () => (await taskRow(id)).status === "failed", 60_000);
    expect((await taskRow(id)).lastError).toMatch(/lease expired/);
  });

  it("keeps the lease by heartbeat while a task runs longer than the lease", async () => {
    const type = uniqueType();
    let runs = 0;
    const options = { leaseMs: 600, heartbeatMs: 100, pollIntervalMs: 50 };
    const slow: TaskDefinition<unknown> = {
      async handle() {
        runs += 1;
        await new Promise((resolve) => setTimeout(resolve, 1_500));
      },
    };
    await startWorker(type, slow, options);
    await startWorker(type, slow, options);
    const { id } = await enqueue(database.handle.db, { type });
    await waitFor(async () => (await taskRow(id)).status === "succeeded", 60_000);
    expect(runs).toBe(1);
    expect((await taskRow(id)).attempts).toBe(1);
  });

  it.each([
    { maxAttempts: 5, instead: "starting it a second time" },
    { maxAttempts: 1, instead: "failing it as abandoned" },
  ])(
    "keeps running a task whose lease expired while its heartbeat failed, instead of $instead",
    async ({ maxAttempts }) => {
      const type = uniqueType();
      // The database is reachable for everything but the heartbeat, which fails for the whole
      // run: the lease expires while the handler is still working.
      const heartbeatErrors: unknown[] = [];
      const flaky: DbHandle = {
        ...database.handle,
        async query(text, params) {
          if (/^\s*update tasks set locked_until/.test(text)) {
            throw new Error("heartbeat lost its connection");
          }
          return await database.handle.query(text, params);
        },
      };
      let running = 0;
      let mostAtOnce = 0;
      let runs = 0;
      let leaseExpiredDuringRun = false;
      const { id } = await enqueue(database.handle.db, { type, maxAttempts });
      await startWorker(
        type,
        {
          async handle() {
            running += 1;
            mostAtOnce = Math.max(mostAtOnce, running);
            await new Promise((resolve) => setTimeout(resolve, 900));
            const { rows } = await database.handle.query<{ expired: boolean }>(
              "select locked_until < now() as expired from tasks where id = $1",
              [id],
            );
            leaseExpiredDuringRun = rows[0]?.expired === true;
            await new Promise((resolve) => setTimeout(resolve, 300));
            running -= 1;
            runs += 1;
          },
        },
        {
          database: flaky,
          // A free slot, so the worker goes on claiming while the task runs.
          concurrency: 2,
          leaseMs: 300,
          heartbeatMs: 100,
          pollIntervalMs: 50,
          onError: (error) => heartbeatErrors.push(error),
        },
      );
      await waitFor(async () => (await taskRow(id)).status === "succeeded", 60_000);
      expect(leaseExpiredDuringRun).toBe(true);
      expect(heartbeatErrors.length).toBeGreaterThan(0);
      expect(mostAtOnce).toBe(1);
      expect(runs).toBe(1);
      expect((await taskRow(id)).attempts).toBe(1);
    },
  );

  it("claims a task it gave up again only after the abandoned handler has returned", async () => {
    const type = uniqueType();
    const starts: { attempt: number; at: number }[] = [];
    const ends: number[] = [];
    let running = 0;
    let mostAtOnce = 0;
    const { id } = await enqueue(database.handle.db, { type });
    await startWorker(
      type,
      {
        // Ignores its abort signal, as a careless handler might.
        async handle(_payload, context) {
          starts.push({ attempt: context.attempt, at: Date.now() });
          running += 1;
          mostAtOnce = Math.max(mostAtOnce, running);
          await new Promise((resolve) => setTimeout(resolve, context.attempt === 1 ? 1_500 : 10));
          running -= 1;
          ends.push(Date.now());
        },
      },
      { leaseMs: 5_000, heartbeatMs: 100, pollIntervalMs: 50 },
    );
    await waitFor(() => starts.length === 1);
    // Another worker claims the task and dies at once: the next heartbeat finds the lease gone
    // and aborts the handler, and the task is claimable again while that handler still runs.
    await database.handle.query(
      `update tasks set locked_by = 'other-worker', attempts = 2,
         locked_until = now() - interval '1 second' where id = $1`,
      [id],
    );
    await waitFor(async () => (await taskRow(id)).status === "succeeded", 60_000);
    expect(mostAtOnce).toBe(1);
    expect(starts.map((start) => start.attempt)).toEqual([1, 3]);
    expect(starts[1]!.at).toBeGreaterThanOrEqual(ends[0]!);
  });

  it("finishes a running task on graceful shutdown", async () => {
    const type = uniqueType();
    let started = false;
    const worker = await startWorker(type, {
      async handle() {
        started = true;
        await new Promise((resolve) => setTimeout(resolve, 300));
      },
    });
    const { id } = await enqueue(database.handle.db, { type });
    await waitFor(() => started);
    await worker.stop();
    expect((await taskRow(id)).status).toBe("succeeded");
  });

  it("releases a task that outlasts the shutdown timeout, without spending an attempt", async () => {
    const type = uniqueType();
    let aborted = false;
    const worker = await startWorker(
      type,
      {
        async handle(_payload, context) {
          await new Promise<void>((resolve) => {
            context.signal.addEventListener("abort", () => {
              aborted = true;
              resolve();
            });
          });
        },
      },
      { shutdownTimeoutMs: 100 },
    );
    const { id } = await enqueue(database.handle.db, { type });
    await waitFor(() => worker.activeCount === 1);
    await worker.stop();
    const row = await taskRow(id);
    expect(aborted).toBe(true);
    expect(row.status).toBe("pending");
    expect(row.attempts).toBe(0);
    expect(row.lockedBy).toBeNull();
  });

  it("runs many tasks exactly once across concurrent workers in one process", async () => {
    const type = uniqueType();
    const runs = new Map<number, number>();
    const definition: TaskDefinition<unknown> = {
      async handle(_payload, context) {
        runs.set(context.id, (runs.get(context.id) ?? 0) + 1);
      },
    };
    await startWorker(type, definition, { concurrency: 4, pollIntervalMs: 50 });
    await startWorker(type, definition, { concurrency: 4, pollIntervalMs: 50 });
    const ids: number[] = [];
    for (let index = 0; index < 40; index += 1) {
      ids.push((await enqueue(database.handle.db, { type, payload: { index } })).id);
    }
    await waitFor(async () => {
      const { rows } = await database.handle.query<{ count: number | string }>(
        "select count(*) as count from tasks where type = $1 and status = 'succeeded'",
        [type],
      );
      return Number(rows[0]?.count) === ids.length;
    }, 60_000);
    expect([...runs.keys()].sort((a, b) => a - b)).toEqual(ids);
    expect([...runs.values()].every((count) => count === 1)).toBe(true);
  });

  it("runs tasks sharing a serial key one at a time in enqueue order, across workers, while other keys run alongside", async () => {
    const type = uniqueType();
    const log: string[] = [];
    const running = new Map<string, number>();
    let overlap = false;
    let otherKeysAtOnce = 0;
    const definition: TaskDefinition<unknown> = {
      async handle(payload) {
        const { key, index } = payload as { key: string; index: number };
        const now = (running.get(key) ?? 0) + 1;
        running.set(key, now);
        if (now > 1) overlap = true;
        otherKeysAtOnce = Math.max(otherKeysAtOnce, [...running.values()].filter(Boolean).length);
        log.push(`${key}${index}`);
        await new Promise((resolveWait) => setTimeout(resolveWait, 15));
        running.set(key, now - 1);
      },
    };
    await startWorker(type, definition, { concurrency: 4, pollIntervalMs: 20 });
    await startWorker(type, definition, { concurrency: 4, pollIntervalMs: 20 });
    const ids: number[] = [];
    for (let index = 0; index < 8; index += 1) {
      for (const key of ["a", "b"]) {
        const payload = { key, index };
        ids.push((await enqueue(database.handle.db, { type, payload, serialKey: key })).id);
      }
    }
    await waitFor(async () => log.length === ids.length, 60_000);
    expect(overlap).toBe(false);
    for (const key of ["a", "b"]) {
      expect(log.filter((entry) => entry.startsWith(key))).toEqual(
        Array.from({ length: 8 }, (_, index) => `${key}${index}`),
      );
    }
    // Two keys, so two tasks could and did run at once.
    expect(otherKeysAtOnce).toBe(2);
  });

  it("holds a serial key's later tasks while an earlier one waits for its retry, and lets them run after it fails for good", async () => {
    const type = uniqueType();
    const log: string[] = [];
    await startWorker(
      type,
      {
        async handle(payload) {
          const { name } = payload as { name: string };
          log.push(name);
          if (name === "first") throw new Error("first broke");
        },
      },
      { concurrency: 4, pollIntervalMs: 20 },
    );
    const first = await enqueue(database.handle.db, {
      type,
      payload: { name: "first" },
      serialKey: "k",
      maxAttempts: 3,
    });
    await enqueue(database.handle.db, { type, payload: { name: "second" }, serialKey: "k" });
    await waitFor(async () => log.includes("second"), 60_000);
    expect(log).toEqual(["first", "first", "first", "second"]);
    expect((await taskRow(first.id)).status).toBe("failed");
  });

  /**
   * The statements a worker sends over 30 turns of the event loop, each with a statement of this
   * test's and a timer: a worker that waits sends none however slow the machine is, one that
   * polls without pause sends some in every turn. (PGlite answers within microtasks, so without
   * the timer a poll scheduled by setTimeout would never get its turn.)
   */
  async function statementsWhileIdle(sent: string[]): Promise<number> {
    const before = sent.length;
    for (let round = 0; round < 30; round += 1) {
      await database.handle.query("select 1");
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return sent.length - before;
  }

  function countingHandle(sent: string[]): DbHandle {
    return {
      ...database.handle,
      async query(text, params) {
        sent.push(text);
        return await database.handle.query(text, params);
      },
    };
  }

  /** A worker of `type` whose tasks block until released, counting its statements in `sent`. */
  async function startBlockingWorker(type: string, sent: string[], concurrency: number) {
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => {
      release = resolve;
    });
    const counts = { started: 0 };
    await startWorker(
      type,
      {
        async handle() {
          counts.started += 1;
          await blocked;
        },
      },
      { database: countingHandle(sent), concurrency, leaseMs: 600_000 },
    );
    return { counts, release };
  }

  /** Waits until the worker's claim cycle in flight has sent its last statement. */
  async function untilQuiet(sent: string[]): Promise<void> {
    await waitFor(async () => {
      const before = sent.length;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return sent.length === before;
    });
  }

  it("sends no statement while every slot is busy and other tasks wait", async () => {
    const type = uniqueType();
    const sent: string[] = [];
    const { counts, release } = await startBlockingWorker(type, sent, 1);
    await enqueue(database.handle.db, { type });
    await enqueue(database.handle.db, { type });
    await waitFor(() => counts.started === 1);
    // The second task's NOTIFY may still be on its way: let the cycle it starts end first.
    await untilQuiet(sent);
    expect(await statementsWhileIdle(sent)).toBe(0);
    release();
    await waitFor(() => counts.started === 2);
  });

  it("sends no statement while a free slot's only task waits for its serial key", async () => {
    const type = uniqueType();
    const sent: string[] = [];
    const { counts, release } = await startBlockingWorker(type, sent, 2);
    await enqueue(database.handle.db, { type, serialKey: "lane" });
    await enqueue(database.handle.db, { type, serialKey: "lane" });
    await waitFor(() => counts.started === 1);
    // The claim cycle that started it ends with a statement or two: wait until it has.
    await untilQuiet(sent);
    expect(await statementsWhileIdle(sent)).toBe(0);
    release();
    await waitFor(() => counts.started === 2);
  });

  it("sends three statements for a serial key's task: the claim, the settle with its notice, one claim after", async () => {
    const type = uniqueType();
    const sent: string[] = [];
    let finished = 0;
    await startWorker(
      type,
      {
        async handle() {
          finished += 1;
        },
      },
      { database: countingHandle(sent), retainSucceededMs: Number.POSITIVE_INFINITY },
    );
    // The worker's first claim cycle, at start, finds nothing.
    await waitFor(() => sent.length > 0);
    await untilQuiet(sent);
    sent.length = 0;
    const { id } = await enqueue(database.handle.db, { type, serialKey: "lane" });
    await waitFor(async () => (await taskRow(id)).status === "succeeded");
    expect(finished).toBe(1);
    // Its completion's notice reaches this worker too; it must not start another claim cycle.
    await untilQuiet(sent);
    expect(await statementsWhileIdle(sent)).toBe(0);
    expect(sent).toHaveLength(3);
  });

  it("refuses a second handler for the same task type", () => {
    const registry = new TaskRegistry().register("twice", { async handle() {} });
    expect(() => registry.register("twice", { async handle() {} })).toThrow(
      expect.objectContaining({ code: "task_type_duplicate" }),
    );
  });
});
