import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { link, open, readFile, rename, unlink } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { z } from "zod";
import { DbError } from "./errors.ts";

/**
 * One process per embedded data directory: PGlite is a single-process database, and two
 * processes writing the same files lose one another's acknowledged writes. The process that
 * opens the directory holds `<dataDir>/deckhand.lock` (PostgreSQL itself leaves unknown files in
 * its data directory alone) until it closes the database.
 *
 * Why not a library: `proper-lockfile`, the usual choice on npm, decides staleness by the lock's
 * modification time, which its holder must keep touching from a timer (a holder whose event loop
 * stalls past the threshold loses its lock), and records no process id, so it cannot name the
 * holder in the error. Node has no flock(2). What is needed here is small: exclusive creation,
 * atomic replacement, and a liveness check by process id that a recycled pid cannot fool.
 *
 * How it stays race-free:
 * - Acquiring is `link(complete temp file, lock)`: it fails if the lock exists, and the lock is
 *   never seen half-written (an O_EXCL create followed by a write could be read empty).
 * - Each lock file carries a random nonce. A lock whose holder is dead may be replaced only by
 *   the process that exclusively creates `<lock>.takeover-<nonce>` — a compare-and-swap keyed on
 *   that exact lock. Of two starters that both find the same stale lock, one creates the takeover
 *   file; the other gets EEXIST and sees the winner as the holder. The winner re-reads the lock:
 *   if it still carries the stale nonce nobody else can have changed it (its holder is dead and
 *   every other starter lost the takeover), so `rename` replaces it in one step, with no moment
 *   at which the lock is missing. A starter that comes late and creates the takeover file after
 *   the winner removed it finds a different nonce on re-reading, and starts over.
 * - A takeover file is a lock of the same kind, so one left by a starter that died mid-takeover
 *   is itself taken over the same way, nested one level deeper. A starter that finds a live
 *   process holding the takeover file looks again a little later instead of failing at once:
 *   that process may be a late starter about to give up, not the one that will hold the lock.
 * - A holder is alive when its pid exists (EPERM counts: the process belongs to another user)
 *   and, where Linux tells us, the machine has not rebooted since (`boot_id`) and the process
 *   with that pid started when the holder did (`/proc/<pid>/stat`), so a pid recycled after a
 *   crash or a container restart is not mistaken for the holder. Elsewhere only the pid is
 *   checked, which errs on the side of refusing to start. A holder on another host (a shared
 *   filesystem) cannot be checked and counts as alive.
 */
export const LOCK_FILE_NAME = "deckhand.lock";

const LockRecordSchema = z.object({
  pid: z.number().int().positive(),
  hostname: z.string(),
  bootId: z.string().nullable(),
  startTime: z.string().nullable(),
  // Hex only: it becomes part of a file name (the takeover file's).
  nonce: z.string().regex(/^[0-9a-f]{1,64}$/),
  acquiredAt: z.string(),
});

export type LockRecord = z.infer<typeof LockRecordSchema>;

/** Who holds the lock of an embedded data directory; thrown with code `data_dir_locked`. */
export class DataDirLockedError extends DbError {
  readonly dataDir: string;
  readonly holder: { pid: number; hostname: string };

  constructor(dataDir: string, holder: { pid: number; hostname: string }) {
    const where = holder.hostname === hostname() ? "" : ` on host ${holder.hostname}`;
    super(
      "data_dir_locked",
      `The embedded database in ${dataDir} is in use by process ${holder.pid}${where}; stop that process or open another directory.`,
    );
    this.dataDir = dataDir;
    this.holder = holder;
  }
}

export interface DataDirLock {
  readonly path: string;
  /** Removes the lock if it is still this process's; safe to call more than once. */
  release(): Promise<void>;
}

// Nesting beyond this means starters keep dying mid-takeover; better to stop and say so.
const MAX_TAKEOVER_DEPTH = 3;
const MAX_ATTEMPTS = 5;
const TAKEOVER_RETRY_MS = 25;

export interface LockDataDirOptions {
  /**
   * Called once a lock's holder is found dead, before the takeover starts. Tests hold several
   * racing processes here until all of them have seen the same stale lock.
   */
  onStaleHolder?: (holder: LockRecord) => Promise<void>;
}

/** Takes the lock of the embedded data directory `dataDir`, or throws DataDirLockedError. */
export async function lockDataDir(
  dataDir: string,
  options: LockDataDirOptions = {},
): Promise<DataDirLock> {
  const path = join(dataDir, LOCK_FILE_NAME);
  const record = await acquire(path, dataDir, 0, options);
  let released = false;
  return {
    path,
    async release() {
      if (released) return;
      released = true;
      // Only this process's own lock: after a takeover the file is someone else's.
      // A file someone replaced with something unreadable is not ours either: leave it.
      const current = await readRecord(path, dataDir).catch(() => null);
      if (current?.nonce === record.nonce) await unlink(path).catch(ignoreMissing);
    },
  };
}

async function acquire(
  path: string,
  dataDir: string,
  depth: number,
  options: LockDataDirOptions,
): Promise<LockRecord> {
  let taker: { pid: number; hostname: string } | null = null;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const record = newRecord();
    if (await createExclusively(path, record)) return record;
    const holder = await readRecord(path, dataDir);
    // Released between our attempt and the read: try again.
    if (holder === null) continue;
    if (holderIsAlive(holder)) throw new DataDirLockedError(dataDir, holder);
    if (depth >= MAX_TAKEOVER_DEPTH) {
      throw new DbError(
        "data_dir_locked",
        `The embedded database in ${dataDir} has a lock that could not be taken over (${path}); make sure no deckhand process uses it, then delete that file.`,
      );
    }
    await options.onStaleHolder?.(holder);
    const takeoverPath = `${path}.takeover-${holder.nonce}`;
    let takeover: LockRecord;
    try {
      takeover = await acquire(takeoverPath, dataDir, depth + 1, options);
    } catch (error) {
      if (!(error instanceof DataDirLockedError)) throw error;
      // Another live starter holds the takeover file. It is either about to hold the lock or
      // (having come late) about to find the lock changed and give up; a takeover takes
      // milliseconds, so look again shortly rather than name a starter that may not win.
      taker = error.holder;
      await delay(TAKEOVER_RETRY_MS * (attempt + 1));
      continue;
    }
    try {
      const current = await readRecord(path, dataDir);
      if (current?.nonce !== holder.nonce) continue;
      await replace(path, record);
      return record;
    } finally {
      const stillOurs = (await readRecord(takeoverPath, dataDir))?.nonce === takeover.nonce;
      if (stillOurs) await unlink(takeoverPath).catch(ignoreMissing);
    }
  }
  if (taker !== null) throw new DataDirLockedError(dataDir, taker);
  throw new DbError(
    "data_dir_locked",
    `The embedded database in ${dataDir} changed hands too often while starting; try again.`,
  );
}

function newRecord(): LockRecord {
  return {
    pid: process.pid,
    hostname: hostname(),
    bootId: bootId(),
    startTime: processStartTime(process.pid),
    nonce: randomBytes(12).toString("hex"),
    acquiredAt: new Date().toISOString(),
  };
}

/** Writes the record to a private file, flushed, so that what appears under `target` is whole. */
async function writeTemporary(target: string, record: LockRecord): Promise<string> {
  const temporary = `${target}.${record.nonce}.tmp`;
  // "wx": the temporary name is ours alone (the nonce is random); never reuse someone's file.
  const handle = await open(temporary, "wx", 0o644);
  try {
    await handle.writeFile(`${JSON.stringify(record)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return temporary;
}

async function createExclusively(path: string, record: LockRecord): Promise<boolean> {
  const temporary = await writeTemporary(path, record);
  try {
    await link(temporary, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    await unlink(temporary).catch(ignoreMissing);
  }
}

async function replace(path: string, record: LockRecord): Promise<void> {
  const temporary = await writeTemporary(path, record);
  try {
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(ignoreMissing);
    throw error;
  }
}

async function readRecord(path: string, dataDir: string): Promise<LockRecord | null> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const result = LockRecordSchema.safeParse(parsed);
  if (!result.success) {
    // Deckhand writes whole, flushed files only, so this one was written by something else.
    throw new DbError(
      "data_dir_locked",
      `The embedded database in ${dataDir} has a lock file deckhand cannot read (${path}); make sure no deckhand process uses the directory, then delete that file.`,
    );
  }
  return result.data;
}

function holderIsAlive(holder: LockRecord): boolean {
  if (holder.hostname !== hostname()) return true;
  const currentBootId = bootId();
  if (holder.bootId !== null && currentBootId !== null && holder.bootId !== currentBootId) {
    return false;
  }
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
    // EPERM: the process exists but belongs to someone else; fall through to the start time.
  }
  if (holder.startTime !== null) {
    const startTime = processStartTime(holder.pid);
    if (startTime !== null && startTime !== holder.startTime) return false;
  }
  return true;
}

/** This boot's identifier on Linux; null where the system does not expose one. */
function bootId(): string | null {
  return readProcFile("/proc/sys/kernel/random/boot_id")?.trim() || null;
}

/**
 * When the process started, in clock ticks since boot (field 22 of `/proc/<pid>/stat`); null
 * where there is no /proc or the process is gone. Together with the boot id it tells a pid's
 * current process from an earlier one that had the same pid.
 */
export function processStartTime(pid: number): string | null {
  const stat = readProcFile(`/proc/${pid}/stat`);
  if (stat === null) return null;
  // The command name (field 2) is in parentheses and may contain spaces and parentheses.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields from the state (field 3) on; the start time is field 22.
  return fields[22 - 3] ?? null;
}

function readProcFile(path: string): string | null {
  try {
    // Synchronous: /proc files are generated in memory and read in one call.
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

function ignoreMissing(error: unknown): void {
  if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
}
