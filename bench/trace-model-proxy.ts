// Where one model-proxy request's time to first byte goes: the bench's threads (fake upstream,
// proxy on @hono/node-server, reading client), each marking what it does on the process-wide
// monotonic clock, so one timeline shows all three. The proxy's thread also says, for the wait
// between sending the upstream request and parsing its answer, how long its event loop was
// idle, how long it ran and how long it waited on the run queue for a core
// (/proc/thread-self/schedstat): a thread that was woken but not scheduled shows there.
//
//   node --conditions=source bench/trace-model-proxy.ts [--flood] [--rounds 12]
//
// Without --flood the upstream answers as a model does (the first event, then the rest after a
// pause); with it, the bench's 10 MB written as fast as the upstream can.
import { subscribe } from "node:diagnostics_channel";
import { readFileSync } from "node:fs";
import { type ClientRequest, type IncomingMessage, request, type ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { listen } from "@deckhand/http-kit";
import {
  createModelProxyRoutes,
  InMemoryModelTokenStore,
  InMemoryUsageRecorder,
  mintModelToken,
} from "@deckhand/model-proxy";
import { sseEvent, startFakeUpstream } from "@deckhand/testkit";
import { WireHeader, WirePath } from "@deckhand/wire";

type Mark = [label: string, atMs: number];
const marks: Mark[] = [];
const now = () => Number(process.hrtime.bigint()) / 1e6;
const mark = (label: string) => marks.push([label, now()]);

/** Run time and run-queue wait of this thread so far, in ms (Linux). */
function schedstat(): { ran: number; waited: number } {
  const [ran, waited] = readFileSync("/proc/thread-self/schedstat", "utf8").split(" ").map(Number);
  return { ran: ran! / 1e6, waited: waited! / 1e6 };
}

/** Marks the first writeHead and write of every answer this thread's servers give. */
function markAnswers(thread: string): void {
  subscribe("http.server.request.start", (message) => {
    const { response } = message as { response: ServerResponse };
    mark(`${thread}: request received`);
    const writeHead = response.writeHead;
    response.writeHead = function (this: ServerResponse, ...args: unknown[]) {
      mark(`${thread}: writeHead`);
      return (writeHead as (...values: unknown[]) => ServerResponse).apply(this, args);
    } as typeof response.writeHead;
    const write = response.write;
    let first = true;
    response.write = function (this: ServerResponse, ...args: unknown[]) {
      if (first) mark(`${thread}: first body write`);
      first = false;
      return (write as (...values: unknown[]) => boolean).apply(this, args);
    } as typeof response.write;
  });
}

function modelStream(flood: boolean): { chunks: string[]; chunkDelayMs?: number } {
  const created = sseEvent({ type: "response.created", response: { usage: null } }, "created");
  const completed = sseEvent(
    { type: "response.completed", response: { usage: { total_tokens: 3 } } },
    "response.completed",
  );
  if (!flood) return { chunks: [created, completed], chunkDelayMs: 15 };
  const delta = sseEvent({ type: "response.output_text.delta", delta: "lorem ipsum ".repeat(20) });
  const chunk = delta.repeat(Math.ceil(16_384 / delta.length));
  return { chunks: [created, ...Array(640).fill(chunk), completed] };
}

async function upstreamThread(flood: boolean): Promise<string> {
  markAnswers("upstream");
  const upstream = await startFakeUpstream();
  const answer = modelStream(flood);
  upstream.respondWith(() => ({ headers: { "content-type": "text/event-stream" }, ...answer }));
  return upstream.url;
}

async function proxyThread(upstreamUrl: string): Promise<{ url: string; token: string }> {
  markAnswers("proxy");
  let sched = schedstat();
  let loop = performance.eventLoopUtilization();
  const since = (label: string) => {
    const nextLoop = performance.eventLoopUtilization();
    const idle = performance.eventLoopUtilization(nextLoop, loop).idle;
    const nextSched = schedstat();
    const ran = nextSched.ran - sched.ran;
    const waited = nextSched.waited - sched.waited;
    [loop, sched] = [nextLoop, nextSched];
    mark(
      `${label} (loop idle ${idle.toFixed(2)}, ran ${ran.toFixed(2)}, run queue ${waited.toFixed(2)})`,
    );
  };
  // Counted from the request's arrival, so each figure covers one step.
  subscribe("http.server.request.start", () => {
    [loop, sched] = [performance.eventLoopUtilization(), schedstat()];
  });
  subscribe("http.client.request.created", (message) => {
    const { request: outgoing } = message as { request: ClientRequest };
    since("proxy: upstream request made");
    outgoing.once("response", (_: IncomingMessage) =>
      since("proxy: upstream answer's head parsed"),
    );
  });
  const tokens = new InMemoryModelTokenStore();
  const routes = createModelProxyRoutes({
    upstreams: { codex: { kind: "openai", baseUrl: `${upstreamUrl}/v1`, apiKey: "sk-trace" } },
    tokens,
    usage: new InMemoryUsageRecorder(),
    rateLimit: false,
  });
  // Served as the server serves it: the proxy's Node handler ahead of the app.
  const direct = routes.direct({ bodyLimit: { maxBytes: 32 * 1024 * 1024 } });
  const proxy = await listen(
    routes.app.fetch,
    { host: "127.0.0.1", port: 0 },
    (error) => error,
    (incoming, outgoing) => {
      mark("proxy: handler called");
      return direct(incoming, outgoing);
    },
  );
  const { token } = await mintModelToken(tokens, { jobId: "trace", ttlMs: 3_600_000 });
  return { url: `${proxy.url}${WirePath.modelProvider}/codex/responses`, token };
}

if (!isMainThread) {
  const { role, upstreamUrl, flood } = workerData as {
    role: "upstream" | "proxy";
    upstreamUrl?: string;
    flood: boolean;
  };
  parentPort!.on("message", () => parentPort!.postMessage({ marks: marks.splice(0) }));
  const ready =
    role === "upstream" ? { url: await upstreamThread(flood) } : await proxyThread(upstreamUrl!);
  parentPort!.postMessage(ready);
} else {
  await main();
}

function startThread(workerInput: object): Promise<{ worker: Worker; url: string; token: string }> {
  const worker = new Worker(new URL(import.meta.url), { workerData: workerInput });
  return new Promise((resolveReady) =>
    worker.once("message", (ready) => resolveReady({ worker, ...ready })),
  );
}

function marksOf(worker: Worker): Promise<Mark[]> {
  return new Promise((resolveMarks) => {
    worker.once("message", (message: { marks: Mark[] }) => resolveMarks(message.marks));
    worker.postMessage("marks");
  });
}

/** One request: the client marks when it sent it, got the head and got the first body byte. */
function fetchOnce(url: string, headers: Record<string, string>): Promise<void> {
  return new Promise((resolveDone, reject) => {
    mark("client: request sent");
    const outgoing = request(url, { method: "POST", headers }, (response) => {
      mark("client: head received");
      response.once("data", () => mark("client: first body byte"));
      response.resume();
      response.on("end", () => resolveDone());
    });
    outgoing.on("error", reject);
    outgoing.end(JSON.stringify({ model: "trace", stream: true, input: "go" }));
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      flood: { type: "boolean", default: false },
      rounds: { type: "string", default: "12" },
    },
  });
  const upstream = await startThread({ role: "upstream", flood: values.flood });
  const proxy = await startThread({
    role: "proxy",
    upstreamUrl: upstream.url,
    flood: values.flood,
  });
  const headers = {
    "content-type": "application/json",
    authorization: `Bearer ${proxy.token}`,
    [WireHeader.jobId]: "trace",
  };
  const rounds = Number(values.rounds);
  for (let round = 0; round < rounds; round += 1) {
    marks.length = 0;
    await fetchOnce(`${upstream.url}/v1/responses`, { "content-type": "application/json" });
    const direct = marks.find(([label]) => label === "client: first body byte")![1] - marks[0]![1];
    marks.length = 0;
    await marksOf(upstream.worker);
    await fetchOnce(proxy.url, headers);
    const timeline = [
      ...marks,
      ...(await marksOf(upstream.worker)),
      ...(await marksOf(proxy.worker)),
    ].sort((left, right) => left[1] - right[1]);
    const start = timeline[0]![1];
    const firstByte = timeline.find(([label]) => label === "client: first body byte")![1] - start;
    console.log(
      `round ${round}: first byte direct ${direct.toFixed(3)} ms, through the proxy ${firstByte.toFixed(3)} ms`,
    );
    if (round < rounds - 3) continue;
    let previous = start;
    for (const [label, at] of timeline) {
      if (at - start > firstByte + 0.001) break;
      console.log(
        `  ${(at - start).toFixed(3).padStart(8)}  +${(at - previous).toFixed(3).padStart(7)}  ${label}`,
      );
      previous = at;
    }
  }
  await upstream.worker.terminate();
  await proxy.worker.terminate();
}
