// Where a standalone `deckhand batch preview` (1 repository × 1 sed step) spends its time: the
// CLI is run with the trace preload (bench/support/trace-preload.ts) and --cpu-prof, on a new
// data directory (cold) and again on the same one (cached), and each run is taken apart into
// phases from what the trace saw: Node and module loading, PGlite's open (initdb on a new data
// directory), migrations, sandbox detection, the server's services starting, the run created
// (workspaces resolved), the workspace job (checkout, step, diff, events), shutdown. Each phase
// lists its SQL statements, child processes and CPU by owner (package) from the CPU profile.
// Not part of `npm run bench`: a tool for finding the time, not a figure.
//
// --bundled profiles the bundled bin users install (apps/cli/dist, built beforehand) instead of
// the sources.
//
//   node --conditions=source bench/profile-batch-preview.ts [--sandbox none] [--bundled] [--keep DIR]
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { ownerOf } from "./support/cpu-profile-summary.ts";
import {
  bundledCliEntry,
  type CliRun,
  cleanEnvironment,
  createRepository,
  expectSuccess,
  runCli,
} from "./support/deckhand-process.ts";
import { loadAverage, round } from "./support/figures.ts";
import { writeSedSpec } from "./support/sed-spec.ts";

const { values } = parseArgs({
  options: {
    sandbox: { type: "string", default: "auto" },
    keep: { type: "string" },
    bundled: { type: "boolean", default: false },
  },
});
const preload = fileURLToPath(new URL("./support/trace-preload.ts", import.meta.url));
const scratch = values.keep ?? mkdtempSync(join(tmpdir(), "deckhand-profile-preview-"));
mkdirSync(scratch, { recursive: true });
const code = join(scratch, "code");
const repository = join(code, "github.com/acme/one");
createRepository(repository, { "README.md": "# one\n\nThe old way.\n" });
const spec = writeSedSpec(scratch, "new");
const dataDir = join(scratch, "data");
mkdirSync(dataDir, { recursive: true });
writeFileSync(join(dataDir, "config.json"), JSON.stringify({ sandbox: values.sandbox }));

type Entry = Record<string, unknown> & { kind: string; t?: number; ms?: number };

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string } }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** CPU ms by owner within [from, to) of the process's clock (performance.now()). */
function cpuByOwner(profile: CpuProfile, origin: number, from: number, to: number) {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const owners = new Map<string, number>();
  let clock = origin;
  profile.samples.forEach((sample, index) => {
    const ms = (profile.timeDeltas[index] ?? 0) / 1000;
    clock += ms;
    if (clock < from || clock >= to) return;
    const frame = nodes.get(sample)!.callFrame;
    const owner = ownerOf(frame.url, frame.functionName);
    owners.set(owner, (owners.get(owner) ?? 0) + ms);
  });
  return [...owners].sort((left, right) => right[1] - left[1]);
}

interface Phase {
  name: string;
  from: number;
  to: number;
}

/** Phase boundaries (process clock, ms) from the trace's landmarks. */
function phasesOf(entries: Entry[], exitAt: number): Phase[] {
  const first = (predicate: (entry: Entry) => boolean) => entries.find(predicate);
  const opens = entries.filter((entry) => entry.kind === "pglite-open");
  const mainOpen = opens.find((entry) => entry.dataDir !== "(options)") ?? opens[0];
  const sql = entries.filter((entry) => entry.kind === "sql");
  const probe = first(
    (entry) => entry.kind === "spawn" && String(entry.file).endsWith("bwrap") && entry.t! < 1e12,
  );
  const listen = first((entry) => entry.kind === "sql" && String(entry.text).startsWith("LISTEN"));
  const createRun = first((entry) => entry.kind === "http-in" && entry.method === "POST");
  const afterCreate = (entry: Entry) => createRun !== undefined && entry.t! > createRun.t!;
  // The job is under way once its workspace is marked running.
  const jobStart = sql.find(
    (entry) =>
      afterCreate(entry) && String(entry.text).startsWith('update "workspaces" set "status"'),
  );
  const step = first(
    (entry) =>
      entry.kind === "spawn" && afterCreate(entry) && /(bwrap|bash|sh)$/.test(String(entry.file)),
  );
  const done = sql.find((entry) =>
    String(entry.text).startsWith("update tasks set status = 'succeeded'"),
  );
  const marks: [string, number | undefined][] = [
    ["node start, module loading, config", mainOpen?.t],
    ["PGlite open (initdb when new)", mainOpen ? mainOpen.t! + mainOpen.ms! : undefined],
    ["migrations (check or apply)", probe?.t],
    ["sandbox detection", listen?.t],
    ["services start: hubs, workers, HTTP listen", createRun?.t],
    ["create run (resolve workspaces), queue pickup", jobStart?.t],
    ["checkout", step?.t],
    ["the step", step ? step.t! + step.ms! : undefined],
    ["diff, cache, events, workspace finished", done ? done.t! + done.ms! : undefined],
    ["run finished, stream end, shutdown, exit", exitAt],
  ];
  const phases: Phase[] = [];
  let from = 0;
  for (const [name, to] of marks) {
    if (to === undefined) continue;
    phases.push({ name, from, to });
    from = to;
  }
  return phases;
}

function report(label: string, run: CliRun, traceFile: string, profileDir: string): void {
  const entries = readFileSync(traceFile, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Entry);
  const summary = entries.find((entry) => entry.kind === "summary");
  const exitAt = summary?.t ?? run.ms;
  const profileFile = readdirSync(profileDir).find((file) => file.endsWith(".cpuprofile"));
  const profile = profileFile
    ? (JSON.parse(readFileSync(join(profileDir, profileFile), "utf8")) as CpuProfile)
    : null;
  // The profile's clock starts when profiling starts, just before the preload's first line.
  const process = entries.find((entry) => entry.kind === "process");
  const origin = Math.max(0, Number(process?.t ?? 0) - 40);
  console.log(`\n== ${label}: ${round(run.ms)} ms wall, load average ${loadAverage()}`);
  const cpu = summary?.cpu as { user: number; system: number } | undefined;
  if (cpu) {
    console.log(
      `   CPU ${round((cpu.user + cpu.system) / 1000)} ms (user ${round(cpu.user / 1000)}, system ${round(cpu.system / 1000)}), GC ${summary?.gcMs} ms in ${summary?.gcCount} pauses, event-loop delay ${JSON.stringify(summary?.eventLoopDelay)}`,
    );
  }
  for (const open of entries.filter((entry) => entry.kind === "pglite-open")) {
    console.log(`   PGlite.create(${open.dataDir}) at ${open.t} ms took ${open.ms} ms`);
  }
  for (const phase of phasesOf(entries, exitAt)) {
    const inside = (entry: Entry) =>
      entry.t !== undefined && entry.t >= phase.from && entry.t < phase.to;
    const sql = entries.filter((entry) => entry.kind === "sql" && inside(entry));
    const spawns = entries.filter((entry) => entry.kind === "spawn" && inside(entry));
    const engine = sql.reduce((total, entry) => total + Number(entry.ms), 0);
    console.log(
      `   ${String(Math.round(phase.to - phase.from)).padStart(6)} ms  ${phase.name}  [${sql.length} SQL, ${round(engine)} ms in the engine; ${spawns.length} processes]`,
    );
    for (const spawned of spawns) {
      const args = (spawned.args as string[]).join(" ");
      console.log(
        `              ${String(spawned.ms).padStart(7)} ms  ${String(spawned.file).split("/").at(-1)} ${args.length > 90 ? `${args.slice(0, 60)} … ${args.slice(-30)}` : args}`,
      );
    }
    if (profile) {
      const owners = cpuByOwner(profile, origin, phase.from, phase.to)
        .slice(0, 5)
        .map(([owner, ms]) => `${owner} ${Math.round(ms)}`)
        .join(", ");
      console.log(`              CPU: ${owners}`);
    }
  }
  const sql = entries.filter((entry) => entry.kind === "sql");
  const counts = new Map<string, { count: number; ms: number }>();
  for (const entry of sql) {
    const key = String(entry.text).replace(/\s+/g, " ").trim().slice(0, 100);
    const seen = counts.get(key) ?? { count: 0, ms: 0 };
    counts.set(key, { count: seen.count + 1, ms: seen.ms + Number(entry.ms) });
  }
  console.log(`   ${sql.length} SQL statements in all; the costliest in the engine:`);
  for (const [text, { count, ms }] of [...counts]
    .sort((left, right) => right[1].ms - left[1].ms)
    .slice(0, 8)) {
    console.log(`     ${String(round(ms)).padStart(8)} ms ${String(count).padStart(4)}×  ${text}`);
  }
  const memory = entries.filter((entry) => entry.kind === "memory").at(-1);
  if (memory) {
    const mib = (name: string) => round(Number(memory[name]) / 1024 / 1024, 1);
    console.log(
      `   memory at exit: rss ${mib("rss")} MiB, heap ${mib("heapTotal")} MiB, external ${mib("external")} MiB, array buffers ${mib("arrayBuffers")} MiB, PGlite WASM ${JSON.stringify((memory.pgliteWasmBytes as number[]).map((bytes) => round(bytes / 1024 / 1024, 1)))} MiB`,
    );
  }
}

try {
  for (const label of ["cold (new data dir)", "cached (same data dir)"]) {
    const name = label.split(" ")[0]!;
    const traceFile = join(scratch, `trace-${name}.jsonl`);
    const profileDir = join(scratch, `profile-${name}`);
    mkdirSync(profileDir, { recursive: true });
    const run = expectSuccess(
      await runCli(
        [
          "batch",
          "preview",
          spec,
          "--code-host",
          code,
          "--data-dir",
          dataDir,
          "--runtime",
          "local",
        ],
        {
          cwd: scratch,
          env: cleanEnvironment({ DECKHAND_TRACE_FILE: traceFile }),
          nodeArgs: ["--import", preload, "--cpu-prof", "--cpu-prof-dir", profileDir],
          ...(values.bundled ? { entry: bundledCliEntry } : {}),
        },
      ),
      label,
    );
    report(label, run, traceFile, profileDir);
  }
  if (values.keep) console.log(`\ntraces and CPU profiles kept in ${scratch}`);
} finally {
  if (!values.keep) rmSync(scratch, { recursive: true, force: true });
}
