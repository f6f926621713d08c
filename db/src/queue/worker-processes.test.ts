import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  openTestDatabase,
  postgresSkipReason,
  postgresUrl,
  type TestDatabase,
  waitFor,
} from "../../test/database-fixtures.ts";
import { enqueue } from "./enqueue.ts";

const workerScript = fileURLToPath(new URL("../../test/queue-worker-process.ts", import.meta.url));

// PGlite lives inside one process, so workers in several processes need PostgreSQL.
const title = postgresUrl
  ? "worker processes on one PostgreSQL database"
  : `worker processes on one PostgreSQL database (skipped: ${postgresSkipReason})`;

describe.skipIf(!postgresUrl)(title, () => {
  let database: TestDatabase;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    database = await openTestDatabase("postgres");
    await database.handle.query(
      "create table queue_test_log (task_id bigint not null, worker_id text not null, phase text not null)",
    );
  });
  afterEach(async () => {
    await Promise.all(
      children.splice(0).map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill("SIGKILL");
        await once(child, "exit");
      }),
    );
  });
  afterAll(async () => {
    await database?.dispose();
  });

  async function spawnWorker(type: string, workerId: string, handlerMs: number, leaseMs: number) {
    const child = spawn(
      process.execPath,
      [
        "--conditions=source",
        workerScript,
        database.url!,
        type,
        workerId,
        String(handlerMs),
        String(leaseMs),
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    children.push(child);
    let output = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      output += chunk;
    });
    await waitFor(() => {
      if (child.exitCode !== null) throw new Error(`worker ${workerId} exited early`);
      return output.includes("ready");
    }, 60_000);
    return child;
  }

  async function enqueueMany(type: string, count: number): Promise<number[]> {
    return database.handle.db.transaction(async (tx) => {
      const ids: number[] = [];
      for (let index = 0; index < count; index += 1) {
        ids.push((await enqueue(tx, { type, payload: { index } })).id);
      }
      return ids;
    });
  }

  async function allSucceeded(type: string, count: number): Promise<boolean> {
    const { rows } = await database.handle.query<{ count: string }>(
      "select count(*) as count from tasks where type = $1 and status = 'succeeded'",
      [type],
    );
    return Number(rows[0]?.count) === count;
  }

  async function log(type: string) {
    const { rows } = await database.handle.query<{
      task_id: string;
      worker_id: string;
      phase: string;
    }>(
      `select l.task_id, l.worker_id, l.phase from queue_test_log l
       join tasks t on t.id = l.task_id where t.type = $1`,
      [type],
    );
    return rows.map((row) => ({ ...row, task_id: Number(row.task_id) }));
  }

  it("runs every task exactly once when no lease expires", async () => {
    const type = `multi.${randomUUID()}`;
    const first = await spawnWorker(type, "worker-a", 50, 10_000);
    const second = await spawnWorker(type, "worker-b", 50, 10_000);
    const ids = await enqueueMany(type, 60);
    await waitFor(() => allSucceeded(type, ids.length), 60_000);
    first.kill("SIGTERM");
    second.kill("SIGTERM");
    await Promise.all([once(first, "exit"), once(second, "exit")]);

    const entries = await log(type);
    const workerIds = new Set(entries.map((entry) => entry.worker_id));
    expect([...workerIds].sort()).toEqual(["worker-a", "worker-b"]);
    for (const id of ids) {
      const runs = entries.filter((entry) => entry.task_id === id);
      expect(runs.map((entry) => entry.phase).sort(), `task ${id}`).toEqual([
        "finished",
        "started",
      ]);
    }
    const { rows } = await database.handle.query<{ attempts: number }>(
      "select attempts from tasks where type = $1",
      [type],
    );
    expect(rows.every((row) => row.attempts === 1)).toBe(true);
  });

  it("loses no task when a worker is killed with SIGKILL mid-task", async () => {
    const type = `multi.${randomUUID()}`;
    const victim = await spawnWorker(type, "victim", 300, 1_000);
    const survivor = await spawnWorker(type, "survivor", 50, 1_000);
    const ids = await enqueueMany(type, 20);
    // Kill the victim while it is inside a handler: started, not finished.
    let interrupted: number[] = [];
    await waitFor(async () => {
      const entries = (await log(type)).filter((entry) => entry.worker_id === "victim");
      const finished = new Set(
        entries.filter((entry) => entry.phase === "finished").map((entry) => entry.task_id),
      );
      interrupted = entries
        .filter((entry) => entry.phase === "started" && !finished.has(entry.task_id))
        .map((entry) => entry.task_id);
      return interrupted.length > 0;
    }, 60_000);
    victim.kill("SIGKILL");
    await once(victim, "exit");

    await waitFor(() => allSucceeded(type, ids.length), 60_000);
    survivor.kill("SIGTERM");
    await once(survivor, "exit");

    const entries = await log(type);
    for (const id of ids) {
      const finished = entries.filter(
        (entry) => entry.task_id === id && entry.phase === "finished",
      );
      expect(finished.length, `task ${id}`).toBeGreaterThanOrEqual(1);
    }
    for (const id of interrupted) {
      expect(
        entries.some(
          (entry) =>
            entry.task_id === id && entry.worker_id === "survivor" && entry.phase === "finished",
        ),
        `interrupted task ${id} finished by the survivor`,
      ).toBe(true);
    }
  }, 90_000);
});
