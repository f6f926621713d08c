// Watches every SQL statement a process sends to its database, without touching the product:
// PGlite's protocol entry point and node-postgres' Client#query are wrapped, so the count and
// the engine time of each statement reach `onStatement`. Used by the trace preload and by the
// benchmarks that count queries per workspace job or per agent turn.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export interface Statement {
  driver: "pglite" | "pg";
  /** The SQL text (first 300 characters). */
  text: string;
  /** When it began, in performance.now() milliseconds. */
  t: number;
  /** PGlite: time inside the WASM engine; pg: the round trip. */
  ms: number;
  /** PGlite: protocol messages the statement took (a parameterised one takes six). */
  messages?: number;
}

export interface SqlTrace {
  /** PGlite instances opened since the trace began and not closed. */
  livePglites: Set<unknown>;
  /** PGlite opens: data directory, start and duration. */
  opens: { dataDir: string; t: number; ms: number }[];
  /** Time PGlite spent writing its files back after statements. */
  syncMs: () => number;
  notes: string[];
}

const databasePackage = fileURLToPath(new URL("../../db/package.json", import.meta.url));
const requireFromDatabase = createRequire(databasePackage);
let installed: SqlTrace | null = null;
const listeners = new Set<(statement: Statement) => void>();

/** What this file touches of PGlite (bench has no dependency on it: the database package has). */
interface PgliteModule {
  PGlite: {
    prototype: object;
    create: (...args: unknown[]) => Promise<unknown>;
  };
}

/** What this file touches of node-postgres. */
interface PgModule {
  Client: { prototype: object };
}

/** The PGlite module the database package imports (its ESM entry, not require()'s). */
async function importPglite(): Promise<PgliteModule> {
  let packageRoot = dirname(requireFromDatabase.resolve("@electric-sql/pglite"));
  while (!existsSync(join(packageRoot, "package.json"))) packageRoot = dirname(packageRoot);
  const manifest = JSON.parse(readFileSync(join(packageRoot, "package.json"), "utf8")) as {
    exports: { ".": { import: { default: string } } };
  };
  return import(pathToFileURL(join(packageRoot, manifest.exports["."].import.default)).href);
}

const decoder = new TextDecoder();

/** The SQL of a Parse ('P') or simple Query ('Q') protocol message; null for the others. */
function sqlOf(message: Uint8Array): string | null {
  const type = message[0];
  if (type === 0x51) return decoder.decode(message.subarray(5, message.indexOf(0, 5)));
  if (type === 0x50) {
    const nameEnd = message.indexOf(0, 5);
    return decoder.decode(message.subarray(nameEnd + 1, message.indexOf(0, nameEnd + 1)));
  }
  return null;
}

const emit = (statement: Statement) => {
  for (const listener of listeners) listener(statement);
};

async function install(): Promise<SqlTrace> {
  const trace: SqlTrace = { livePglites: new Set(), opens: [], syncMs: () => syncMs, notes: [] };
  let syncMs = 0;
  try {
    const { PGlite } = await importPglite();
    const prototype = PGlite.prototype as unknown as {
      execProtocolRawSync(message: Uint8Array): Uint8Array;
      syncToFs(): Promise<void>;
      close(): Promise<void>;
    };
    const originalExec = prototype.execProtocolRawSync;
    // One statement is several protocol messages (parse, describe, bind, describe, execute,
    // sync): their engine time is summed onto the statement the last Parse or Query began.
    let current: Statement | null = null;
    let flushScheduled = false;
    const flushCurrent = () => {
      flushScheduled = false;
      if (current !== null) emit(current);
      current = null;
    };
    prototype.execProtocolRawSync = function tracedExec(message: Uint8Array) {
      const started = performance.now();
      try {
        return originalExec.call(this, message);
      } finally {
        const sql = sqlOf(message);
        if (sql !== null) {
          if (current !== null) emit(current);
          current = { driver: "pglite", text: sql.slice(0, 300), t: started, ms: 0, messages: 0 };
        }
        if (current !== null) {
          current.ms += performance.now() - started;
          current.messages! += 1;
          // A statement's messages run back to back; report it once the turn of work is over.
          if (!flushScheduled) {
            flushScheduled = true;
            setImmediate(flushCurrent);
          }
        }
      }
    };
    const originalSync = prototype.syncToFs;
    prototype.syncToFs = async function tracedSync(this: unknown) {
      const started = performance.now();
      await originalSync.call(this);
      syncMs += performance.now() - started;
    };
    const originalClose = prototype.close;
    prototype.close = async function tracedClose(this: unknown) {
      trace.livePglites.delete(this);
      return originalClose.call(this);
    };
    const create = PGlite.create.bind(PGlite) as (...args: unknown[]) => Promise<unknown>;
    (PGlite as unknown as { create: typeof create }).create = async (...args: unknown[]) => {
      const started = performance.now();
      const instance = await create(...args);
      trace.livePglites.add(instance);
      trace.opens.push({
        dataDir: typeof args[0] === "string" ? args[0] : "(options)",
        t: started,
        ms: performance.now() - started,
      });
      return instance;
    };
  } catch (error) {
    trace.notes.push(`PGlite not traced: ${(error as Error).message}`);
  }
  try {
    const pg = requireFromDatabase("pg") as PgModule;
    const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const originalQuery = prototype.query;
    prototype.query = function tracedQuery(this: unknown, ...args: unknown[]) {
      const started = performance.now();
      const first = args[0] as string | { text?: string };
      const text = (typeof first === "string" ? first : (first?.text ?? "?")).slice(0, 300);
      const done = () => emit({ driver: "pg", text, t: started, ms: performance.now() - started });
      const result = originalQuery.apply(this, args);
      if (result instanceof Promise) result.then(done, done);
      else done();
      return result;
    };
  } catch (error) {
    trace.notes.push(`pg not traced: ${(error as Error).message}`);
  }
  return trace;
}

/** Starts watching (once per process); `onStatement` hears every later statement. */
export async function traceSql(onStatement?: (statement: Statement) => void): Promise<SqlTrace> {
  installed ??= await install();
  if (onStatement) listeners.add(onStatement);
  return installed;
}

/** Counts statements between `start()` and `stop()`: how many, and the engine time. */
export class StatementCounter {
  #counting = false;
  count = 0;
  engineMs = 0;
  readonly byText = new Map<string, number>();

  static async create(): Promise<StatementCounter> {
    const counter = new StatementCounter();
    await traceSql((statement) => counter.#seen(statement));
    return counter;
  }

  #seen(statement: Statement): void {
    if (!this.#counting) return;
    this.count += 1;
    this.engineMs += statement.ms;
    const key = statement.text.replace(/\s+/g, " ").trim().slice(0, 90);
    this.byText.set(key, (this.byText.get(key) ?? 0) + 1);
  }

  start(): void {
    this.count = 0;
    this.engineMs = 0;
    this.byText.clear();
    this.#counting = true;
  }

  /** Stops after the statements already sent have been reported (PGlite reports on a tick). */
  async stop(): Promise<{ count: number; engineMs: number }> {
    await new Promise((resolveTick) => setImmediate(resolveTick));
    this.#counting = false;
    return { count: this.count, engineMs: this.engineMs };
  }
}
