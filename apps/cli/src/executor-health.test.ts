import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  checkExecutorHealth,
  EXECUTOR_HEALTH_FILE,
  EXECUTOR_HEALTH_MAX_AGE_MS,
  type ExecutorHealthFile,
  startExecutorHealthFile,
} from "./executor-health.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function dataDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), "deckhand-executor-health-"));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

async function healthFile(
  dataDir: string,
  overrides: { now?: () => number; runningJobs?: () => number } = {},
): Promise<ExecutorHealthFile> {
  const file = await startExecutorHealthFile({
    dataDir,
    executorId: "builder-1",
    runningJobs: overrides.runningJobs ?? (() => 2),
    redact: (text) => text.replaceAll("s3cret-pw", "[REDACTED]"),
    // Long: each test writes when it wants to, not when a timer fires.
    intervalMs: 60_000,
    ...(overrides.now ? { now: overrides.now } : {}),
  });
  cleanups.push(() => file.close());
  return file;
}

describe("the executor's health file", () => {
  it("is healthy while the executor writes it and reaches its queue", async () => {
    const dataDir = dataDirectory();
    await healthFile(dataDir);
    const written = JSON.parse(readFileSync(join(dataDir, EXECUTOR_HEALTH_FILE), "utf8"));
    expect(written).toMatchObject({
      executor: "builder-1",
      pid: process.pid,
      running_jobs: 2,
      queue: { ok: true, error: null },
    });
    expect(await checkExecutorHealth(dataDir)).toEqual({
      healthy: true,
      message: "executor builder-1 is healthy: 2 jobs running, queue reachable",
    });
  });

  it("reports a queue error until a write follows a poll that succeeded, and never the secret in it", async () => {
    const dataDir = dataDirectory();
    const file = await healthFile(dataDir);
    file.workerError(
      new Error("connect ECONNREFUSED: postgres://deckhand:s3cret-pw@db.internal:5432/deckhand"),
    );
    await file.write();
    const failing = await checkExecutorHealth(dataDir);
    expect(failing.healthy).toBe(false);
    expect(failing.message).toBe(
      "executor builder-1 cannot reach its queue: connect ECONNREFUSED: postgres://deckhand:[REDACTED]@db.internal:5432/deckhand",
    );
    expect(readFileSync(join(dataDir, EXECUTOR_HEALTH_FILE), "utf8")).not.toContain("s3cret-pw");
    // No error since the last write: the queue answered every poll in between.
    await file.write();
    expect((await checkExecutorHealth(dataDir)).healthy).toBe(true);
  });

  it("is unhealthy once the file is older than the limit (a stuck or vanished executor)", async () => {
    const dataDir = dataDirectory();
    let now = Date.parse("2026-01-01T00:00:00Z");
    await healthFile(dataDir, { now: () => now });
    const fresh = await checkExecutorHealth(dataDir, { now: now + EXECUTOR_HEALTH_MAX_AGE_MS });
    expect(fresh.healthy).toBe(true);
    now += EXECUTOR_HEALTH_MAX_AGE_MS + 1_000;
    const stale = await checkExecutorHealth(dataDir, { now });
    expect(stale).toEqual({
      healthy: false,
      message:
        "executor builder-1 last wrote its health 31 s ago (more than 30 s): it is stuck, or it stopped without removing the file",
    });
  });

  it("rewrites the file on its own every interval", async () => {
    const dataDir = dataDirectory();
    let jobs = 0;
    const file = await startExecutorHealthFile({
      dataDir,
      executorId: "builder-2",
      runningJobs: () => jobs,
      redact: (text) => text,
      intervalMs: 20,
    });
    cleanups.push(() => file.close());
    jobs = 3;
    const deadline = Date.now() + 10_000;
    while (
      !readFileSync(join(dataDir, EXECUTOR_HEALTH_FILE), "utf8").includes('"running_jobs":3')
    ) {
      if (Date.now() > deadline) throw new Error("the file was not rewritten");
      await new Promise((resolveWait) => setTimeout(resolveWait, 10));
    }
  });

  it("is removed when the executor stops, and then the check says it is not running", async () => {
    const dataDir = dataDirectory();
    const file = await healthFile(dataDir);
    await file.close();
    expect(existsSync(join(dataDir, EXECUTOR_HEALTH_FILE))).toBe(false);
    // A write the timer started before close() does not bring it back.
    await file.write();
    expect(existsSync(join(dataDir, EXECUTOR_HEALTH_FILE))).toBe(false);
    const verdict = await checkExecutorHealth(dataDir);
    expect(verdict.healthy).toBe(false);
    expect(verdict.message).toBe(
      `no executor-health.json in ${dataDir}: the executor is not running there, or not ready yet (pass its --data-dir)`,
    );
  });

  it("calls a file it cannot read as a health file unhealthy instead of throwing", async () => {
    const dataDir = dataDirectory();
    writeFileSync(join(dataDir, EXECUTOR_HEALTH_FILE), "{not json");
    expect(await checkExecutorHealth(dataDir)).toEqual({
      healthy: false,
      message: `${join(dataDir, EXECUTOR_HEALTH_FILE)} is not an executor health file; is another program writing it?`,
    });
  });
});
