import { createHash, randomBytes } from "node:crypto";
import { closeSync, constants, fstatSync, openSync } from "node:fs";
import { lstat, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import type pg from "pg";
import { type DataDirLock, LOCK_FILE_NAME, lockDataDir } from "./data-dir-lock.ts";
import { DbError } from "./errors.ts";
import { extractTar } from "./extract-tar.ts";
import { PgliteTextTypes } from "./pglite-text-types.ts";
import * as schema from "./schema/index.ts";

export type Schema = typeof schema;

/** The drizzle database, the same type whichever driver is underneath. */
export type Database = PgDatabase<PgQueryResultHKT, Schema>;

/** A transaction handed to `db.transaction(async (tx) => ...)`. */
export type Transaction = Parameters<Parameters<Database["transaction"]>[0]>[0];

/** Anything a statement can run on: the database itself or an open transaction. */
export type Executor = Database | Transaction;

export type DbKind = "pglite" | "postgres";

export interface QueryResult<Row> {
  rows: Row[];
  rowCount: number;
}

export type NotificationHandler = (payload: string) => void;

export interface CreateDbOptions {
  /**
   * Where embedded PGlite keeps its files; `memory://` keeps everything in memory. Used only
   * when no `databaseUrl` is given. Defaults to `memory://`.
   */
  dataDir?: string;
  /** A PostgreSQL connection string; when present, PostgreSQL is used instead of PGlite. */
  databaseUrl?: string;
  /** Apply the checked-in migrations before returning. Defaults to true. */
  migrate?: boolean;
  /** Largest number of pooled PostgreSQL connections. Defaults to 10. */
  poolSize?: number;
}

export interface DbHandle {
  db: Database;
  kind: DbKind;
  /** Runs one SQL statement with `$1`-style parameters. */
  query<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<QueryResult<Row>>;
  /** Calls `handler` for each NOTIFY on `channel` until the returned function is called. */
  listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>>;
  notify(channel: string, payload: string): Promise<void>;
  /** Applies the checked-in migrations that have not been applied yet. Safe to call again. */
  migrate(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The checked-in migrations folder. Resolved from this module so it works from `src/` (sources
 * run directly) and from `dist/` (the published bundle); both sit next to `migrations/`.
 */
export const migrationsFolder = fileURLToPath(new URL("../migrations", import.meta.url));

interface LastMigration {
  created_at: string | number | null;
}

let latestMigrationMillis: Promise<number> | null = null;

/** The `when` of the journal's last migration: what drizzle records as the last one applied. */
function latestMigration(): Promise<number> {
  latestMigrationMillis ??= readFile(join(migrationsFolder, "meta", "_journal.json"), "utf8").then(
    (text) => {
      const journal = JSON.parse(text) as { entries: { when: number }[] };
      return Math.max(...journal.entries.map((entry) => entry.when));
    },
  );
  return latestMigrationMillis;
}

/**
 * Whether the last migration drizzle recorded is the journal's last one, in one query: drizzle's
 * own check (create its schema and table if missing, read the last row, an empty transaction) is
 * five statements, a good part of opening an existing database. Any doubt (no table yet, an
 * unreadable journal) answers no, and drizzle decides as before.
 */
async function migrationsUpToDate(
  query: (text: string) => Promise<{ rows: LastMigration[] }>,
): Promise<boolean> {
  try {
    const [latest, result] = await Promise.all([
      latestMigration(),
      query("select created_at from drizzle.__drizzle_migrations order by created_at desc limit 1"),
    ]);
    const applied = Number(result.rows[0]?.created_at ?? Number.NaN);
    return applied >= latest;
  } catch {
    return false;
  }
}

// Any constant works; it only has to be the same in every process that migrates this database.
const MIGRATION_LOCK_KEY = 7_420_001;

// Channel names are interpolated into LISTEN; keep them to plain identifiers.
const CHANNEL_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

function checkChannel(channel: string): void {
  if (!CHANNEL_PATTERN.test(channel)) {
    throw new DbError(
      "invalid_channel",
      `Notification channel "${channel}" is not a lower-case identifier (letters, digits, _).`,
    );
  }
}

/**
 * Opens Deckhand's database: PostgreSQL through a connection pool when `databaseUrl` is given,
 * otherwise embedded PGlite in `dataDir`. Migrations are applied before it returns unless
 * `migrate: false`.
 */
export async function createDb(options: CreateDbOptions = {}): Promise<DbHandle> {
  const dataDir = options.dataDir ?? "memory://";
  const useTemplate = !options.databaseUrl && (options.migrate ?? true);
  const handle = options.databaseUrl
    ? await openPostgres(options.databaseUrl, options.poolSize ?? 10)
    : await openPglite(dataDir, useTemplate);
  if (options.migrate ?? true) {
    try {
      await handle.migrate();
    } catch (error) {
      await handle.close().catch(() => {});
      throw error;
    }
  }
  return handle;
}

/**
 * PostgreSQL's settings inside PGlite, on top of PGlite's own. `shared_buffers` is the one that
 * weighs: Emscripten's anonymous `mmap` allocates and zeroes PostgreSQL's whole shared memory at
 * start, so every page of it is resident from the first second and, WebAssembly memory never
 * shrinking, for the life of the process. PostgreSQL's default of 128 MB (with 4 MB of WAL
 * buffers taken from it) was 125 MiB of the 300 MiB an idle database held. Deckhand's working set
 * is a few megabytes of rows; a page not in the buffers is one read from the data directory
 * (the operating system's page cache, or memory for `memory://`), which is what PostgreSQL
 * itself does past its buffers.
 */
const PGLITE_SETTINGS: Readonly<Record<string, string>> = {
  shared_buffers: "16MB",
};

/** PGlite's start parameters with Deckhand's settings added. */
function pgliteStartParams(): string[] {
  return [
    ...PGlite.defaultStartParams,
    ...Object.entries(PGLITE_SETTINGS).flatMap(([name, value]) => ["-c", `${name}=${value}`]),
  ];
}

/** Opens PGlite with Deckhand's settings; `dataDir` as PGlite takes it. */
function openPgliteClient(options: { dataDir?: string; loadDataDir?: Blob } = {}): Promise<PGlite> {
  return PGlite.create({ ...options, startParams: pgliteStartParams() });
}

let memoryTemplate: Promise<Blob> | null = null;

/**
 * An empty database with every migration applied, dumped once per process: each later
 * `memory://` database loads it (≈0.4 s) instead of running initdb and all migrations again
 * (≈2–3 s). Tests and in-process servers open many of them. Migrating after the load still
 * runs, and finds nothing to do.
 */
function migratedMemoryTemplate(): Promise<Blob> {
  if (memoryTemplate === null) {
    const made = (async () => {
      const cached = await readCachedTemplate();
      if (cached !== null) return cached;
      const client = await openPgliteClient();
      try {
        await migratePglite(drizzlePglite(client), { migrationsFolder });
        // The dump is of a running database, so every copy of it starts with crash recovery,
        // which replays the WAL from the last checkpoint: without this one, all of initdb's
        // and the migrations' (about 1.5 MB of records, 0.15 s of CPU and the WebAssembly code
        // of redo kept compiled in every new database's process). After it, nothing is left to
        // replay.
        await client.exec("checkpoint");
        const dump = await client.dumpDataDir("none");
        await writeCachedTemplate(dump);
        return dump;
      } finally {
        await client.close();
      }
    })();
    memoryTemplate = made;
    // A failed template is not kept: the next database tries again.
    made.catch(() => {
      if (memoryTemplate === made) memoryTemplate = null;
    });
  }
  return memoryTemplate;
}

/**
 * Where the template is kept between processes: named by a hash of every migration, so a changed
 * migration makes a new one (a template PGlite cannot load, after an upgrade, is made again).
 * Test runs open hundreds of `memory://` databases in many processes, and every standalone
 * `deckhand batch preview` on a new data directory opens one on disk; each then loads the file
 * (≈0.4 s) instead of running initdb and every migration once more (≈3 s, and over 10 s on a
 * busy machine).
 */
const TEMPLATE_FORMAT = "checkpointed";

async function templateCachePath(): Promise<string> {
  const hash = createHash("sha256");
  // How the template is made, beside what is in it: a template made before a checkpoint was
  // taken ahead of the dump is not used again.
  hash.update(TEMPLATE_FORMAT);
  for (const name of (await readdir(migrationsFolder, { recursive: true })).sort()) {
    const path = join(migrationsFolder, name);
    if ((await stat(path)).isFile()) hash.update(name).update(await readFile(path));
  }
  return join(tmpdir(), `deckhand-pglite-template-${hash.digest("hex").slice(0, 16)}.tar`);
}

async function readCachedTemplate(): Promise<Blob | null> {
  try {
    const path = await templateCachePath();
    // The temporary directory is shared: a file another user put there under the same name is
    // not ours to load (it would become this user's database), nor one others may rewrite.
    const status = await lstat(path);
    if (!templateFileIsOurs(status)) return null;
    return new Blob([await readFile(path)]);
  } catch {
    return null;
  }
}

/** A regular file of this process's user that no one else may write. */
export function templateFileIsOurs(status: {
  uid: number;
  mode: number;
  isFile(): boolean;
}): boolean {
  const ownUser = process.getuid?.();
  return (
    status.isFile() &&
    (ownUser === undefined || status.uid === ownUser) &&
    (status.mode & 0o022) === 0
  );
}

async function forgetCachedTemplate(): Promise<void> {
  memoryTemplate = null;
  await rm(await templateCachePath(), { force: true }).catch(() => {});
}

/** Written beside its name and renamed into place, so no process ever reads half a file. */
async function writeCachedTemplate(dump: Blob): Promise<void> {
  try {
    const path = await templateCachePath();
    const partial = `${path}.${process.pid}.${randomBytes(4).toString("hex")}`;
    await writeFile(partial, Buffer.from(await dump.arrayBuffer()), { mode: 0o600 });
    await rename(partial, path);
  } catch {
    // Without the cache every process makes its own template, as before.
  }
}

/**
 * PGlite on `dataDir`: a new database (in memory, or in a directory holding nothing but our
 * lock) starts as a copy of the migrated template, an existing one is opened as it is.
 */
async function createPglite(
  dataDir: string,
  directory: string | null,
  useTemplate: boolean,
): Promise<PGlite> {
  const fresh =
    useTemplate &&
    (directory === null ? dataDir === "memory://" : await holdsOnlyTheLock(directory));
  if (fresh && directory !== null && (await extractCachedTemplate(directory))) {
    try {
      return await openPgliteClient({ dataDir });
    } catch {
      // A template this PGlite cannot open (made by another version): as below.
      await forgetCachedTemplate();
      await removeAllButTheLock(directory);
      return openPgliteClient({ dataDir });
    }
  }
  // Without a template the database is made the long way, and reports its own error.
  const template = fresh ? await migratedMemoryTemplate().catch(() => undefined) : undefined;
  if (template === undefined) return openPgliteClient({ dataDir });
  try {
    return await openPgliteClient(
      directory === null ? { loadDataDir: template } : { dataDir, loadDataDir: template },
    );
  } catch {
    // A cached template this PGlite cannot load: forget it, clear what the load left in the
    // directory (it held nothing else), and make the database anew.
    await forgetCachedTemplate();
    if (directory !== null) await removeAllButTheLock(directory);
    return openPgliteClient({ dataDir });
  }
}

/**
 * Writes the cached template into a new data directory file by file, for PGlite to open as an
 * existing database. Handing the same file to PGlite's `loadDataDir` reads it whole three times
 * over (file, blob, untar): about 120 MiB of array buffers that an idle server kept until the
 * collector happened to run, on top of the blob kept for the next database. False, with the
 * directory left holding only the lock, when there is no cache file of ours or it does not
 * extract; the database is then made from the template in memory as before.
 */
async function extractCachedTemplate(directory: string): Promise<boolean> {
  let archive: number;
  try {
    archive = openSync(await templateCachePath(), constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return false;
  }
  try {
    if (!templateFileIsOurs(fstatSync(archive))) return false;
    extractTar(archive, directory);
    return true;
  } catch {
    await removeAllButTheLock(directory);
    return false;
  } finally {
    closeSync(archive);
  }
}

async function holdsOnlyTheLock(directory: string): Promise<boolean> {
  const entries = await readdir(directory);
  return entries.every((name) => name.startsWith(LOCK_FILE_NAME));
}

async function removeAllButTheLock(directory: string): Promise<void> {
  for (const name of await readdir(directory)) {
    if (!name.startsWith(LOCK_FILE_NAME)) {
      await rm(join(directory, name), { recursive: true, force: true });
    }
  }
}

/** The directory PGlite keeps its files in; null for `memory://` and other non-file storage. */
function fileSystemDirectory(dataDir: string): string | null {
  if (dataDir.startsWith("file://")) return resolve(dataDir.slice("file://".length));
  return dataDir.includes("://") ? null : resolve(dataDir);
}

async function openPglite(dataDir: string, useTemplate: boolean): Promise<DbHandle> {
  const directory = fileSystemDirectory(dataDir);
  let lock: DataDirLock | null = null;
  let client: PGlite;
  try {
    if (directory !== null) {
      await mkdir(directory, { recursive: true });
      // Before PGlite touches a file: a second process must not even run recovery on it.
      lock = await lockDataDir(directory);
    }
    client = await createPglite(dataDir, directory, useTemplate);
  } catch (error) {
    await lock?.release().catch(() => {});
    if (error instanceof DbError) throw error;
    throw new DbError("connection_failed", `Could not open the embedded database in ${dataDir}.`, {
      cause: error,
    });
  }
  const textTypes = new PgliteTextTypes(client);
  const db = drizzlePglite({
    client: textTypes.forDrizzle as PGlite,
    schema,
  }) as unknown as Database & { $client: unknown };
  // The database itself, not drizzle's view of it, for code that looks at what it is sent.
  db.$client = client;
  let closed = false;
  return {
    db,
    kind: "pglite",
    async query<Row>(text: string, params: unknown[] = []) {
      const result = await client.query<Row>(text, params, textTypes.rawOptions);
      return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length };
    },
    async listen(channel, handler) {
      checkChannel(channel);
      const unsubscribe = await client.listen(channel, handler);
      return async () => {
        if (!closed) await unsubscribe();
      };
    },
    async notify(channel, payload) {
      checkChannel(channel);
      await client.query("select pg_notify($1, $2)", [channel, payload]);
    },
    async migrate() {
      try {
        if (await migrationsUpToDate((text) => client.query<LastMigration>(text))) return;
        await migratePglite(drizzlePglite(client), { migrationsFolder });
      } catch (error) {
        throw new DbError("migration_failed", "Applying database migrations failed.", {
          cause: error,
        });
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      try {
        await client.close();
      } finally {
        await lock?.release();
      }
    },
  };
}

/**
 * PostgreSQL's driver and drizzle's over it, loaded only by a process that uses PostgreSQL: an
 * embedded database (a standalone `deckhand batch preview`) does not load them.
 */
async function postgresModules() {
  const [driver, drizzle, migrator] = await Promise.all([
    import("pg"),
    import("drizzle-orm/node-postgres"),
    import("drizzle-orm/node-postgres/migrator"),
  ]);
  return { pg: driver.default, drizzle: drizzle.drizzle, migrate: migrator.migrate };
}

async function openPostgres(databaseUrl: string, poolSize: number): Promise<DbHandle> {
  const {
    pg,
    drizzle: drizzleNodePostgres,
    migrate: migrateNodePostgres,
  } = await postgresModules();
  const pool = new pg.Pool({ connectionString: databaseUrl, max: poolSize });
  // An idle pooled connection dropped by the server emits here; without a listener it would
  // crash the process. The pool replaces the connection on next use.
  pool.on("error", () => {});
  try {
    const client = await pool.connect();
    client.release();
  } catch (error) {
    await pool.end().catch(() => {});
    throw new DbError("connection_failed", "Could not connect to PostgreSQL at the given URL.", {
      cause: error,
    });
  }
  const db = drizzleNodePostgres(pool, { schema }) as unknown as Database;
  const notifications = new PostgresNotifications(databaseUrl, pg);
  let closed = false;
  return {
    db,
    kind: "postgres",
    async query<Row>(text: string, params: unknown[] = []) {
      const result = await pool.query(text, params);
      return { rows: result.rows as Row[], rowCount: result.rowCount ?? result.rows.length };
    },
    async listen(channel, handler) {
      checkChannel(channel);
      return await notifications.listen(channel, handler);
    },
    async notify(channel, payload) {
      checkChannel(channel);
      await pool.query("select pg_notify($1, $2)", [channel, payload]);
    },
    async migrate() {
      // Replicas starting together must not apply the same migration twice: serialise them
      // with a session advisory lock held on the connection that migrates.
      if (await migrationsUpToDate((text) => pool.query<LastMigration>(text))) return;
      const client = await pool.connect();
      try {
        await client.query("select pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
        try {
          await migrateNodePostgres(drizzleNodePostgres(client), { migrationsFolder });
        } finally {
          await client.query("select pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]);
        }
      } catch (error) {
        throw new DbError("migration_failed", "Applying database migrations failed.", {
          cause: error,
        });
      } finally {
        client.release();
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await notifications.close();
      await pool.end();
    },
  };
}

const RECONNECT_DELAY_MS = 1_000;

/**
 * LISTEN needs one connection that stays open, so notifications get their own client outside
 * the pool. When that connection drops it is reopened and every channel listened to again;
 * notifications sent in between are lost, which is why the queue also polls.
 */
class PostgresNotifications {
  readonly #databaseUrl: string;
  readonly #pg: typeof pg;
  readonly #handlers = new Map<string, Set<NotificationHandler>>();
  #client: Promise<pg.Client> | undefined;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(databaseUrl: string, driver: typeof pg) {
    this.#databaseUrl = databaseUrl;
    this.#pg = driver;
  }

  async listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>> {
    if (this.#closed) throw new DbError("closed", "The database handle is closed.");
    let handlers = this.#handlers.get(channel);
    const first = !handlers;
    if (!handlers) {
      handlers = new Set();
      this.#handlers.set(channel, handlers);
    }
    handlers.add(handler);
    const client = await this.#connect();
    if (first) await client.query(`listen ${client.escapeIdentifier(channel)}`);
    return async () => {
      const current = this.#handlers.get(channel);
      if (!current?.delete(handler) || current.size > 0) return;
      this.#handlers.delete(channel);
      if (this.#closed || !this.#client) return;
      const open = await this.#client.catch(() => undefined);
      await open?.query(`unlisten ${open.escapeIdentifier(channel)}`).catch(() => {});
    };
  }

  #connect(): Promise<pg.Client> {
    if (this.#client) return this.#client;
    const connecting = (async () => {
      const client = new this.#pg.Client({ connectionString: this.#databaseUrl });
      client.on("notification", (message) => {
        for (const handler of this.#handlers.get(message.channel) ?? []) {
          handler(message.payload ?? "");
        }
      });
      const lost = () => {
        if (this.#client !== connecting) return;
        this.#client = undefined;
        client.end().catch(() => {});
        this.#scheduleReconnect();
      };
      client.on("error", lost);
      client.on("end", lost);
      await client.connect();
      for (const channel of this.#handlers.keys()) {
        await client.query(`listen ${client.escapeIdentifier(channel)}`);
      }
      return client;
    })();
    this.#client = connecting;
    connecting.catch(() => {
      if (this.#client === connecting) {
        this.#client = undefined;
        this.#scheduleReconnect();
      }
    });
    return connecting;
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#reconnectTimer || this.#handlers.size === 0) return;
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      this.#connect().catch(() => {});
    }, RECONNECT_DELAY_MS);
    this.#reconnectTimer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#reconnectTimer);
    const client = this.#client;
    this.#client = undefined;
    const open = await client?.catch(() => undefined);
    await open?.end().catch(() => {});
  }
}
