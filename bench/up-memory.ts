// Memory of an idle `deckhand up`: the resident memory (RSS) summed over its whole process tree
// once it has settled after start (goal ≤ 300 MiB), with each process listed, beside what it
// cannot go below, measured in the same run: an idle bare Node process, and a Node process that
// holds only the embedded database (PGlite opened and migrated) — the part the server's memory is
// bound to. Two configurations: a new data directory as is (no providers.json, no model
// upstream), and one with a custom ACP provider (the scripted agent), whose probe starts an agent
// process in the sandbox. With DATABASE_URL set, once more on PostgreSQL (no PGlite).
// `--breakdown` loads bench/support/trace-preload.ts into the server and prints its V8 heap,
// external and array-buffer memory (PGlite's WASM memory is an ArrayBuffer).
//
//   node --conditions=source bench/up-memory.ts [--breakdown]
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  createPostgresTestDatabase,
  type PostgresTestDatabase,
  scriptedAcpAgentCommand,
} from "@deckhand/testkit";
import { cleanEnvironment, startDeckhandUp, stopService } from "./support/deckhand-process.ts";
import {
  databaseUrlFromEnvironment,
  loadAverage,
  reportFigure,
  reportSkipped,
  round,
} from "./support/figures.ts";
import { processTree, type TreeProcess } from "./support/process-tree.ts";

const BREAKDOWN = process.argv.includes("--breakdown");
const SETTLE_SAMPLES = 5;
const SETTLE_TOLERANCE = 0.02;
const MAX_SETTLE_MS = 90_000;
const preload = fileURLToPath(new URL("./support/trace-preload.ts", import.meta.url));
const idleDatabase = fileURLToPath(new URL("./support/idle-database.ts", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "deckhand-bench-up-memory-"));
const sleep = (ms: number) => new Promise((resolveWait) => setTimeout(resolveWait, ms));
const sum = (tree: TreeProcess[], field: "rssKib" | "pssKib") =>
  tree.reduce((total, entry) => total + entry[field], 0);
const mib = (kib: number) => round(kib / 1024, 1);

/** Samples the tree every second until its RSS holds still; returns the last sample. */
async function settledTree(pid: number): Promise<TreeProcess[]> {
  const started = performance.now();
  const totals: number[] = [];
  for (;;) {
    await sleep(1_000);
    const tree = processTree(pid, true);
    totals.push(sum(tree, "rssKib"));
    const recent = totals.slice(-SETTLE_SAMPLES);
    const steady =
      recent.length === SETTLE_SAMPLES &&
      Math.max(...recent) - Math.min(...recent) <= Math.max(...recent) * SETTLE_TOLERANCE;
    if (steady || performance.now() - started > MAX_SETTLE_MS) return tree;
  }
}

/** A Node process started with `args` that prints `ready`; its tree once settled. */
async function idleProcess(args: string[]): Promise<TreeProcess[]> {
  const child = spawn(process.execPath, args, {
    cwd: scratch,
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolveReady, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("ready")) resolveReady();
    });
    child.once("exit", (code) => reject(new Error(`${args.join(" ")} exited ${code}`)));
  });
  const tree = await settledTree(child.pid!);
  child.kill("SIGTERM");
  return tree;
}

function printTree(title: string, tree: TreeProcess[]): void {
  console.log(`${title}: ${mib(sum(tree, "rssKib"))} MiB RSS, ${mib(sum(tree, "pssKib"))} MiB PSS`);
  for (const entry of tree) {
    console.log(
      `  ${String(mib(entry.rssKib)).padStart(7)} MiB RSS ${String(mib(entry.pssKib)).padStart(7)} MiB PSS  ${entry.command.slice(0, 140)}`,
    );
  }
}

interface UpFigures {
  tree: TreeProcess[];
  breakdown: Record<string, unknown> | null;
  dataDir: string;
}

/** `deckhand up` on a new data directory with `files` in it, or again on `dataDir`. */
async function idleUp(
  name: string,
  files: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  existingDataDir?: string,
): Promise<UpFigures> {
  const dataDir = existingDataDir ?? mkdtempSync(join(scratch, `data-${name}-`));
  for (const [file, content] of Object.entries(files)) {
    writeFileSync(join(dataDir, file), JSON.stringify(content));
  }
  const traceFile = join(scratch, `trace-${name}.jsonl`);
  const server = await startDeckhandUp(
    dataDir,
    BREAKDOWN ? { ...env, DECKHAND_TRACE_FILE: traceFile } : env,
    BREAKDOWN ? ["--import", preload] : [],
  );
  try {
    const tree = await settledTree(server.child.pid!);
    let breakdown: Record<string, unknown> | null = null;
    if (BREAKDOWN) {
      server.child.kill("SIGUSR2");
      await sleep(500);
      const lines = readFileSync(traceFile, "utf8").trim().split("\n");
      const memory = lines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((entry) => entry.kind === "memory");
      breakdown = memory.at(-1) ?? null;
    }
    return { tree, breakdown, dataDir };
  } finally {
    await stopService(server);
  }
}

function printBreakdown(breakdown: Record<string, unknown> | null): void {
  if (breakdown === null) return;
  const bytes = (name: string) => mib(Number(breakdown[name]) / 1024);
  const wasm = (breakdown.pgliteWasmBytes as number[]).map((size) => `${mib(size / 1024)} MiB`);
  console.log(
    `  server process: rss ${bytes("rss")} MiB = V8 heap ${bytes("heapTotal")} MiB (used ${bytes("heapUsed")}) + external ${bytes("external")} MiB (array buffers ${bytes("arrayBuffers")}) + code, stacks and native; ${breakdown.pgliteInstances} PGlite instance(s), WASM memory ${wasm.join(", ") || "none"}`,
  );
  const spaces = breakdown.spaces as Record<string, number>;
  console.log(
    `  heap spaces used: ${Object.entries(spaces)
      .filter(([, used]) => used > 1024 * 1024)
      .map(([space, used]) => `${space} ${mib(used / 1024)} MiB`)
      .join(", ")}`,
  );
}

try {
  console.log(`deckhand up, idle, load average ${loadAverage()}`);
  const bareNode = await idleProcess(["-e", "setInterval(() => {}, 60_000); console.log('ready')"]);
  const databaseOnly = await idleProcess([
    "--conditions=source",
    idleDatabase,
    join(scratch, "idle-db"),
  ]);
  const plain = await idleUp("default", {}, cleanEnvironment());
  const restarted = await idleUp("default", {}, cleanEnvironment(), plain.dataDir);
  const withProvider = await idleUp(
    "acp-provider",
    {
      "providers.json": {
        providers: {
          scripted: { extends: "acp", label: "Scripted", command: scriptedAcpAgentCommand() },
        },
      },
    },
    cleanEnvironment(),
  );
  printTree("bare node, idle", bareNode);
  printTree("PGlite alone (opened, migrated), idle", databaseOnly);
  printTree("deckhand up, new data dir, idle", plain.tree);
  printBreakdown(plain.breakdown);
  printTree("deckhand up restarted on that data dir, idle", restarted.tree);
  printBreakdown(restarted.breakdown);
  printTree("deckhand up with an ACP provider (scripted agent), idle", withProvider.tree);
  printBreakdown(withProvider.breakdown);
  reportFigure({
    id: "up-idle-memory",
    label: "deckhand up process tree, idle (sum of RSS)",
    value: sum(plain.tree, "rssKib") / 1024,
    unit: "MiB",
    anchor: { label: "PGlite alone, idle", value: sum(databaseOnly, "rssKib") / 1024, unit: "MiB" },
    comparison: { value: sum(plain.tree, "rssKib") / sum(databaseOnly, "rssKib"), unit: "×" },
    note: `${plain.tree.length} process(es), PSS ${mib(sum(plain.tree, "pssKib"))} MiB; bare node ${mib(sum(bareNode, "rssKib"))} MiB`,
  });
  reportFigure({
    id: "up-idle-memory-restart",
    label: "the same, restarted on its data dir (no initdb), idle",
    value: sum(restarted.tree, "rssKib") / 1024,
    unit: "MiB",
    anchor: { label: "PGlite alone, idle", value: sum(databaseOnly, "rssKib") / 1024, unit: "MiB" },
    comparison: { value: sum(restarted.tree, "rssKib") / sum(databaseOnly, "rssKib"), unit: "×" },
  });
  reportFigure({
    id: "up-idle-memory-provider",
    label: "deckhand up with an ACP provider configured, idle (sum of RSS)",
    value: sum(withProvider.tree, "rssKib") / 1024,
    unit: "MiB",
    anchor: { label: "PGlite alone, idle", value: sum(databaseOnly, "rssKib") / 1024, unit: "MiB" },
    comparison: {
      value: sum(withProvider.tree, "rssKib") / sum(databaseOnly, "rssKib"),
      unit: "×",
    },
    note: `${withProvider.tree.length} process(es)`,
  });
  const databaseUrl = databaseUrlFromEnvironment();
  if (databaseUrl === undefined) {
    reportSkipped({
      id: "up-idle-memory-postgres",
      label: "deckhand up on PostgreSQL, idle",
      skipped: "set DATABASE_URL to include it",
    });
  } else {
    let database: PostgresTestDatabase | null = null;
    try {
      database = await createPostgresTestDatabase(databaseUrl);
      const onPostgres = await idleUp(
        "postgres",
        {},
        cleanEnvironment({ DATABASE_URL: database.url }),
      );
      printTree("deckhand up on PostgreSQL, idle", onPostgres.tree);
      printBreakdown(onPostgres.breakdown);
      reportFigure({
        id: "up-idle-memory-postgres",
        label: "deckhand up on PostgreSQL, idle (sum of RSS)",
        value: sum(onPostgres.tree, "rssKib") / 1024,
        unit: "MiB",
        anchor: { label: "bare node", value: sum(bareNode, "rssKib") / 1024, unit: "MiB" },
        comparison: { value: sum(onPostgres.tree, "rssKib") / sum(bareNode, "rssKib"), unit: "×" },
      });
    } finally {
      await database?.drop();
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
