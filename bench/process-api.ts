// Measures @deckhand/process-manager against doing the same work by hand, in one run:
//   (a) start-to-exit latency of `true` through the HTTP API vs a bare child_process.spawn, both
//       as one request (start with `wait_ms`) and as two (start, then a blocking output read);
//   (b) throughput of 1 GiB of output captured into the head+tail buffer vs a raw pipe;
//   (c) file descriptors, child processes and memory left behind by 1,000 started and reaped
//       processes.
//
//   node --conditions=source --expose-gc bench/process-api.ts
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { createProcessRouter, ProcessClient, ProcessManager } from "@deckhand/process-manager";
import { WirePath } from "@deckhand/wire";
import { type ServerType, serve } from "@hono/node-server";
import { Hono } from "hono";
import { reportFigure } from "./support/figures.ts";

const LATENCY_RUNS = 200;
const LATENCY_WARMUP = 20;
const GIB = 1024 ** 3;
const THROUGHPUT_RUNS = 3;
const LEAK_PROCESSES = 1000;
const LEAK_CONCURRENCY = 25;

const collectGarbage = globalThis.gc;
if (!collectGarbage) {
  console.error("run with --expose-gc: node --conditions=source --expose-gc bench/process-api.ts");
  process.exit(1);
}

function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]!;
}

const milliseconds = (started: bigint) => Number(process.hrtime.bigint() - started) / 1e6;

/** Runs `sh -c command` with plain spawn and resolves with the milliseconds until it exited. */
function bareRun(command: string, stdio: "pipe" | "ignore" = "pipe"): Promise<number> {
  const started = process.hrtime.bigint();
  return new Promise((resolveRun, reject) => {
    const child = spawn("sh", ["-c", command], { stdio });
    child.once("error", reject);
    child.once("exit", () => resolveRun(milliseconds(started)));
  });
}

async function serveRouter(manager: ProcessManager): Promise<{ url: string; server: ServerType }> {
  const app = new Hono();
  app.route(WirePath.processes, createProcessRouter(manager));
  const server = await new Promise<ServerType>((resolveServer) => {
    const instance = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () =>
      resolveServer(instance),
    );
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

function closeServer(server: ServerType): Promise<void> {
  return new Promise((resolveClose) => {
    server.close(() => resolveClose());
    if ("closeAllConnections" in server) server.closeAllConnections();
  });
}

function openFileDescriptors(): number {
  return readdirSync("/proc/self/fd").length;
}

/** Live children of this process (zombies included: an unreaped child is a leak too). */
function childProcesses(): number {
  let count = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) === process.pid) count += 1;
    } catch {
      // The process ended while we looked.
    }
  }
  return count;
}

function memoryInUse(): number {
  collectGarbage!();
  collectGarbage!();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

const settle = () => new Promise((resolveDelay) => setTimeout(resolveDelay, 200));

// (a) Latency: HTTP start-and-wait (one request) and start + blocking output (two requests) vs
// bare spawn, interleaved so drift hits all of them. The one request through a client on Node's
// fetch, the manager called directly and one HTTP round trip are measured too, to show where
// time goes.
const latencyManager = new ProcessManager({ maxRunning: 64 });
const { url, server } = await serveRouter(latencyManager);
const client = new ProcessClient({ baseUrl: url });
// The same client over Node's fetch, to show what the default node:http transport saves.
const fetchClient = new ProcessClient({ baseUrl: url, fetch: globalThis.fetch });
const checkExited = (id: string, answer: { running: boolean; exit_code: number | null }) => {
  if (answer.running || answer.exit_code !== 0) throw new Error(`unexpected answer for ${id}`);
};
const apiRun = async (): Promise<number> => {
  const started = process.hrtime.bigint();
  const { id, output } = await client.start({ command: "true", wait_ms: 60_000 });
  checkExited(id, output);
  return milliseconds(started);
};
const fetchRun = async (): Promise<number> => {
  const started = process.hrtime.bigint();
  const { id, output } = await fetchClient.start({ command: "true", wait_ms: 60_000 });
  checkExited(id, output);
  return milliseconds(started);
};
const twoRequestRun = async (): Promise<number> => {
  const started = process.hrtime.bigint();
  const { id } = await client.start({ command: "true" });
  checkExited(id, await client.output(id, { wait: true }));
  return milliseconds(started);
};
const directRun = async (): Promise<number> => {
  const started = process.hrtime.bigint();
  const { id } = await latencyManager.start({ command: "true" });
  await latencyManager.waitForExit(id);
  return milliseconds(started);
};
const { id: exitedId } = await latencyManager.start({ command: "true" });
await latencyManager.waitForExit(exitedId);
const roundTrip = async (): Promise<number> => {
  const started = process.hrtime.bigint();
  await client.output(exitedId);
  return milliseconds(started);
};
for (let run = 0; run < LATENCY_WARMUP; run += 1) {
  await apiRun();
  await fetchRun();
  await twoRequestRun();
  await directRun();
  await roundTrip();
  await bareRun("true");
}
const apiLatency: number[] = [];
const fetchLatency: number[] = [];
const twoRequestLatency: number[] = [];
const directLatency: number[] = [];
const roundTripLatency: number[] = [];
const bareLatency: number[] = [];
for (let run = 0; run < LATENCY_RUNS; run += 1) {
  apiLatency.push(await apiRun());
  bareLatency.push(await bareRun("true"));
  twoRequestLatency.push(await twoRequestRun());
  fetchLatency.push(await fetchRun());
  directLatency.push(await directRun());
  roundTripLatency.push(await roundTrip());
}
await latencyManager.shutdown({ graceMs: 1000 });
await closeServer(server);

// (b) Throughput: 1 GiB through the process API into the buffer vs the same bytes through a raw
// pipe into `cat`. Writing straight to /dev/null involves no pipe at all, so it is shown only for
// reference: no capture of a process's output can approach it.
const throughputManager = new ProcessManager();
const producers = {
  zeros: `head -c ${GIB} /dev/zero`,
  lines: `yes 'a line of build output, sixty-odd bytes long, like a log line' | head -c ${GIB}`,
} as const;
/** What any Node.js capture pays: spawn and read the pipe, keeping nothing. */
function nodeReadRun(command: string): Promise<number> {
  const started = process.hrtime.bigint();
  return new Promise((resolveRun, reject) => {
    const child = spawn("sh", ["-c", command], { stdio: ["ignore", "pipe", "pipe"] });
    child.once("error", reject);
    child.stdout.on("data", () => {});
    child.stderr.on("data", () => {});
    child.once("close", () => resolveRun(milliseconds(started)));
  });
}
const gigabytesPerSecond = (ms: number) => GIB / 1e9 / (ms / 1000);
const throughput: Record<string, Record<"api" | "pipe" | "nodeRead" | "devNull", number[]>> = {};
for (const [name, producer] of Object.entries(producers)) {
  const figures = {
    api: [] as number[],
    pipe: [] as number[],
    nodeRead: [] as number[],
    devNull: [] as number[],
  };
  for (let run = 0; run < THROUGHPUT_RUNS; run += 1) {
    const started = process.hrtime.bigint();
    const { id } = await throughputManager.start({ command: producer });
    await throughputManager.waitForExit(id);
    const elapsed = milliseconds(started);
    const { truncated, exit_code } = throughputManager.output(id);
    if (exit_code !== 0 || truncated?.original_bytes !== GIB) {
      throw new Error(
        `the ${name} run captured ${truncated?.original_bytes} bytes, exit ${exit_code}`,
      );
    }
    figures.api.push(gigabytesPerSecond(elapsed));
    figures.pipe.push(gigabytesPerSecond(await bareRun(`${producer} | cat > /dev/null`, "ignore")));
    figures.nodeRead.push(gigabytesPerSecond(await nodeReadRun(producer)));
    figures.devNull.push(gigabytesPerSecond(await bareRun(`${producer} > /dev/null`, "ignore")));
  }
  throughput[name] = figures;
}
await throughputManager.shutdown({ graceMs: 1000 });
const best = (values: number[]) => Math.max(...values);

// (c) Leaks: 1,000 short processes, reaped at once by list calls.
await settle();
collectGarbage();
const fdsBefore = openFileDescriptors();
const childrenBefore = childProcesses();
const memoryBefore = memoryInUse();
const leakManager = new ProcessManager({ reapAfterMs: 0, maxRunning: LEAK_CONCURRENCY });
const leakStarted = process.hrtime.bigint();
let started = 0;
const worker = async () => {
  while (started < LEAK_PROCESSES) {
    started += 1;
    const { id } = await leakManager.start({ command: "echo $$" });
    await leakManager.waitForExit(id);
    leakManager.list(null);
  }
};
await Promise.all(Array.from({ length: LEAK_CONCURRENCY }, worker));
const leakSeconds = milliseconds(leakStarted) / 1000;
const listedAfter = leakManager.list(null, { limit: 100 }).length;
await settle();
const fdsAfter = openFileDescriptors();
const childrenAfter = childProcesses();
const memoryAfter = memoryInUse();

const apiMedian = percentile(apiLatency, 0.5);
const twoRequestMedian = percentile(twoRequestLatency, 0.5);
const twoRequestP90 = percentile(twoRequestLatency, 0.9);
const fetchMedian = percentile(fetchLatency, 0.5);
const bareMedian = percentile(bareLatency, 0.5);
const directMedian = percentile(directLatency, 0.5);
const roundTripMedian = percentile(roundTripLatency, 0.5);
const apiP90 = percentile(apiLatency, 0.9);
const bareP90 = percentile(bareLatency, 0.9);
const directP90 = percentile(directLatency, 0.9);
const zeros = throughput.zeros!;
const lines = throughput.lines!;
const ratio = (value: number) => Number(value.toFixed(3));
const result = {
  name: "process-api",
  latency_runs: LATENCY_RUNS,
  api_start_exit_median_ms: ratio(apiMedian),
  api_start_exit_p90_ms: ratio(apiP90),
  bare_spawn_median_ms: ratio(bareMedian),
  bare_spawn_p90_ms: ratio(bareP90),
  latency_median_ratio: ratio(apiMedian / bareMedian),
  latency_p90_ratio: ratio(apiP90 / bareP90),
  two_request_start_exit_median_ms: ratio(twoRequestMedian),
  two_request_start_exit_p90_ms: ratio(twoRequestP90),
  two_request_latency_median_ratio: ratio(twoRequestMedian / bareMedian),
  two_request_latency_p90_ratio: ratio(twoRequestP90 / bareP90),
  fetch_client_start_exit_median_ms: ratio(fetchMedian),
  fetch_client_latency_median_ratio: ratio(fetchMedian / bareMedian),
  direct_start_exit_median_ms: ratio(directMedian),
  direct_start_exit_p90_ms: ratio(directP90),
  direct_latency_median_ratio: ratio(directMedian / bareMedian),
  http_round_trip_median_ms: ratio(roundTripMedian),
  capture_zeros_gb_per_s: ratio(best(zeros.api)),
  raw_pipe_zeros_gb_per_s: ratio(best(zeros.pipe)),
  capture_zeros_vs_raw_pipe: ratio(best(zeros.api) / best(zeros.pipe)),
  node_read_zeros_gb_per_s: ratio(best(zeros.nodeRead)),
  capture_zeros_vs_node_read: ratio(best(zeros.api) / best(zeros.nodeRead)),
  dev_null_zeros_gb_per_s: ratio(best(zeros.devNull)),
  capture_lines_gb_per_s: ratio(best(lines.api)),
  raw_pipe_lines_gb_per_s: ratio(best(lines.pipe)),
  capture_lines_vs_raw_pipe: ratio(best(lines.api) / best(lines.pipe)),
  node_read_lines_gb_per_s: ratio(best(lines.nodeRead)),
  capture_lines_vs_node_read: ratio(best(lines.api) / best(lines.nodeRead)),
  dev_null_lines_gb_per_s: ratio(best(lines.devNull)),
  leak_processes: LEAK_PROCESSES,
  leak_seconds: ratio(leakSeconds),
  leaked_fds: fdsAfter - fdsBefore,
  leaked_children: childrenAfter - childrenBefore,
  listed_after_reap: listedAfter,
  memory_growth_bytes: memoryAfter - memoryBefore,
  latency_target_met: apiMedian / bareMedian <= 1.5,
  throughput_target_met: best(zeros.api) / best(zeros.pipe) >= 0.5,
  leak_target_met: fdsAfter === fdsBefore && childrenAfter === childrenBefore,
  node: process.version,
};

const rows: [string, string, string][] = [
  [
    "start→exit of `true` over HTTP, one request, median",
    `${apiMedian.toFixed(2)} ms`,
    `bare spawn ${bareMedian.toFixed(2)} ms → ${result.latency_median_ratio}× (target ≤ 1.5×)`,
  ],
  [
    "start→exit of `true` over HTTP, one request, p90",
    `${apiP90.toFixed(2)} ms`,
    `bare spawn ${bareP90.toFixed(2)} ms → ${result.latency_p90_ratio}×`,
  ],
  [
    "start→exit of `true` over HTTP, two requests, median",
    `${twoRequestMedian.toFixed(2)} ms`,
    `→ ${result.two_request_latency_median_ratio}× bare; p90 ${twoRequestP90.toFixed(2)} ms → ${result.two_request_latency_p90_ratio}×`,
  ],
  [
    "start→exit of `true` over HTTP, one request, client on fetch",
    `${fetchMedian.toFixed(2)} ms`,
    `→ ${result.fetch_client_latency_median_ratio}× bare (the client's default is node:http)`,
  ],
  [
    "start→exit of `true`, manager direct",
    `${directMedian.toFixed(2)} ms`,
    `→ ${result.direct_latency_median_ratio}× bare; p90 ${directP90.toFixed(2)} ms`,
  ],
  [
    "one HTTP round trip (client + hono)",
    `${roundTripMedian.toFixed(2)} ms`,
    "GET output of an exited process; start→exit takes one or two",
  ],
  [
    "1 GiB of zeros captured",
    `${result.capture_zeros_gb_per_s} GB/s`,
    `raw pipe ${result.raw_pipe_zeros_gb_per_s} GB/s → ${result.capture_zeros_vs_raw_pipe} (target ≥ 0.5); Node read-and-drop ${result.node_read_zeros_gb_per_s} GB/s → ${result.capture_zeros_vs_node_read}; /dev/null ${result.dev_null_zeros_gb_per_s} GB/s`,
  ],
  [
    "1 GiB of lines captured",
    `${result.capture_lines_gb_per_s} GB/s`,
    `raw pipe ${result.raw_pipe_lines_gb_per_s} GB/s → ${result.capture_lines_vs_raw_pipe}; Node read-and-drop ${result.node_read_lines_gb_per_s} GB/s → ${result.capture_lines_vs_node_read}; /dev/null ${result.dev_null_lines_gb_per_s} GB/s`,
  ],
  [
    `${LEAK_PROCESSES} processes started and reaped`,
    `${result.leak_seconds} s`,
    `${listedAfter} still listed`,
  ],
  [
    "leaked file descriptors",
    String(result.leaked_fds),
    `${fdsBefore} before, ${fdsAfter} after (target 0)`,
  ],
  [
    "leaked child processes",
    String(result.leaked_children),
    `${childrenBefore} before, ${childrenAfter} after (target 0)`,
  ],
  [
    "memory growth after reaping",
    `${(result.memory_growth_bytes / 1024).toFixed(0)} KiB`,
    "heap + array buffers, after GC",
  ],
];
const widths = [0, 1].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
for (const [label, value, detail] of rows) {
  console.log(`${label.padEnd(widths[0]!)}  ${value.padStart(widths[1]!)}  ${detail}`);
}
console.log(`BENCH ${JSON.stringify(result)}`);
reportFigure({
  id: "process-start-exit",
  label: "process start→exit of `true` through the process API",
  value: apiMedian,
  unit: "ms",
  anchor: { label: "bare spawn", value: bareMedian, unit: "ms" },
  comparison: { value: apiMedian / bareMedian, unit: "×" },
});
reportFigure({
  id: "output-capture",
  label: "1 GiB of lines captured into head+tail",
  value: best(lines.api),
  unit: "GB/s",
  anchor: { label: "Node's own pipe read", value: best(lines.nodeRead), unit: "GB/s" },
  comparison: { value: best(lines.api) / best(lines.nodeRead), unit: "×" },
});
