// Runs every benchmark in this folder, one after another, in one process tree, so the figures
// they print come from the same machine state, then prints the performance issue's table: each
// figure beside the anchor it was measured against in this run (the shell oracle, a bare spawn,
// `xargs -P`, a `podman run` loop, a bare node:http pipe, the upstream direct), the issue's
// "before" and its goal. `pnpm bench` (or `npm run bench`) calls this; names given after `--`
// run only the benchmarks whose file names start with them: `npm run bench -- batch-preview`.
// Figures are reported, never asserted: a busy machine slows them, it does not fail them.
import { spawn } from "node:child_process";
import { availableParallelism, cpus } from "node:os";
import { fileURLToPath } from "node:url";
import {
  type Figure,
  formatComparison,
  loadAverage,
  parseFigureLine,
  round,
  type SkippedFigure,
} from "./support/figures.ts";

const benchmarks = [
  "headtail.ts",
  "process-api.ts",
  "batch-spec.ts",
  "sandbox.ts",
  "spawn-cost.ts",
  "batch-preview.ts",
  "batch-run.ts",
  "batch-apply.ts",
  "queue.ts",
  "model-proxy.ts",
  "session-stream.ts",
  "agent-turn.ts",
  "up-memory.ts",
  "cli-startup.ts",
  "native-turn.ts",
];

interface Row {
  id: string;
  row: string;
  before: string;
  goal: string;
}

/** The table, in its order: what each figure was on old main and what it must reach. */
const GAPS: Row[] = [
  {
    id: "preview-standalone-cold",
    row: "`batch preview` 1 repo × 1 `sed` step, standalone (new data dir)",
    before: "10.0–10.8 s",
    goal: "≤ 1.5 s",
  },
  {
    id: "preview-standalone-cached",
    row: "the same, re-run fully cached (same data dir)",
    before: "5.5 s",
    goal: "≤ 0.8 s",
  },
  {
    id: "preview-standalone-cold-bundled",
    row: "the standalone cold run with the bundled bin users install",
    before: "—",
    goal: "≤ 1.5 s",
  },
  {
    id: "preview-standalone-cached-bundled",
    row: "its fully cached re-run, bundled bin",
    before: "—",
    goal: "≤ 0.8 s",
  },
  {
    id: "preview-server-cold",
    row: "the same with `--server` on a running `deckhand up`, cold (CLI from the sources)",
    before: "1.8 s",
    goal: "≤ 0.4 s",
  },
  {
    id: "preview-server-cached",
    row: "the same with `--server`, cached (CLI from the sources)",
    before: "1.0 s",
    goal: "≤ 0.25 s",
  },
  {
    id: "preview-server-cold-bundled",
    row: "`--server`, cold, with the bundled bin users install",
    before: "—",
    goal: "≤ 0.4 s",
  },
  {
    id: "preview-server-cached-bundled",
    row: "`--server`, cached, bundled bin",
    before: "—",
    goal: "≤ 0.25 s",
  },
  {
    id: "shell-oracle",
    row: "shell oracle: worktree, `sh -c`, `git diff`",
    before: "0.11 s",
    goal: "(the limit)",
  },
  {
    id: "batch-cold-vs-ideal",
    row: "100 repos × 3 steps of 0.2 s, cold / ideal",
    before: "3.93×",
    goal: "≤ 1.2×",
  },
  {
    id: "batch-cold-vs-xargs",
    row: "the same, cold / `xargs -P` doing the same work",
    before: "3.13×",
    goal: "≤ 1.1×",
  },
  { id: "batch-cached-vs-cold", row: "fully cached re-run / cold", before: "17%", goal: "≤ 3%" },
  {
    id: "batch-container-vs-podman",
    row: "100 × 1 container steps / `podman run` in an `xargs -P` loop",
    before: "2.15×",
    goal: "≤ 1.15×",
  },
  {
    id: "up-idle-memory",
    row: "`deckhand up` process tree, idle",
    before: "733 MiB",
    goal: "≤ 300 MiB",
  },
  {
    id: "turn-native-server-work",
    row: "native agent text turn, server work beyond the model request",
    before: "296 ms",
    goal: "≤ 20 ms",
  },
  {
    id: "turn-acp-text",
    row: "scripted ACP agent text turn, end to end",
    before: "235 ms p50",
    goal: "≤ 30 ms",
  },
  {
    id: "events-persisted",
    row: "session events persisted one by one, no client",
    before: "478/s",
    goal: "≥ 10,000/s",
  },
  {
    id: "events-streamed",
    row: "session events streamed as a turn streams them (group commit), no client",
    before: "—",
    goal: "≥ 10,000/s",
  },
  {
    id: "proxy-cpu",
    row: "model proxy CPU per MB streamed / a bare node:http pipe",
    before: "4.68×",
    goal: "≤ 1.2×",
  },
  {
    id: "proxy-ttfb",
    row: "model proxy time to first byte over direct",
    before: "+7.1 ms",
    goal: "≤ +1 ms",
  },
];

/** What holds and must keep holding. */
const HOLDS: Row[] = [
  {
    id: "process-start-exit",
    row: "process start→exit / a bare spawn",
    before: "1.20×",
    goal: "keep",
  },
  {
    id: "output-capture",
    row: "output capture / Node's own pipe read",
    before: "0.99×",
    goal: "keep",
  },
  {
    id: "spec-validation",
    row: "spec validation / a YAML parse",
    before: "1.3–1.4×",
    goal: "keep",
  },
  { id: "queue-notify", row: "queue pickup by NOTIFY, p50", before: "3.9 ms", goal: "keep" },
  { id: "cli-version", row: "CLI `version` / `node -e 0`", before: "1.11×", goal: "keep" },
  {
    id: "native-loop-overhead",
    row: "native agent loop overhead per turn",
    before: "5 ms",
    goal: "keep",
  },
  {
    id: "headtail-writes",
    row: "head+tail 64 KiB writes / a copy",
    before: "1.36×",
    goal: "keep",
  },
];

const only = process.argv.slice(2);
const directory = fileURLToPath(new URL(".", import.meta.url));
const figures = new Map<string, Figure | SkippedFigure>();
let failed = 0;

/** Runs one benchmark, echoing its output and keeping its FIGURE lines. */
function runBenchmark(file: string): Promise<number | null> {
  const child = spawn(
    process.execPath,
    ["--conditions=source", "--expose-gc", `${directory}${file}`],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let pending = "";
  child.stdout.on("data", (chunk: Buffer) => {
    process.stdout.write(chunk);
    pending += chunk.toString("utf8");
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      const figure = parseFigureLine(line);
      if (figure !== null) figures.set(figure.id, figure);
    }
  });
  return new Promise((resolveRun) => child.once("close", (code) => resolveRun(code)));
}

function measured(figure: Figure | SkippedFigure | undefined): [string, string, string] {
  if (figure === undefined) return ["not run", "", ""];
  if ("skipped" in figure) return [`not measured: ${figure.skipped}`, "", ""];
  const value = `${round(figure.value, figure.value >= 100 ? 0 : 3)} ${figure.unit}`;
  const anchor = figure.anchor
    ? `${figure.anchor.label} ${round(figure.anchor.value, figure.anchor.value >= 100 ? 0 : 3)} ${figure.anchor.unit}`
    : "";
  return [value, anchor, figure.comparison ? formatComparison(figure.comparison) : ""];
}

function printTable(title: string, rows: Row[]): void {
  console.log(`\n${title}\n`);
  // The note carries what a figure alone does not say, such as the CPU a standalone run used.
  console.log("| figure | measured | anchor (same run) | stated as | before | goal | note |");
  console.log("|---|---|---|---|---|---|---|");
  for (const row of rows) {
    const figure = figures.get(row.id);
    const [value, anchor, comparison] = measured(figure);
    const note = figure !== undefined && "note" in figure ? (figure.note ?? "") : "";
    console.log(
      `| ${row.row} | ${value} | ${anchor} | ${comparison} | ${row.before} | ${row.goal} | ${note} |`,
    );
  }
}

const startedLoad = loadAverage();
const started = performance.now();
for (const file of benchmarks) {
  if (only.length > 0 && !only.some((wanted) => file.startsWith(wanted))) continue;
  console.log(`\n=== ${file} ===`);
  const code = await runBenchmark(file);
  if (code !== 0) {
    failed += 1;
    console.error(`${file} failed with ${code}`);
  }
}

const listed = new Set([...GAPS, ...HOLDS].map((row) => row.id));
const others = [...figures.values()].filter((figure) => !listed.has(figure.id));
console.log(
  `\n=== summary: ${cpus().length} CPUs (parallelism ${availableParallelism()}), Node ${process.version}, load average ${startedLoad} at the start and ${loadAverage()} at the end, ${round((performance.now() - started) / 60_000, 1)} min ===`,
);
if (only.length === 0 || GAPS.some((row) => figures.has(row.id))) {
  printTable("The issue's figures (before = old main, as the issue measured it)", GAPS);
}
if (only.length === 0 || HOLDS.some((row) => figures.has(row.id))) {
  printTable("What holds (keep it so)", HOLDS);
}
if (others.length > 0) {
  console.log("\nAlso measured (the sandbox's cost, PostgreSQL, query counts)\n");
  console.log("| figure | measured | anchor (same run) | stated as | note |");
  console.log("|---|---|---|---|---|");
  for (const figure of others) {
    const [value, anchor, comparison] = measured(figure);
    const note = "note" in figure ? (figure.note ?? "") : "";
    console.log(`| ${figure.label} | ${value} | ${anchor} | ${comparison} | ${note} |`);
  }
}
process.exitCode = failed === 0 ? 0 : 1;
