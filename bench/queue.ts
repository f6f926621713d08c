// Measures @deckhand/db's durable queue: enqueue→handler-start latency (p50/p99) when workers
// are woken by NOTIFY and when they only poll, and tasks per second with 1 and 4 workers. Runs
// on embedded PGlite, and on PostgreSQL too when DATABASE_URL is set (tasks it adds are
// deleted afterwards).
//
//   node --conditions=source bench/queue.ts
import { randomUUID } from "node:crypto";
import {
  createDb,
  type DbHandle,
  type DbKind,
  enqueue,
  TaskRegistry,
  TaskWorker,
} from "@deckhand/db";
import { reportFigure, reportSkipped } from "./support/figures.ts";

const LATENCY_SAMPLES = 60;
const POLL_INTERVAL_MS = 250;
const THROUGHPUT_TASKS = 1_000;

interface LatencyFigures {
  p50Ms: number;
  p99Ms: number;
}

function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]!;
}

const round = (value: number) => Math.round(value * 100) / 100;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function cleanUp(database: DbHandle, type: string): Promise<void> {
  await database.query("delete from tasks where type = $1", [type]);
}

/** One task at a time: the time from calling enqueue to the handler starting. */
async function latency(database: DbHandle, listen: boolean): Promise<LatencyFigures> {
  const type = `bench.latency.${randomUUID()}`;
  let started: (() => void) | undefined;
  const registry = new TaskRegistry().register(type, {
    async handle() {
      started?.();
    },
  });
  const worker = new TaskWorker({
    database,
    registry,
    listen,
    pollIntervalMs: listen ? 60_000 : POLL_INTERVAL_MS,
  });
  await worker.start();
  const samples: number[] = [];
  try {
    for (let index = 0; index < LATENCY_SAMPLES + 5; index += 1) {
      const handlerStarted = new Promise<void>((resolve) => {
        started = resolve;
      });
      const begin = performance.now();
      await enqueue(database.db, { type });
      await handlerStarted;
      // The first few warm up connections and prepared plans.
      if (index >= 5) samples.push(performance.now() - begin);
      // Land at different points of the poll cycle.
      await sleep(Math.floor(Math.random() * 20));
    }
  } finally {
    await worker.stop();
    await cleanUp(database, type);
  }
  return { p50Ms: round(percentile(samples, 0.5)), p99Ms: round(percentile(samples, 0.99)) };
}

/** Tasks per second draining a backlog of no-op tasks with `workerCount` workers. */
async function throughput(database: DbHandle, workerCount: number): Promise<number> {
  const type = `bench.throughput.${randomUUID()}`;
  await database.db.transaction(async (tx) => {
    for (let index = 0; index < THROUGHPUT_TASKS; index += 1) {
      await enqueue(tx, { type, payload: { index } });
    }
  });
  let done = 0;
  let finished: (() => void) | undefined;
  const allDone = new Promise<void>((resolve) => {
    finished = resolve;
  });
  const registry = new TaskRegistry().register(type, {
    async handle() {
      done += 1;
      if (done === THROUGHPUT_TASKS) finished?.();
    },
  });
  const workers = Array.from(
    { length: workerCount },
    () => new TaskWorker({ database, registry, pollIntervalMs: 50 }),
  );
  const begin = performance.now();
  await Promise.all(workers.map((worker) => worker.start()));
  await allDone;
  const seconds = (performance.now() - begin) / 1000;
  await Promise.all(workers.map((worker) => worker.stop()));
  await cleanUp(database, type);
  return Math.round(THROUGHPUT_TASKS / seconds);
}

interface BackendFigures {
  notify: LatencyFigures;
  polling: LatencyFigures & { intervalMs: number };
  tasksPerSecond1Worker: number;
  tasksPerSecond4Workers: number;
}

async function measure(kind: DbKind, databaseUrl: string | undefined): Promise<BackendFigures> {
  const database = await createDb(kind === "postgres" ? { databaseUrl } : {});
  try {
    const notify = await latency(database, true);
    const polling = await latency(database, false);
    const tasksPerSecond1Worker = await throughput(database, 1);
    const tasksPerSecond4Workers = await throughput(database, 4);
    return {
      notify,
      polling: { ...polling, intervalMs: POLL_INTERVAL_MS },
      tasksPerSecond1Worker,
      tasksPerSecond4Workers,
    };
  } finally {
    await database.close();
  }
}

const databaseUrl = process.env.DATABASE_URL || undefined;
const result: Partial<Record<DbKind, BackendFigures>> = {};
result.pglite = await measure("pglite", undefined);
if (databaseUrl) result.postgres = await measure("postgres", databaseUrl);

const rows: [string, string][] = [];
for (const [kind, figures] of Object.entries(result)) {
  rows.push(
    [`${kind} latency, NOTIFY`, `p50 ${figures.notify.p50Ms} ms  p99 ${figures.notify.p99Ms} ms`],
    [
      `${kind} latency, polling every ${POLL_INTERVAL_MS} ms`,
      `p50 ${figures.polling.p50Ms} ms  p99 ${figures.polling.p99Ms} ms`,
    ],
    [`${kind} throughput, 1 worker`, `${figures.tasksPerSecond1Worker} tasks/s`],
    [`${kind} throughput, 4 workers`, `${figures.tasksPerSecond4Workers} tasks/s`],
  );
}
if (!databaseUrl) rows.push(["postgres", "skipped: set DATABASE_URL to include it"]);
const width = Math.max(...rows.map(([label]) => label.length));
for (const [label, value] of rows) console.log(`${label.padEnd(width)}  ${value.padStart(28)}`);
console.log(`BENCH ${JSON.stringify(result)}`);
for (const [kind, figures] of Object.entries(result)) {
  reportFigure({
    id: kind === "pglite" ? "queue-notify" : "queue-notify-postgres",
    label: `queue pickup by NOTIFY, p50 (${kind})`,
    value: figures.notify.p50Ms,
    unit: "ms",
    anchor: {
      label: `polling every ${POLL_INTERVAL_MS} ms, p50`,
      value: figures.polling.p50Ms,
      unit: "ms",
    },
  });
}
if (!databaseUrl) {
  reportSkipped({
    id: "queue-notify-postgres",
    label: "queue pickup by NOTIFY on PostgreSQL",
    skipped: "set DATABASE_URL to include it",
  });
}
