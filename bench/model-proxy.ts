// Model-provider proxy overhead: a 10 MB SSE stream (Responses-style deltas, then
// `response.completed` with usage) read straight from the fake upstream and through the proxy
// served as the server serves it (its Node handler ahead of the hono app, with the app's Host
// check, body limit, security headers and log line), both on loopback, interleaved. Reports the throughput ratio
// (target ≥ 0.9 of direct) and the time to first byte the proxy adds. The upstream, the proxy
// and the reading client each run on their own thread, as they run in their own processes (or
// machines) in production; on one event loop the proxy would be charged for the others' work.
// Wall-clock ratios need a core per thread: on a smaller or busy machine the three threads of a
// proxied run share cores the two of a direct run do not. So the proxy's thread CPU time per MB
// is reported beside the bare pipe's, which compares their own work whatever else is running.
//
// The time to first byte is measured on answers shaped like a model's: the head and the first
// event at once, the rest after a pause (as tokens follow), direct, through the proxy and
// through the bare pipe in turns. Inside the 10 MB flood the first byte also waits for a core:
// the upstream's thread writes as fast as it can from its first byte on, and the proxy's thread,
// woken by the answer, waits on the run queue behind it (measured with /proc/thread-self/schedstat
// on the 2-core machine: the wait was most of the added time). That figure is printed as well.
//
//   node --conditions=source bench/model-proxy.ts
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import {
  listen,
  NO_CONTENT_SECURITY_POLICY,
  OriginPolicy,
  securityHeaderSetter,
} from "@deckhand/http-kit";
import {
  createModelProxyRoutes,
  InMemoryModelTokenStore,
  InMemoryUsageRecorder,
  mintModelToken,
} from "@deckhand/model-proxy";
import { sseEvent, startFakeUpstream } from "@deckhand/testkit";
import { WireHeader, WirePath } from "@deckhand/wire";
import { reportFigure } from "./support/figures.ts";

const STREAM_BYTES = 10 * 1024 * 1024;
const WRITE_BYTES = 16 * 1024;
const RUNS = 9;
const WARMUP = 2;
const TARGET_RATIO = 0.9;
/** Rounds of first-byte requests (direct, proxy, bare pipe in turns), after WARMUP rounds. */
const FIRST_BYTE_RUNS = 31;
/** How long a model-shaped answer pauses after its first event. */
const FIRST_EVENT_PAUSE_MS = 15;
/** Asks the upstream for a model-shaped answer: the first event at once, the rest after a pause. */
const FIRST_EVENT_QUERY = "?answer=first-event";

interface BenchStream {
  chunks: string[];
  bytes: number;
  /** A model-shaped answer: its first event, then (after a pause) its last. */
  firstEvent: string[];
}

/** About 10 MB of delta events, grouped into writes of about 16 KiB as a busy upstream sends. */
function buildStream(): BenchStream {
  const events: string[] = [
    sseEvent(
      { type: "response.created", response: { id: "resp_1", usage: null } },
      "response.created",
    ),
  ];
  let bytes = events[0]!.length;
  const delta = "lorem ipsum dolor sit amet, consectetur adipiscing elit ".repeat(3);
  for (let index = 0; bytes < STREAM_BYTES; index += 1) {
    const event = sseEvent(
      { type: "response.output_text.delta", item_id: "msg_1", sequence_number: index, delta },
      "response.output_text.delta",
    );
    events.push(event);
    bytes += event.length;
  }
  events.push(
    sseEvent(
      {
        type: "response.completed",
        response: {
          id: "resp_1",
          model: "bench",
          usage: { input_tokens: 1, output_tokens: 2, total_tokens: 3 },
        },
      },
      "response.completed",
    ),
  );
  const chunks: string[] = [];
  let current = "";
  for (const event of events) {
    current += event;
    if (current.length >= WRITE_BYTES) {
      chunks.push(current);
      current = "";
    }
  }
  if (current) chunks.push(current);
  return {
    chunks,
    bytes: chunks.reduce((sum, chunk) => sum + Buffer.byteLength(chunk), 0),
    firstEvent: [events[0]!, events.at(-1)!],
  };
}

interface Run {
  bytes: number;
  firstByteMs: number;
  totalMs: number;
}

/** POSTs with node:http and reads the whole answer, timing the first body byte and the end. */
function measure(url: string, headers: Record<string, string>): Promise<Run> {
  return new Promise((resolveRun, reject) => {
    const started = process.hrtime.bigint();
    const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6;
    const body = JSON.stringify({ model: "bench", stream: true, input: "go" });
    const outgoing = request(url, { method: "POST", headers }, (response) => {
      let bytes = 0;
      let firstByteMs = -1;
      response.on("data", (chunk: Buffer) => {
        if (firstByteMs < 0) firstByteMs = elapsed();
        bytes += chunk.length;
      });
      response.on("end", () => resolveRun({ bytes, firstByteMs, totalMs: elapsed() }));
      response.on("error", reject);
    });
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

const median = (values: number[]) => {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.floor(sorted.length / 2)]!;
};

type Role = "upstream" | "proxy" | "pipe";
interface Ready {
  url: string;
  token?: string;
}

/** The upstream's thread: serves the stream to every request. */
async function runUpstream(): Promise<void> {
  const stream = buildStream();
  const upstream = await startFakeUpstream();
  upstream.respondWith((request) =>
    request.url.endsWith(FIRST_EVENT_QUERY)
      ? {
          headers: { "content-type": "text/event-stream" },
          chunks: stream.firstEvent,
          chunkDelayMs: FIRST_EVENT_PAUSE_MS,
        }
      : { headers: { "content-type": "text/event-stream" }, chunks: stream.chunks },
  );
  parentPort!.postMessage({ url: upstream.url } satisfies Ready);
}

/**
 * The proxy's thread: the proxy in front of the upstream, reporting each usage record, served
 * as the server serves it: its routes answered ahead of the app on Node's request, with the
 * app's Host/Origin check, body limit, security headers and request log line.
 */
async function runProxy(upstreamUrl: string): Promise<void> {
  const tokens = new InMemoryModelTokenStore();
  const usage = new InMemoryUsageRecorder();
  const proxy = createModelProxyRoutes({
    upstreams: {
      codex: { kind: "openai", baseUrl: `${upstreamUrl}/v1`, apiKey: "sk-bench-upstream-key" },
    },
    tokens,
    usage: {
      record: async (entry) => {
        await usage.record(entry);
        parentPort!.postMessage({ usageTotalTokens: entry.totalTokens });
      },
    },
    rateLimit: false,
  });
  const originPolicy = new OriginPolicy({
    listenHost: "127.0.0.1",
    hostAdvice: "set allowedHosts",
    originAdvice: "set allowedOrigins",
  });
  const listening = await listen(
    proxy.app.fetch,
    { host: "127.0.0.1", port: 0 },
    (error) => error,
    proxy.direct({
      originPolicy,
      bodyLimit: { maxBytes: 32 * 1024 * 1024 },
      securityHeaders: securityHeaderSetter(NO_CONTENT_SECURITY_POLICY),
      // The server hands the line to its logger; both ways of serving pay that alike.
      logRequest: () => {},
    }),
  );
  const { token } = await mintModelToken(tokens, { jobId: "bench-job", ttlMs: 3_600_000 });
  parentPort!.postMessage({
    url: `${listening.url}${WirePath.modelProvider}/codex`,
    token,
  } satisfies Ready);
}

/**
 * A reference point, not Deckhand: the least a Node proxy can do, piping the upstream's
 * response into the agent's with node:http and nothing else.
 */
function runBarePipe(upstreamUrl: string): void {
  const server = createServer((incoming, outgoing) => {
    const forwarded = request(
      `${upstreamUrl}${incoming.url}`,
      { method: incoming.method, headers: { "content-type": "application/json" } },
      (response) => {
        outgoing.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(outgoing);
      },
    );
    incoming.pipe(forwarded);
  });
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as AddressInfo;
    parentPort!.postMessage({ url: `http://127.0.0.1:${port}` } satisfies Ready);
  });
}

function startThread(role: Role, upstreamUrl?: string): Promise<{ worker: Worker; ready: Ready }> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { role, upstreamUrl } });
  return new Promise((resolveReady, reject) => {
    worker.once("error", reject);
    worker.once("message", (ready: Ready) => resolveReady({ worker, ready }));
  });
}

/** A thread's own CPU time in ms: what it spent, whatever else the machine was running. */
const threadCpuMs = () => {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
};

/** Asks a worker for its CPU time so far. */
function cpuOf(worker: Worker): Promise<number> {
  return new Promise((resolveCpu) => {
    const onMessage = (message: { cpuMs?: number }) => {
      if (message.cpuMs === undefined) return;
      worker.off("message", onMessage);
      resolveCpu(message.cpuMs);
    };
    worker.on("message", onMessage);
    worker.postMessage("cpu");
  });
}

if (!isMainThread) {
  const { role, upstreamUrl } = workerData as { role: Role; upstreamUrl?: string };
  parentPort!.on("message", () => parentPort!.postMessage({ cpuMs: threadCpuMs() }));
  if (role === "upstream") await runUpstream();
  else if (role === "pipe") runBarePipe(upstreamUrl!);
  else await runProxy(upstreamUrl!);
} else {
  await main();
}

interface FirstByteUrls {
  direct: string;
  proxy: string;
  pipe: string;
  jsonHeaders: Record<string, string>;
  proxyHeaders: Record<string, string>;
}

/**
 * Times the first byte of model-shaped answers, direct, through the proxy and through the bare
 * pipe in turns (the order rotating each round), so all three see the same load.
 */
async function measureFirstBytes(
  urls: FirstByteUrls,
): Promise<{ direct: number[]; proxy: number[]; pipe: number[] }> {
  const times = { direct: [] as number[], proxy: [] as number[], pipe: [] as number[] };
  const paths = [
    ["direct", urls.direct, urls.jsonHeaders],
    ["proxy", urls.proxy, urls.proxyHeaders],
    ["pipe", urls.pipe, urls.jsonHeaders],
  ] as const;
  for (let round = 0; round < WARMUP + FIRST_BYTE_RUNS; round += 1) {
    for (let turn = 0; turn < paths.length; turn += 1) {
      const [name, url, headers] = paths[(round + turn) % paths.length]!;
      const run = await measure(url, headers);
      if (round >= WARMUP) times[name].push(run.firstByteMs);
    }
  }
  return times;
}

async function main(): Promise<void> {
  const stream = buildStream();
  const upstreamThread = await startThread("upstream");
  const proxyThread = await startThread("proxy", upstreamThread.ready.url);
  const pipeThread = await startThread("pipe", upstreamThread.ready.url);
  const usageTotals: (number | undefined)[] = [];
  proxyThread.worker.on("message", (message: { usageTotalTokens?: number }) => {
    if ("usageTotalTokens" in message) usageTotals.push(message.usageTotalTokens);
  });
  const jsonHeaders = { "content-type": "application/json" };
  const proxyHeaders = {
    ...jsonHeaders,
    [WireHeader.authorization]: `Bearer ${proxyThread.ready.token!}`,
    [WireHeader.jobId]: "bench-job",
  };
  const directUrl = `${upstreamThread.ready.url}/v1/responses`;
  const proxyUrl = `${proxyThread.ready.url}/responses`;

  const direct: Run[] = [];
  const proxied: Run[] = [];
  const piped: Run[] = [];
  const proxyCpu: number[] = [];
  const pipeCpu: number[] = [];
  for (let run = 0; run < WARMUP + RUNS; run += 1) {
    const directRun = await measure(directUrl, jsonHeaders);
    const proxyCpuBefore = await cpuOf(proxyThread.worker);
    const proxiedRun = await measure(proxyUrl, proxyHeaders);
    const proxyCpuAfter = await cpuOf(proxyThread.worker);
    const pipeCpuBefore = await cpuOf(pipeThread.worker);
    const pipedRun = await measure(`${pipeThread.ready.url}/v1/responses`, jsonHeaders);
    const pipeCpuAfter = await cpuOf(pipeThread.worker);
    if (run >= WARMUP) {
      proxyCpu.push(proxyCpuAfter - proxyCpuBefore);
      pipeCpu.push(pipeCpuAfter - pipeCpuBefore);
    }
    if (directRun.bytes !== stream.bytes || proxiedRun.bytes !== stream.bytes) {
      throw new Error(
        `expected ${stream.bytes} bytes, got ${directRun.bytes} and ${proxiedRun.bytes}`,
      );
    }
    if (run >= WARMUP) {
      direct.push(directRun);
      proxied.push(proxiedRun);
      piped.push(pipedRun);
    }
  }
  const firstByte = await measureFirstBytes({
    direct: `${directUrl}${FIRST_EVENT_QUERY}`,
    proxy: `${proxyUrl}${FIRST_EVENT_QUERY}`,
    pipe: `${pipeThread.ready.url}/v1/responses${FIRST_EVENT_QUERY}`,
    jsonHeaders,
    proxyHeaders,
  });
  const proxiedRequests = WARMUP + RUNS + WARMUP + FIRST_BYTE_RUNS;
  // Usage is recorded as the stream ends; give the last record a moment to arrive.
  for (let wait = 0; usageTotals.length < proxiedRequests && wait < 50; wait += 1) {
    await new Promise((resolveWait) => setTimeout(resolveWait, 20));
  }
  await upstreamThread.worker.terminate();
  await proxyThread.worker.terminate();
  await pipeThread.worker.terminate();

  const megabytesPerSecond = (run: Run) => stream.bytes / 1e6 / (run.totalMs / 1000);
  const directThroughput = median(direct.map(megabytesPerSecond));
  const proxiedThroughput = median(proxied.map(megabytesPerSecond));
  const floodDirectFirstByte = median(direct.map((run) => run.firstByteMs));
  const floodProxiedFirstByte = median(proxied.map((run) => run.firstByteMs));
  const directFirstByte = median(firstByte.direct);
  const proxiedFirstByte = median(firstByte.proxy);
  const pipedFirstByte = median(firstByte.pipe);
  const round = (value: number) => Number(value.toFixed(3));
  const ratio = proxiedThroughput / directThroughput;
  const pipedThroughput = median(piped.map(megabytesPerSecond));
  const result = {
    name: "model-proxy",
    stream_bytes: stream.bytes,
    runs: RUNS,
    direct_mb_per_s: round(directThroughput),
    proxy_mb_per_s: round(proxiedThroughput),
    throughput_ratio: round(ratio),
    bare_pipe_mb_per_s: round(pipedThroughput),
    bare_pipe_ratio: round(pipedThroughput / directThroughput),
    proxy_vs_bare_pipe: round(proxiedThroughput / pipedThroughput),
    proxy_cpu_ms_per_mb: round(median(proxyCpu) / (stream.bytes / 1e6)),
    bare_pipe_cpu_ms_per_mb: round(median(pipeCpu) / (stream.bytes / 1e6)),
    proxy_cpu_vs_bare_pipe: round(median(proxyCpu) / median(pipeCpu)),
    direct_first_byte_ms: round(directFirstByte),
    proxy_first_byte_ms: round(proxiedFirstByte),
    added_first_byte_ms: round(proxiedFirstByte - directFirstByte),
    bare_pipe_first_byte_ms: round(pipedFirstByte),
    bare_pipe_added_first_byte_ms: round(pipedFirstByte - directFirstByte),
    first_byte_runs: FIRST_BYTE_RUNS,
    flood_direct_first_byte_ms: round(floodDirectFirstByte),
    flood_proxy_first_byte_ms: round(floodProxiedFirstByte),
    flood_added_first_byte_ms: round(floodProxiedFirstByte - floodDirectFirstByte),
    usage_tokens_recorded:
      usageTotals.length === proxiedRequests && usageTotals.every((total) => total === 3),
    throughput_target_met: ratio >= TARGET_RATIO,
    node: process.version,
  };

  const rows: [string, string, string][] = [
    [
      "10 MB SSE through the proxy",
      `${result.proxy_mb_per_s} MB/s`,
      `direct ${result.direct_mb_per_s} MB/s → ${result.throughput_ratio} (target ≥ ${TARGET_RATIO})`,
    ],
    [
      "10 MB SSE through a bare node:http pipe",
      `${result.bare_pipe_mb_per_s} MB/s`,
      `→ ${result.bare_pipe_ratio} of direct; the proxy reaches ${result.proxy_vs_bare_pipe} of it`,
    ],
    [
      "CPU of the proxy's thread per MB",
      `${result.proxy_cpu_ms_per_mb} ms`,
      `bare pipe ${result.bare_pipe_cpu_ms_per_mb} ms → ${result.proxy_cpu_vs_bare_pipe} of it (thread CPU time: immune to a busy machine)`,
    ],
    [
      "time to first byte through the proxy",
      `${result.proxy_first_byte_ms} ms`,
      `direct ${result.direct_first_byte_ms} ms → +${result.added_first_byte_ms} ms; bare pipe +${result.bare_pipe_added_first_byte_ms} ms (first event, then a pause; median of ${FIRST_BYTE_RUNS})`,
    ],
    [
      "time to first byte inside the 10 MB flood",
      `${result.flood_proxy_first_byte_ms} ms`,
      `direct ${result.flood_direct_first_byte_ms} ms → +${result.flood_added_first_byte_ms} ms (the proxy's thread waits for a core behind the upstream's)`,
    ],
    [
      "usage read from response.completed",
      String(result.usage_tokens_recorded),
      `${usageTotals.length} requests`,
    ],
  ];
  const widths = [0, 1].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const [label, value, detail] of rows) {
    console.log(`${label.padEnd(widths[0]!)}  ${value.padStart(widths[1]!)}  ${detail}`);
  }
  console.log(`BENCH ${JSON.stringify(result)}`);
  reportFigure({
    id: "proxy-cpu",
    label: "model proxy CPU per MB streamed",
    value: result.proxy_cpu_ms_per_mb,
    unit: "ms/MB",
    anchor: {
      label: "a bare node:http pipe",
      value: result.bare_pipe_cpu_ms_per_mb,
      unit: "ms/MB",
    },
    comparison: { value: result.proxy_cpu_vs_bare_pipe, unit: "×" },
  });
  reportFigure({
    id: "proxy-ttfb",
    label: "model proxy time to first byte",
    value: result.proxy_first_byte_ms,
    unit: "ms",
    anchor: { label: "direct to the upstream", value: result.direct_first_byte_ms, unit: "ms" },
    comparison: { value: result.added_first_byte_ms, unit: "+ms" },
    note: `first event, then a pause; a bare node:http pipe adds ${result.bare_pipe_added_first_byte_ms} ms; inside the 10 MB flood +${result.flood_added_first_byte_ms} ms`,
  });
}
