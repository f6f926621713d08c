// Where a batch run's time goes between its steps: N repositories × 3 steps of a short sleep run
// through the run service and a task worker (as bench/batch-run.ts does), cold and then fully
// cached, with every workspace job's start and end, every child process and every SQL statement
// recorded in process. It prints how busy the worker's slots were (the time with 0, 1, 2 jobs
// running), the gap between a job ending and the next one starting, each job's time before its
// first step, between steps and after its last, the processes per job by command, and the
// statements per job by text. Not part of `npm run bench`: a tool for finding the time.
//
//   node --conditions=source [--cpu-prof] bench/profile-batch-run.ts [--repositories 20]
//     [--sandbox auto|none] [--runtime local|container]
import { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { type IntervalHistogram, monitorEventLoopDelay } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { BatchRunService, createRunEventHub, ExecutionEnvironment } from "@deckhand/batches";
import { createDb, TaskRegistry, TaskWorker } from "@deckhand/db";
import { detectSandbox, ProcessLauncher } from "@deckhand/sandbox";
import { SpawnHost } from "@deckhand/spawn-host";
import { BUSYBOX_TEST_IMAGE } from "@deckhand/testkit";
import {
  generateRepositories,
  runFinished,
  specYaml,
  stepScript,
} from "./support/batch-run-fixtures.ts";
import { loadAverage, median, percentile, round } from "./support/figures.ts";
import { StatementCounter, traceSql } from "./support/sql-trace.ts";

const timeline: { t: number; text: string }[] = [];

const { values } = parseArgs({
  options: {
    repositories: { type: "string", default: "20" },
    sandbox: { type: "string", default: "auto" },
    runtime: { type: "string", default: "local" },
  },
});
const REPOSITORIES = Number(values.repositories);
const PARALLELISM = availableParallelism();
const runtime = values.runtime === "container" ? "container" : "local";

const podmanCommands = new Set([
  "run",
  "create",
  "start",
  "wait",
  "rm",
  "image",
  "inspect",
  "pull",
  "version",
  "info",
  "ps",
  "kill",
  "stop",
  "exists",
]);

interface Spawned {
  command: string;
  argsText: string;
  t: number;
  ms: number;
}
const spawned: Spawned[] = [];
/** The time the event loop spent inside spawn() calls. */
let spawnBlockedMs = 0;
const prototype = ChildProcess.prototype as unknown as {
  spawn(this: ChildProcess, options: { file: string; args?: unknown[] }): unknown;
};
const originalSpawn = prototype.spawn;
prototype.spawn = function tracedSpawn(this: ChildProcess, options) {
  const t = performance.now();
  const result = originalSpawn.call(this, options);
  // spawn() returns once the child has exec'd: the event loop waits that long.
  spawnBlockedMs += performance.now() - t;
  record(this, options.file, (options.args ?? []).slice(1).map(String), t);
  return result;
};
// Processes the spawn host starts (the steps' bubblewrap and slirp4netns, `podman run`) are
// listed too; the loop's time in the call is counted, the fork is the host's. Those it leaves to
// this process (before it is ready) go through `spawn()` above, and are not counted twice.
const originalHostedSpawn = SpawnHost.prototype.spawn;
SpawnHost.prototype.spawn = function tracedHostedSpawn(this: SpawnHost, file, args, options) {
  const t = performance.now();
  const child = originalHostedSpawn.call(this, file, args, options);
  if (child.constructor !== ChildProcess) {
    spawnBlockedMs += performance.now() - t;
    record(child, file, [...args].map(String), t);
  }
  return child;
};

function record(child: ChildProcess, path: string, args: string[], t: number): void {
  // git's subcommand is its first argument that is not an option or an option's value.
  const file = path.split("/").at(-1)!;
  const sub =
    file === "git"
      ? args.find(
          (arg, index) =>
            !arg.startsWith("-") && args[index - 1] !== "-c" && args[index - 1] !== "-C",
        )
      : file === "podman" || file === "docker"
        ? args
            .filter((arg) => podmanCommands.has(arg))
            .slice(0, 2)
            .join(" ")
        : undefined;
  const entry: Spawned = {
    command: sub === undefined ? file : `${file} ${sub}`,
    argsText: args.join(" "),
    t,
    ms: 0,
  };
  child.once("exit", () => {
    entry.ms = performance.now() - t;
    spawned.push(entry);
  });
}

interface JobSpan {
  workspaceId: string;
  start: number;
  end: number;
}

async function main(): Promise<void> {
  const scratch = mkdtempSync(join(tmpdir(), "deckhand-profile-batch-run-"));
  const capability =
    values.sandbox === "none"
      ? { kind: "none" as const, reason: "asked for" }
      : await detectSandbox("auto");
  const launcher = new ProcessLauncher({ capability });
  const database = await createDb({ dataDir: join(scratch, "db") });
  const counter = await StatementCounter.create();
  await traceSql((statement) => {
    timeline.push({ t: statement.t, text: statement.text.replace(/\s+/g, " ") });
  });
  const spans: JobSpan[] = [];
  try {
    const root = join(scratch, "code");
    generateRepositories(root, REPOSITORIES);
    const service = new BatchRunService({
      database,
      codeHosts: () => [{ type: "directory", path: root }],
      environment: new ExecutionEnvironment({
        directories: {
          cacheDirectory: join(scratch, "cache"),
          workDirectory: join(scratch, "work"),
          hookDirectory: join(scratch, "hooks"),
        },
        outerEnvironment: { PATH: process.env.PATH },
        launcher,
        containerDetection: { restrictedHost: true },
      }),
    });
    const registry = new TaskRegistry();
    service.register(registry);
    const run = registry.run.bind(registry);
    registry.run = async (type, payload, context) => {
      const span = {
        workspaceId: (payload as { workspace_id: string }).workspace_id,
        start: performance.now(),
        end: 0,
      };
      try {
        await run(type, payload, context);
      } finally {
        span.end = performance.now();
        spans.push(span);
      }
    };
    const worker = new TaskWorker({ database, registry, concurrency: PARALLELISM });
    await worker.start();
    const feed = createRunEventHub(database);
    await feed.start();
    const steps = [0, 1, 2].map(stepScript);
    const source =
      runtime === "container" ? specYaml([stepScript(0)], BUSYBOX_TEST_IMAGE) : specYaml(steps);
    console.log(
      `${REPOSITORIES} repositories, parallelism ${PARALLELISM}, sandbox ${launcher.sandbox}, runtime ${runtime}, load average ${loadAverage()}`,
    );
    for (const label of ["cold", "cached"]) {
      spans.length = 0;
      spawned.length = 0;
      counter.start();
      const cpuBefore = process.cpuUsage();
      const loopBefore = performance.eventLoopUtilization();
      const loopDelay = monitorEventLoopDelay({ resolution: 5 });
      loopDelay.enable();
      const spawnBlockedBefore = spawnBlockedMs;
      const started = performance.now();
      const created = await service.createRun({ source, options: { runtime } });
      const createdAt = performance.now();
      await runFinished(feed, created.id);
      const state = await service.getRun(created.id);
      if (state.status !== "completed") {
        // Which workspaces failed, and why: a run that fails on a loaded machine says so.
        const failed = (await service.listWorkspaces(created.id)).filter(
          (workspace) => workspace.state !== "completed",
        );
        const why = failed.map((workspace) => `${workspace.repository}: ${workspace.error}`);
        throw new Error(`run ${state.status}: ${state.error}\n${why.join("\n")}`);
      }
      const ended = performance.now();
      const statements = await counter.stop();
      const cpu = process.cpuUsage(cpuBefore);
      const loop = performance.eventLoopUtilization(loopBefore).utilization;
      loopDelay.disable();
      report(label, {
        loopDelay,
        spawnBlockedMs: spawnBlockedMs - spawnBlockedBefore,
        started,
        createdAt,
        ended,
        spans,
        statements,
        cpu,
        loop,
        counter,
        timeline: timeline.splice(0),
      });
    }
    await feed.stop();
    await worker.stop();
  } finally {
    await database.close();
    await launcher.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

function report(
  label: string,
  run: {
    started: number;
    createdAt: number;
    ended: number;
    spans: JobSpan[];
    statements: { count: number; engineMs: number };
    cpu: NodeJS.CpuUsage;
    loop: number;
    loopDelay: IntervalHistogram;
    spawnBlockedMs: number;
    counter: StatementCounter;
    timeline: { t: number; text: string }[];
  },
): void {
  const { started, createdAt, ended, spans } = run;
  console.log(`\n=== ${label}: ${round((ended - started) / 1000, 2)} s wall`);
  // A run whose workspaces were all complete at its creation ran no job.
  const jobs =
    spans.length === 0
      ? "no job ran (every workspace was complete at the run's creation)"
      : `first job starts ${round(Math.min(...spans.map((span) => span.start)) - started)} ms in; last ends ${round(ended - Math.max(...spans.map((span) => span.end)))} ms before the run is seen done`;
  console.log(`  createRun (resolve, store, queue): ${round(createdAt - started)} ms; ${jobs}`);
  console.log(
    `  this process: CPU ${round((run.cpu.user + run.cpu.system) / 1e6, 2)} s (user ${round(run.cpu.user / 1e6, 2)}), event loop busy ${round(run.loop * 100, 1)} %`,
  );
  const delayMs = (nanoseconds: number) => round(nanoseconds / 1e6, 1);
  console.log(
    `  event loop delay (5 ms resolution): median ${delayMs(run.loopDelay.percentile(50))} ms, p99 ${delayMs(run.loopDelay.percentile(99))} ms, max ${delayMs(run.loopDelay.max)} ms; inside spawn() ${round(run.spawnBlockedMs)} ms (${round(run.spawnBlockedMs / REPOSITORIES)} ms per job)`,
  );
  console.log(
    `  SQL: ${run.statements.count} statements (${round(run.statements.count / REPOSITORIES, 1)} per job), ${round(run.statements.engineMs)} ms in PGlite's engine`,
  );
  // Slot occupancy over the run: how long 0, 1, … jobs were running at once.
  const edges = spans
    .flatMap((span) => [
      { t: span.start, delta: 1 },
      { t: span.end, delta: -1 },
    ])
    .sort((left, right) => left.t - right.t);
  const occupancy = new Map<number, number>();
  let running = 0;
  let previous = started;
  for (const edge of edges) {
    occupancy.set(running, (occupancy.get(running) ?? 0) + (edge.t - previous));
    running += edge.delta;
    previous = edge.t;
  }
  occupancy.set(running, (occupancy.get(running) ?? 0) + (ended - previous));
  console.log(
    `  jobs running at once: ${[...occupancy.entries()]
      .sort((left, right) => left[0] - right[0])
      .map(([count, ms]) => `${count}: ${round(ms / 1000, 2)} s`)
      .join(", ")}`,
  );
  // The gap from each job's end to the next job's start (the slot it freed taken again).
  const starts = spans.map((span) => span.start).sort((left, right) => left - right);
  const ends = spans.map((span) => span.end).sort((left, right) => left - right);
  const gaps: number[] = [];
  for (const end of ends) {
    const next = starts.find((start) => start >= end);
    if (next !== undefined) gaps.push(next - end);
  }
  if (gaps.length > 0) {
    console.log(
      `  job end → next job start: median ${round(median(gaps))} ms, p90 ${round(percentile(gaps, 0.9))} ms`,
    );
  }
  const durations = spans.map((span) => span.end - span.start);
  console.log(
    `  job duration: median ${round(median(durations))} ms, p90 ${round(percentile(durations, 0.9))} ms`,
  );
  // Within each job: before its first step process, the step processes, after the last.
  const stepCommand = (entry: Spawned) =>
    entry.command === "bwrap" ||
    entry.command === "sh" ||
    entry.command === "podman run" ||
    entry.command === "podman start";
  const before: number[] = [];
  const after: number[] = [];
  const between: number[] = [];
  for (const span of spans) {
    const steps = spawned
      .filter(
        (entry) =>
          stepCommand(entry) &&
          entry.argsText.includes(span.workspaceId) &&
          entry.t >= span.start &&
          entry.t <= span.end,
      )
      .sort((left, right) => left.t - right.t);
    if (steps.length === 0) continue;
    before.push(steps[0]!.t - span.start);
    const last = steps.at(-1)!;
    after.push(span.end - (last.t + last.ms));
    for (let index = 1; index < steps.length; index += 1) {
      const prior = steps[index - 1]!;
      between.push(steps[index]!.t - (prior.t + prior.ms));
    }
  }
  const firstStep = spawned
    .filter(
      (entry) =>
        stepCommand(entry) && spans.some((span) => entry.argsText.includes(span.workspaceId)),
    )
    .reduce((first, entry) => Math.min(first, entry.t), Number.POSITIVE_INFINITY);
  if (Number.isFinite(firstStep)) {
    // What a run pays once before any step: resolving, queueing, runtime detection, the first
    // image look-up and shell probe of a container run.
    console.log(`  first step process starts ${round(firstStep - started)} ms into the run`);
  }
  if (before.length > 0) {
    console.log(
      `  per job: before the first step ${round(median(before))} ms, between steps ${round(median(between))} ms, after the last ${round(median(after))} ms (medians)`,
    );
  }
  const byCommand = new Map<string, { count: number; ms: number }>();
  for (const entry of spawned) {
    const total = byCommand.get(entry.command) ?? { count: 0, ms: 0 };
    total.count += 1;
    total.ms += entry.ms;
    byCommand.set(entry.command, total);
  }
  // One job in the middle of the run, its processes and statements in order.
  const sample = [...spans].sort((left, right) => left.start - right.start)[
    Math.floor(spans.length / 2)
  ];
  if (sample !== undefined) {
    console.log(`  one job's timeline (ms from its start, duration):`);
    const events = [
      ...spawned
        .filter((entry) => entry.t >= sample.start && entry.t <= sample.end)
        .map((entry) => ({ t: entry.t, text: `${entry.command} (${round(entry.ms, 1)})` })),
      ...run.timeline
        .filter((statement) => statement.t >= sample.start && statement.t <= sample.end)
        .map((statement) => ({ t: statement.t, text: `  sql ${statement.text.slice(0, 70)}` })),
    ].sort((left, right) => left.t - right.t);
    for (const event of events) {
      console.log(`    ${String(round(event.t - sample.start, 1)).padStart(7)}  ${event.text}`);
    }
    console.log(`    ${String(round(sample.end - sample.start, 1)).padStart(7)}  end`);
  }
  console.log("  processes per job (count, median ms each):");
  for (const [command, total] of [...byCommand.entries()].sort(
    (left, right) => right[1].count - left[1].count,
  )) {
    const each = spawned.filter((entry) => entry.command === command).map((entry) => entry.ms);
    console.log(
      `    ${String(round(total.count / REPOSITORIES, 2)).padStart(6)}  ${command} (${round(median(each), 1)} ms)`,
    );
  }
  console.log("  statements per job:");
  const texts = [...run.counter.byText].sort((left, right) => right[1] - left[1]);
  for (const [text, count] of texts.slice(0, 25)) {
    console.log(`    ${String(round(count / REPOSITORIES, 2)).padStart(6)}  ${text}`);
  }
}

await main();
