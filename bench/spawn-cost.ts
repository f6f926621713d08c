// What one child process costs the process that starts it: how long `spawn()` blocks the event
// loop (the synchronous fork and exec, which copy the parent's page tables) and the time to the
// child's exit, in a small Node process and again once the same process holds the embedded
// database (PGlite opened, as the server and the standalone CLI hold it). Every git command,
// step and sandbox of a batch run is spawned from the server process, so this is paid by each.
//
//   node --conditions=source bench/spawn-cost.ts [spawns]
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDb } from "@deckhand/db";
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

const scratch = mkdtempSync(join(tmpdir(), "deckhand-bench-spawn-"));
try {
  const small = await sample("small Node process");
  const database = await createDb({ dataDir: join(scratch, "db") });
  const large = await sample("the same with PGlite open");
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
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
