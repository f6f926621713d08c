// A profiling aid, loaded into a Deckhand process with `node --import` (never by the product):
// it records, without touching the product's code, where a process spends its time and memory:
//   - every child process (file, arguments, start, exit) — git, sh, bwrap, slirp4netns, agents;
//   - every SQL statement sent to PGlite (text, time in the WASM engine, the protocol messages
//     one statement takes) or to PostgreSQL through `pg` (text, round trip), and PGlite's opens;
//   - HTTP requests served and sent (node:http and fetch), from their diagnostics channels;
//   - garbage collection pauses and the event loop's delay (perf_hooks.monitorEventLoopDelay);
//   - on SIGUSR2, the process's memory: RSS, V8 heap by space, external and array buffers
//     (PGlite's WASM memory is an ArrayBuffer), and the count of live PGlite instances.
// It writes JSON lines to $DECKHAND_TRACE_FILE (one file per process: `%p` is replaced by the
// pid) when the process exits, every second, and on SIGUSR2. bench/profile-batch-preview.ts and
// bench/profile-up.ts read them.
//
//   DECKHAND_TRACE_FILE=/tmp/trace-%p.jsonl node --import ./bench/support/trace-preload.ts ...
import { ChildProcess } from "node:child_process";
import { subscribe } from "node:diagnostics_channel";
import { appendFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { monitorEventLoopDelay, PerformanceObserver, performance } from "node:perf_hooks";
import { getHeapSpaceStatistics, getHeapStatistics } from "node:v8";
import { traceSql } from "./sql-trace.ts";

const target = process.env.DECKHAND_TRACE_FILE?.replaceAll("%p", String(process.pid));
const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;
const now = () => round(performance.now());
let pending: string[] = [];

function record(entry: Record<string, unknown>): void {
  pending.push(JSON.stringify(entry));
}

function flush(): void {
  if (target === undefined || pending.length === 0) return;
  const lines = pending;
  pending = [];
  appendFileSync(target, `${lines.join("\n")}\n`);
}

record({
  kind: "process",
  t: now(),
  pid: process.pid,
  argv: process.argv.slice(1),
  // Epoch milliseconds of this process's `t: 0`, to put two processes' traces on one clock.
  timeOrigin: performance.timeOrigin,
  // Wall time since the OS started the process: what Node's own start-up took before this line.
  nodeStartMs: Math.round(performance.nodeTiming.nodeStart),
  bootstrapMs: Math.round(performance.nodeTiming.bootstrapComplete),
});

// Child processes: every spawn, execFile and exec passes through ChildProcess#spawn, an
// internal method Node's type declarations leave out.
interface SpawnOptionsWithFile {
  file: string;
  args?: unknown[];
}
const prototype = ChildProcess.prototype as unknown as {
  spawn(this: ChildProcess, options: SpawnOptionsWithFile): unknown;
};
const originalSpawn = prototype.spawn;
prototype.spawn = function tracedSpawn(this: ChildProcess, options: SpawnOptionsWithFile) {
  const started = now();
  const result = originalSpawn.call(this, options);
  const args = (options.args ?? []).slice(1).map((arg) => String(arg).slice(0, 160));
  record({ kind: "spawn-start", file: options.file, pid: this.pid, t: started });
  this.once("exit", (code, signal) =>
    record({
      kind: "spawn",
      file: options.file,
      pid: this.pid,
      args: args.slice(0, 40),
      t: started,
      ms: Math.round((now() - started) * 100) / 100,
      code,
      signal,
    }),
  );
  return result;
};
syncBuiltinESMExports();

// SQL statements and PGlite opens (see sql-trace.ts).
const sql = await traceSql((statement) =>
  record({ kind: "sql", ...statement, t: round(statement.t), ms: round(statement.ms, 3) }),
);
for (const note of sql.notes) record({ kind: "note", text: note });

// HTTP served and sent (node:http's and undici's channels).
const httpStarts = new WeakMap<object, number>();
subscribe("http.server.request.start", (message) => {
  httpStarts.set((message as { response: object }).response, now());
});
subscribe("http.server.response.finish", (message) => {
  const { request, response } = message as {
    request: { method: string; url: string };
    response: { statusCode: number };
  };
  const started = httpStarts.get(response);
  record({
    kind: "http-in",
    method: request.method,
    url: request.url.slice(0, 160),
    status: response.statusCode,
    t: started,
    ms: started === undefined ? null : Math.round((now() - started) * 100) / 100,
  });
});
// node:http's client (the CLI's requests to a --server), from its request's start to its answer.
const clientStarts = new WeakMap<object, number>();
subscribe("http.client.request.start", (message) => {
  clientStarts.set((message as { request: object }).request, now());
});
subscribe("http.client.response.finish", (message) => {
  const { request } = message as {
    request: { method: string; protocol: string; host: string; path: string };
  };
  const started = clientStarts.get(request);
  record({
    kind: "http-out",
    method: request.method,
    url: `${request.protocol}//${request.host}${request.path}`.slice(0, 160),
    t: started,
    ms: started === undefined ? null : Math.round((now() - started) * 100) / 100,
  });
});
const fetchStarts = new WeakMap<object, number>();
subscribe("undici:request:create", (message) => {
  fetchStarts.set((message as { request: object }).request, now());
});
subscribe("undici:request:trailers", (message) => {
  const { request } = message as { request: { method: string; origin: string; path: string } };
  const started = fetchStarts.get(request);
  record({
    kind: "http-out",
    method: request.method,
    url: `${request.origin}${request.path}`.slice(0, 160),
    t: started,
    ms: started === undefined ? null : Math.round((now() - started) * 100) / 100,
  });
});

// Garbage collection and the event loop.
let gcMs = 0;
let gcCount = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gcMs += entry.duration;
    gcCount += 1;
  }
}).observe({ entryTypes: ["gc"] });
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();

function memoryEntry(reason: string): Record<string, unknown> {
  const heap = getHeapStatistics();
  return {
    kind: "memory",
    reason,
    t: now(),
    ...process.memoryUsage(),
    heapLimit: heap.heap_size_limit,
    mallocedMemory: heap.malloced_memory,
    spaces: Object.fromEntries(
      getHeapSpaceStatistics().map((space) => [space.space_name, space.space_used_size]),
    ),
    pgliteInstances: sql.livePglites.size,
    // Each instance's WebAssembly memory: Postgres' whole address space, which only grows.
    pgliteWasmBytes: [...sql.livePglites].map(
      (instance) => (instance as { mod?: { HEAPU8?: Uint8Array } }).mod?.HEAPU8?.byteLength ?? 0,
    ),
  };
}

process.on("SIGUSR2", () => {
  record(memoryEntry("SIGUSR2"));
  flush();
});
const flusher = setInterval(flush, 1_000);
flusher.unref();
process.once("exit", () => {
  loopDelay.disable();
  const ms = (nanoseconds: number) => Math.round(nanoseconds / 1e4) / 100;
  record(memoryEntry("exit"));
  for (const open of sql.opens) {
    record({ kind: "pglite-open", dataDir: open.dataDir, t: round(open.t), ms: round(open.ms) });
  }
  record({ kind: "pglite-sync", ms: round(sql.syncMs()) });
  record({
    kind: "summary",
    t: now(),
    cpu: process.cpuUsage(),
    gcMs: Math.round(gcMs),
    gcCount,
    eventLoopDelay: {
      mean: ms(loopDelay.mean),
      p50: ms(loopDelay.percentile(50)),
      p99: ms(loopDelay.percentile(99)),
      max: ms(loopDelay.max),
    },
  });
  flush();
});
