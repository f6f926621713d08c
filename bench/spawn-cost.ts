// What one child process costs the process that starts it: how long `spawn()` blocks the event
// loop (the synchronous fork and exec, which copy the parent's page tables) and the time to the
// child's exit, in a small Node process and again once the same process holds the embedded
// database (PGlite opened, as the server and the standalone CLI hold it). Every git command,
// step and sandbox of a batch run is spawned from the server process, so this is paid by each.
// Then the same process runs `git --version` through its spawn host (what `runGit` does) beside
// `execFile` of its own: the event loop held by the call, this process's CPU and the wall time
// per command.
//
//   node --conditions=source bench/spawn-cost.ts [spawns]
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDb } from "@deckhand/db";
import { type HostedExecOptions, SpawnHost } from "@deckhand/spawn-host";
import { median, percentile, reportFigure, round } from "./support/figures.ts";

const SPAWNS = Number(process.argv[2] ?? 40);

/** The milliseconds `spawn` held the thread, and the milliseconds to the child's exit. */
function once(): Promise<{ blockedMs: number; exitMs: number }> {
  return new Promise((resolveSpawn, reject) => {
    const started = performance.now();
    const child = spawn("true", [], { stdio: "ignore" });
    const blockedMs = performance.now() - started;
    child.once("error", reject);
    child.once("exit", () => resolveSpawn({ blockedMs, exitMs: performance.now() - started }));
  });
}

async function sample(label: string) {
  await once();
  const samples: { blockedMs: number; exitMs: number }[] = [];
  for (let index = 0; index < SPAWNS; index += 1) samples.push(await once());
  const blocked = samples.map((entry) => entry.blockedMs);
  const rssMib = process.memoryUsage().rss / 2 ** 20;
  console.log(
    `${label}: RSS ${Math.round(rssMib)} MiB, spawn() blocks the loop p50 ${round(median(blocked))} ms (p90 ${round(percentile(blocked, 0.9))} ms), start→exit p50 ${round(median(samples.map((entry) => entry.exitMs)))} ms`,
  );
  return { blocked: median(blocked), rssMib };
}

const GIT_OPTIONS: HostedExecOptions = {
  cwd: process.cwd(),
  env: process.env,
  maxBuffer: 1024 * 1024,
  timeoutMs: 60_000,
  killSignal: "SIGTERM",
};

/** `git --version` by `execFile` in this process, as `runGit` ran it before the spawn host. */
function gitDirectly(): Promise<void> {
  return new Promise((resolveRun, reject) => {
    const child = execFile("git", ["--version"], { env: process.env, encoding: "utf8" }, (error) =>
      error === null ? resolveRun() : reject(error),
    );
    child.stdin?.end();
  });
}

/** The loop held by starting one command, this process's CPU and wall time per command. */
async function sampleGit(label: string, run: () => Promise<void>) {
  await run();
  const blocked: number[] = [];
  const walls: number[] = [];
  const cpu = process.cpuUsage();
  for (let index = 0; index < SPAWNS; index += 1) {
    const started = performance.now();
    const running = run();
    blocked.push(performance.now() - started);
    await running;
    walls.push(performance.now() - started);
  }
  const used = process.cpuUsage(cpu);
  const cpuMs = (used.user + used.system) / 1000 / SPAWNS;
  console.log(
    `${label}: the call blocks the loop p50 ${round(median(blocked))} ms (p90 ${round(percentile(blocked, 0.9))} ms), this process's CPU ${round(cpuMs)} ms per command, wall p50 ${round(median(walls))} ms`,
  );
  return { blocked: median(blocked), cpuMs, wall: median(walls) };
}

const scratch = mkdtempSync(join(tmpdir(), "deckhand-bench-spawn-"));
try {
  const small = await sample("small Node process");
  const database = await createDb({ dataDir: join(scratch, "db") });
  const large = await sample("the same with PGlite open");
  const host = new SpawnHost();
  const direct = await sampleGit("git --version by execFile, PGlite open", gitDirectly);
  const hosted = await sampleGit("git --version through the spawn host, PGlite open", async () => {
    const { error } = await host.execFile("git", ["--version"], GIT_OPTIONS);
    if (error !== null) throw error;
  });
  host.close();
  await database.close();
  reportFigure({
    id: "spawn-blocking",
    label: "event loop blocked by one spawn() in a process holding PGlite",
    value: large.blocked,
    unit: "ms",
    anchor: { label: "the same spawn in a small Node process", value: small.blocked, unit: "ms" },
    comparison: { value: large.blocked / small.blocked, unit: "×" },
    note: `RSS ${Math.round(large.rssMib)} MiB vs ${Math.round(small.rssMib)} MiB`,
  });
  reportFigure({
    id: "spawn-host-blocking",
    label: "event loop blocked by one git command through the spawn host, PGlite open",
    value: hosted.blocked,
    unit: "ms",
    anchor: {
      label: "the same command by execFile in that process",
      value: direct.blocked,
      unit: "ms",
    },
    comparison: { value: hosted.blocked / direct.blocked, unit: "×" },
    note: `this process's CPU per command ${round(hosted.cpuMs)} ms vs ${round(direct.cpuMs)} ms; wall ${round(hosted.wall)} ms vs ${round(direct.wall)} ms`,
  });
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
