import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { postgresSkipReason, postgresUrl } from "../test/database-fixtures.ts";
import { createDb, type DbHandle } from "./client.ts";
import {
  DataDirLockedError,
  LOCK_FILE_NAME,
  type LockRecord,
  lockDataDir,
  processStartTime,
} from "./data-dir-lock.ts";
import { DbError } from "./errors.ts";

const lockProcessEntry = fileURLToPath(
  new URL("../test/data-dir-lock-process.ts", import.meta.url),
);
const dbRoot = fileURLToPath(new URL("..", import.meta.url));
// Linux tells a pid's current process from an earlier one with the same pid; elsewhere not.
const hasProc = existsSync("/proc/self/stat") && existsSync("/proc/sys/kernel/random/boot_id");

// The nonce of every lock these tests write by hand.
const STALE_NONCE = "0123456789abcdef";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), "deckhand-db-lock-"));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

interface LockProcess {
  child: ChildProcess;
  /** Resolves with the next JSON line the process prints. */
  nextLine(): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
}

function startLockProcess(mode: "open" | "race", dataDir: string): LockProcess {
  const child = spawn(process.execPath, ["--conditions=source", lockProcessEntry, mode, dataDir], {
    cwd: dbRoot,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = once(child, "exit").then(([code]) => code as number | null);
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await exited;
    }
  });
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  let pending = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    pending += chunk.toString("utf8");
    const complete = pending.split("\n");
    pending = complete.pop() ?? "";
    for (const line of complete) {
      const waiter = waiting.shift();
      if (waiter) waiter(line);
      else lines.push(line);
    }
  });
  return {
    child,
    exited,
    async nextLine() {
      const line =
        lines.shift() ??
        (await Promise.race([
          new Promise<string>((resolveLine) => waiting.push(resolveLine)),
          exited.then((code) => {
            throw new Error(`lock process exited (${code}) before printing a line`);
          }),
        ]));
      return JSON.parse(line) as Record<string, unknown>;
    },
  };
}

function readLock(dataDir: string): LockRecord {
  return JSON.parse(readFileSync(join(dataDir, LOCK_FILE_NAME), "utf8")) as LockRecord;
}

function writeLock(dataDir: string, overrides: Partial<LockRecord>): void {
  const record: LockRecord = {
    pid: process.pid,
    hostname: hostname(),
    bootId: hasProc ? readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() : null,
    startTime: processStartTime(process.pid),
    nonce: STALE_NONCE,
    acquiredAt: new Date(0).toISOString(),
    ...overrides,
  };
  writeFileSync(join(dataDir, LOCK_FILE_NAME), `${JSON.stringify(record)}\n`);
}

/** The pid of a process that has exited (and been reaped). */
function deadPid(): number {
  const pid = Number(
    execFileSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
      encoding: "utf8",
    }),
  );
  expect(() => process.kill(pid, 0)).toThrow();
  return pid;
}

describe("embedded data directory lock", () => {
  it("refuses a second process on an open data directory, naming the holder's pid", async () => {
    const dataDir = temporaryDirectory();
    const holder = await createDb({ dataDir, migrate: false });
    cleanups.push(() => holder.close());

    const second = startLockProcess("open", dataDir);

    expect(await second.nextLine()).toEqual({ code: "data_dir_locked", holderPid: process.pid });
    expect(await second.exited).toBe(2);
  });

  it("refuses a second handle in the same process too", async () => {
    const dataDir = temporaryDirectory();
    const holder = await createDb({ dataDir, migrate: false });
    cleanups.push(() => holder.close());

    const error = await createDb({ dataDir, migrate: false }).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(DataDirLockedError);
    expect(error).toBeInstanceOf(DbError);
    expect(error).toMatchObject({
      code: "data_dir_locked",
      dataDir,
      holder: { pid: process.pid, hostname: hostname() },
      message: `The embedded database in ${dataDir} is in use by process ${process.pid}; stop that process or open another directory.`,
    });
  });

  it("releases the lock when the database is closed, so another process can open it", async () => {
    const dataDir = temporaryDirectory();
    const first = await createDb({ dataDir, migrate: false });
    await first.close();
    expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(false);

    const second = startLockProcess("open", dataDir);
    expect(await second.nextLine()).toEqual({ opened: true });
    expect(readLock(dataDir).pid).toBe(second.child.pid);
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
    expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(false);
  });

  it("takes over a lock whose process is gone", async () => {
    const dataDir = temporaryDirectory();
    writeLock(dataDir, { pid: deadPid(), startTime: null });

    const lock = await lockDataDir(dataDir);
    cleanups.push(() => lock.release());

    expect(readLock(dataDir)).toMatchObject({ pid: process.pid });
    expect(readLock(dataDir).nonce).not.toBe(STALE_NONCE);
  });

  it.runIf(hasProc)("takes over a lock whose pid now belongs to a later process", async () => {
    const dataDir = temporaryDirectory();
    // Our own pid, but a start time it never had: the holder died and its pid was reused.
    writeLock(dataDir, { startTime: "1" });

    const lock = await lockDataDir(dataDir);
    cleanups.push(() => lock.release());

    expect(readLock(dataDir)).toMatchObject({ pid: process.pid });
    expect(readLock(dataDir).startTime).toBe(processStartTime(process.pid));
  });

  it.runIf(hasProc)("takes over a lock written before the machine rebooted", async () => {
    const dataDir = temporaryDirectory();
    writeLock(dataDir, { bootId: "00000000-0000-0000-0000-000000000000" });

    const lock = await lockDataDir(dataDir);
    cleanups.push(() => lock.release());

    expect(readLock(dataDir).nonce).not.toBe(STALE_NONCE);
  });

  it("counts a lock held on another host as held, since its process cannot be checked", async () => {
    const dataDir = temporaryDirectory();
    writeLock(dataDir, { pid: deadPid(), hostname: `${hostname()}-elsewhere` });

    await expect(lockDataDir(dataDir)).rejects.toMatchObject({
      code: "data_dir_locked",
      message: expect.stringContaining(`on host ${hostname()}-elsewhere`),
    });
    expect(readLock(dataDir).nonce).toBe(STALE_NONCE);
  });

  it("refuses a lock file it cannot read, saying which file to delete", async () => {
    const dataDir = temporaryDirectory();
    writeFileSync(join(dataDir, LOCK_FILE_NAME), "not json");

    await expect(lockDataDir(dataDir)).rejects.toMatchObject({
      code: "data_dir_locked",
      message: expect.stringContaining(`then delete that file`),
    });
  });

  it("lets exactly one of several processes racing for a stale lock take it over", async () => {
    for (let round = 0; round < 3; round++) {
      const dataDir = temporaryDirectory();
      writeLock(dataDir, { pid: deadPid(), startTime: null });
      const racers = Array.from({ length: 4 }, () => startLockProcess("race", dataDir));
      // Every racer has read the stale lock and decided its holder is dead before any of them
      // takes it over: the moment a naive unlink-and-create lets two of them in.
      for (const racer of racers) expect(await racer.nextLine()).toEqual({ stale: true });

      for (const racer of racers) racer.child.stdin?.write("go\n");
      const results = await Promise.all(racers.map((racer) => racer.nextLine()));

      const winners = racers.filter((_, index) => results[index]?.acquired === true);
      expect(winners).toHaveLength(1);
      const winnerPid = winners[0]?.child.pid;
      expect(readLock(dataDir).pid).toBe(winnerPid);
      for (const [index, racer] of racers.entries()) {
        if (racer === winners[0]) continue;
        expect(results[index]).toEqual({ code: "data_dir_locked", holderPid: winnerPid });
        expect(await racer.exited).toBe(2);
      }
      // No takeover file is left behind.
      expect(readdirSync(dataDir).filter((name) => name !== LOCK_FILE_NAME)).toEqual([]);
      winners[0]?.child.kill("SIGTERM");
      expect(await winners[0]?.exited).toBe(0);
    }
  });
});

describe.skipIf(!postgresUrl)("PostgreSQL", () => {
  it("needs no lock: several handles on one database open side by side", async () => {
    if (!postgresUrl) throw new Error(postgresSkipReason);
    const dataDir = temporaryDirectory();
    const handles: DbHandle[] = [];
    for (let index = 0; index < 2; index++) {
      // A data directory is ignored with a URL; in particular nothing is locked in it.
      handles.push(await createDb({ databaseUrl: postgresUrl, dataDir, migrate: false }));
    }
    cleanups.push(async () => {
      for (const handle of handles) await handle.close();
    });
    for (const handle of handles)
      expect((await handle.query("select 1 as one")).rows).toHaveLength(1);
    expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(false);
  });
});
