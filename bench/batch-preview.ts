// `deckhand batch preview` of 1 repository × 1 `sed` step, as a person runs it: the CLI as a
// process, timed from spawn to exit, beside the shell oracle doing the same work (a worktree,
// `sh -c` the step, `git diff`, remove the worktree) in the same run:
//   - standalone on a new data directory (the CLI starts its own server and embedded database);
//   - the same re-run, fully cached, on the same data directory;
//   - with --server on a running `deckhand up`: a spec never run there (cold), then again (cached);
// each with the sandbox on (bubblewrap, the default where it works) and off (`sandbox: "none"`
// in config.json), so the sandbox's own cost per step shows. With DATABASE_URL set, the --server
// figures are measured on a `deckhand up` over PostgreSQL too. The standalone cold run is also
// taken apart by when each line of its JSON output arrived. The CLI runs, standalone and with
// --server, are measured from the sources (`pnpm deckhand`, TypeScript through
// --conditions=source, what the issue measured) and from the bundled bin users install (built
// here from the current sources); each figure's note gives the CPU the CLI's process tree used,
// which a busy machine does not inflate the way it does wall time. (`deckhand up` itself runs
// from the sources: its start is not timed, and its per-request work is the same either way.)
//
//   node --conditions=source bench/batch-preview.ts
//   BATCH_PREVIEW_ROUNDS=5 node --conditions=source bench/batch-preview.ts
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SpawnedService } from "@deckhand/testkit";
import { createPostgresTestDatabase, type PostgresTestDatabase } from "@deckhand/testkit";
import {
  buildBundledCli,
  bundledCliEntry,
  type CliRun,
  cleanEnvironment,
  createRepository,
  expectSuccess,
  runCli,
  startDeckhandUp,
  stopService,
} from "./support/deckhand-process.ts";
import {
  databaseUrlFromEnvironment,
  loadAverage,
  median,
  reportFigure,
  reportSkipped,
  round,
} from "./support/figures.ts";
import { writeSedSpec } from "./support/sed-spec.ts";

const ROUNDS = Number(process.env.BATCH_PREVIEW_ROUNDS ?? 3);
const ORACLE_ROUNDS = 10;
const REPOSITORY = "github.com/acme/one";
/** What the spec's step edits. */
const EDITED_FILES = ["README.md", "src/main.txt"];
type SandboxMode = "auto" | "none";
const SANDBOX_MODES: SandboxMode[] = ["auto", "none"];

const scratch = mkdtempSync(join(tmpdir(), "deckhand-bench-preview-"));
const code = join(scratch, "code");
const repository = join(code, REPOSITORY);
createRepository(repository, {
  "README.md": "# one\n\nThe old way.\n",
  "src/main.txt": "old\n".repeat(20),
});

/** A data directory whose config.json sets the sandbox (and, for `deckhand up`, the code host). */
function dataDirectory(mode: SandboxMode, withCodeHost: boolean): string {
  const directory = mkdtempSync(join(scratch, `data-${mode}-`));
  writeFileSync(
    join(directory, "config.json"),
    JSON.stringify({
      sandbox: mode,
      ...(withCodeHost ? { codeHosts: [{ type: "directory", path: code }] } : {}),
    }),
  );
  return directory;
}

/** The same work by hand: a worktree, the step in `sh -c`, the diff, the worktree removed. */
function shellOracle(): number {
  const worktree = join(scratch, "oracle-worktree");
  const script = join(scratch, "oracle.sh");
  writeFileSync(
    script,
    `set -e
git -C "${repository}" worktree add --quiet --detach "${worktree}" HEAD
cd "${worktree}"
sh -c "sed -i 's/old/new/g' README.md src/main.txt"
git add -A
git diff --cached --binary HEAD > /dev/null
git -C "${repository}" worktree remove --force "${worktree}"
`,
  );
  const started = performance.now();
  const result = spawnSync("sh", [script], { stdio: ["ignore", "ignore", "inherit"] });
  if (result.status !== 0) throw new Error("the shell oracle failed");
  return (performance.now() - started) / 1000;
}

/** `deckhand batch preview` standalone; checks it made the changeset. */
async function standalone(spec: string, dataDir: string, entry?: string): Promise<CliRun> {
  const run = expectSuccess(
    await runCli(
      ["batch", "preview", spec, "--code-host", code, "--data-dir", dataDir, "--runtime", "local"],
      { cwd: scratch, env: cleanEnvironment(), ...(entry !== undefined ? { entry } : {}) },
    ),
    "standalone batch preview",
  );
  checkChangeset(run);
  return run;
}

async function onServer(spec: string, server: SpawnedService, entry?: string): Promise<CliRun> {
  const run = expectSuccess(
    await runCli(["batch", "preview", spec, "--server", server.url, "--runtime", "local"], {
      cwd: scratch,
      env: cleanEnvironment(),
      ...(entry !== undefined ? { entry } : {}),
    }),
    "batch preview --server",
  );
  checkChangeset(run);
  return run;
}

function checkChangeset(run: CliRun): void {
  const changesets = run.lines.filter((line) => line.json?.type === "changeset");
  if (changesets.length !== 1 || !String(changesets[0]!.json!.diff).includes("+++ b/README.md")) {
    throw new Error(`expected one changeset with a diff:\n${run.lines.map((l) => l.text)}`);
  }
}

/** Which step outcome a run reports: "run" or "cached". */
function stepOutcome(run: CliRun): string {
  const summary = run.lines.find((line) => line.json?.type === "summary")?.json;
  return summary?.steps_cached === 1 ? "cached" : summary?.steps_run === 1 ? "run" : "?";
}

/** Milliseconds between the arrival of stdout lines: where a standalone run's time goes. */
const PHASES: [string, (type: string) => boolean][] = [
  ["CLI start, embedded server start, run created", (type) => type === "batch_run"],
  ["workspaces resolved, job claimed", (type) => type === "workspace_started"],
  ["checkout (worktree)", (type) => type === "step_started"],
  ["the step (sandboxed or not)", (type) => type === "step_finished"],
  ["diff, cache write, workspace finished", (type) => type === "workspace_finished"],
  ["changeset, run finished", (type) => type === "summary"],
];

function phasesOf(run: CliRun): number[] {
  const times: number[] = [];
  let previous = 0;
  for (const [, matches] of PHASES) {
    const line = run.lines.find((candidate) => matches(String(candidate.json?.type)));
    const at = line?.at ?? previous;
    times.push(at - previous);
    previous = at;
  }
  times.push(run.ms - previous);
  return times;
}

const seconds = (run: CliRun) => run.ms / 1000;
const cpuSeconds = (run: CliRun) => (run.cpuMs ?? Number.NaN) / 1000;

interface ModeFigures {
  cold: number[];
  cached: number[];
  coldCpu: number[];
  cachedCpu: number[];
  bundledCold: number[];
  bundledCached: number[];
  bundledColdCpu: number[];
  bundledCachedCpu: number[];
  phases: number[][];
  serverCold: number[];
  serverCached: number[];
  serverColdCpu: number[];
  serverCachedCpu: number[];
  bundledServerCold: number[];
  bundledServerCached: number[];
  bundledServerColdCpu: number[];
  bundledServerCachedCpu: number[];
}

function emptyServer() {
  return {
    serverCold: [],
    serverCached: [],
    serverColdCpu: [],
    serverCachedCpu: [],
    bundledServerCold: [],
    bundledServerCached: [],
    bundledServerColdCpu: [],
    bundledServerCachedCpu: [],
  };
}

function emptyStandalone() {
  return {
    cold: [],
    cached: [],
    coldCpu: [],
    cachedCpu: [],
    bundledCold: [],
    bundledCached: [],
    bundledColdCpu: [],
    bundledCachedCpu: [],
  };
}

async function measureServer(
  mode: SandboxMode,
  figures: ModeFigures,
  env: NodeJS.ProcessEnv,
  label: string,
): Promise<void> {
  const server = await startDeckhandUp(dataDirectory(mode, true), env);
  try {
    // One untimed run: the server's first batch run warms its caches and compiled code.
    await onServer(writeSedSpec(scratch, `warm-${label}`, EDITED_FILES), server);
    for (let round = 0; round < ROUNDS; round += 1) {
      // The sources' CLI and the bundled one in turns, each on a spec of its own.
      for (const bundled of [false, true]) {
        const spec = writeSedSpec(
          scratch,
          `server-${label}-${round}-${bundled ? "bundled" : "sources"}`,
          EDITED_FILES,
        );
        const entry = bundled ? bundledCliEntry : undefined;
        const cold = await onServer(spec, server, entry);
        const cached = await onServer(spec, server, entry);
        if (stepOutcome(cold) !== "run" || stepOutcome(cached) !== "cached") {
          throw new Error(`--server runs were ${stepOutcome(cold)} then ${stepOutcome(cached)}`);
        }
        if (bundled) {
          figures.bundledServerCold.push(seconds(cold));
          figures.bundledServerCached.push(seconds(cached));
          figures.bundledServerColdCpu.push(cpuSeconds(cold));
          figures.bundledServerCachedCpu.push(cpuSeconds(cached));
        } else {
          figures.serverCold.push(seconds(cold));
          figures.serverCached.push(seconds(cached));
          figures.serverColdCpu.push(cpuSeconds(cold));
          figures.serverCachedCpu.push(cpuSeconds(cached));
        }
      }
    }
  } finally {
    await stopService(server);
  }
}

try {
  console.log(
    `batch preview, 1 repository × 1 sed step, ${ROUNDS} rounds (median), load average ${loadAverage()}`,
  );
  buildBundledCli();
  shellOracle();
  const oracle = median(Array.from({ length: ORACLE_ROUNDS }, shellOracle));
  const byMode = new Map<SandboxMode, ModeFigures>();
  for (const mode of SANDBOX_MODES) {
    const figures: ModeFigures = { ...emptyStandalone(), ...emptyServer(), phases: [] };
    byMode.set(mode, figures);
    for (let round = 0; round < ROUNDS; round += 1) {
      const dataDir = dataDirectory(mode, false);
      const spec = writeSedSpec(scratch, "new", EDITED_FILES);
      const cold = await standalone(spec, dataDir);
      const cached = await standalone(spec, dataDir);
      if (stepOutcome(cold) !== "run" || stepOutcome(cached) !== "cached") {
        throw new Error(`standalone runs were ${stepOutcome(cold)} then ${stepOutcome(cached)}`);
      }
      figures.cold.push(seconds(cold));
      figures.cached.push(seconds(cached));
      figures.coldCpu.push(cpuSeconds(cold));
      figures.cachedCpu.push(cpuSeconds(cached));
      figures.phases.push(phasesOf(cold));
      rmSync(dataDir, { recursive: true, force: true });
      const bundledDataDir = dataDirectory(mode, false);
      const bundledCold = await standalone(spec, bundledDataDir, bundledCliEntry);
      const bundledCached = await standalone(spec, bundledDataDir, bundledCliEntry);
      figures.bundledCold.push(seconds(bundledCold));
      figures.bundledCached.push(seconds(bundledCached));
      figures.bundledColdCpu.push(cpuSeconds(bundledCold));
      figures.bundledCachedCpu.push(cpuSeconds(bundledCached));
      rmSync(bundledDataDir, { recursive: true, force: true });
    }
    await measureServer(mode, figures, cleanEnvironment(), mode);
  }

  const on = byMode.get("auto")!;
  const off = byMode.get("none")!;
  const oracleAnchor = { label: "shell oracle", value: oracle, unit: "s" };
  const row = (
    id: string,
    label: string,
    values: number[],
    offValues: number[],
    cpu?: number[],
  ) => {
    const value = median(values);
    const cpuNote = cpu === undefined ? "" : `; CPU ${round(median(cpu), 3)} s`;
    reportFigure({
      id,
      label,
      value,
      unit: "s",
      anchor: oracleAnchor,
      comparison: { value: value / oracle, unit: "×" },
      note: `sandbox off: ${round(median(offValues), 3)} s${cpuNote}`,
    });
  };
  reportFigure({
    id: "shell-oracle",
    label: "shell oracle: worktree, sh -c, git diff",
    value: oracle,
    unit: "s",
    note: `median of ${ORACLE_ROUNDS}`,
  });
  row(
    "preview-standalone-cold",
    "batch preview standalone, new data dir",
    on.cold,
    off.cold,
    on.coldCpu,
  );
  row(
    "preview-standalone-cached",
    "the same re-run fully cached",
    on.cached,
    off.cached,
    on.cachedCpu,
  );
  row(
    "preview-standalone-cold-bundled",
    "batch preview standalone, new data dir, bundled bin",
    on.bundledCold,
    off.bundledCold,
    on.bundledColdCpu,
  );
  row(
    "preview-standalone-cached-bundled",
    "the same re-run fully cached, bundled bin",
    on.bundledCached,
    off.bundledCached,
    on.bundledCachedCpu,
  );
  row(
    "preview-server-cold",
    "batch preview --server, cold (sources)",
    on.serverCold,
    off.serverCold,
    on.serverColdCpu,
  );
  row(
    "preview-server-cached",
    "batch preview --server, cached (sources)",
    on.serverCached,
    off.serverCached,
    on.serverCachedCpu,
  );
  row(
    "preview-server-cold-bundled",
    "batch preview --server, cold, bundled bin",
    on.bundledServerCold,
    off.bundledServerCold,
    on.bundledServerColdCpu,
  );
  row(
    "preview-server-cached-bundled",
    "batch preview --server, cached, bundled bin",
    on.bundledServerCached,
    off.bundledServerCached,
    on.bundledServerCachedCpu,
  );
  const stepOn = median(on.phases.map((phases) => phases[3]!));
  const stepOff = median(off.phases.map((phases) => phases[3]!));
  reportFigure({
    id: "sandbox-preview-step",
    // The step's own phase, not the whole runs: their difference drowns in start-up noise.
    label: "sandbox's cost on the step of a standalone cold preview (step phase, on − off)",
    value: stepOn - stepOff,
    unit: "ms",
    anchor: { label: "the step phase, sandbox off", value: stepOff, unit: "ms" },
    comparison: { value: stepOn / stepOff, unit: "×" },
    note: `whole runs: ${round(median(on.cold), 2)} s on, ${round(median(off.cold), 2)} s off`,
  });

  console.log("standalone cold run, taken apart by stdout arrival (median ms, sandbox on / off):");
  const labels = [...PHASES.map(([label]) => label), "shutdown and exit"];
  labels.forEach((label, index) => {
    const onMs = median(on.phases.map((phases) => phases[index]!));
    const offMs = median(off.phases.map((phases) => phases[index]!));
    console.log(
      `  ${label.padEnd(48)} ${String(Math.round(onMs)).padStart(6)} / ${Math.round(offMs)}`,
    );
  });

  const databaseUrl = databaseUrlFromEnvironment();
  if (databaseUrl === undefined) {
    reportSkipped({
      id: "preview-server-cold-postgres",
      label: "batch preview --server on PostgreSQL",
      skipped: "set DATABASE_URL to include it",
    });
  } else {
    let database: PostgresTestDatabase | null = null;
    try {
      database = await createPostgresTestDatabase(databaseUrl);
      const figures: ModeFigures = { ...emptyStandalone(), ...emptyServer(), phases: [] };
      await measureServer(
        "auto",
        figures,
        cleanEnvironment({ DATABASE_URL: database.url }),
        "postgres",
      );
      for (const [id, label, values, cpu] of [
        [
          "preview-server-cold-postgres",
          "batch preview --server, cold, PostgreSQL (sources)",
          figures.serverCold,
          figures.serverColdCpu,
        ],
        [
          "preview-server-cached-postgres",
          "batch preview --server, cached, PostgreSQL (sources)",
          figures.serverCached,
          figures.serverCachedCpu,
        ],
        [
          "preview-server-cold-postgres-bundled",
          "batch preview --server, cold, PostgreSQL, bundled bin",
          figures.bundledServerCold,
          figures.bundledServerColdCpu,
        ],
        [
          "preview-server-cached-postgres-bundled",
          "batch preview --server, cached, PostgreSQL, bundled bin",
          figures.bundledServerCached,
          figures.bundledServerCachedCpu,
        ],
      ] as const) {
        reportFigure({
          id,
          label,
          value: median(values),
          unit: "s",
          anchor: oracleAnchor,
          comparison: { value: median(values) / oracle, unit: "×" },
          note: `CPU ${round(median(cpu), 3)} s`,
        });
      }
    } finally {
      await database?.drop();
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
