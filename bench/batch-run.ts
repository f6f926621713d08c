// Measures a batch run end to end through @deckhand/batches' run service (the path `deckhand
// batch preview` and `deckhand executor` take: queue tasks, checkouts, steps, diffs, the step
// cache and the run's event log on embedded PGlite), side by side in one run with what it must
// beat:
//   - the ideal: the sum of the steps' own run times divided by the parallelism (goal ≤ 1.2×);
//   - `xargs -P` doing the same checkout-and-script work in shell (goal ≤ 1.1×);
//   - a fully cached re-run as a fraction of the cold run (goal ≤ 3%);
//   - peak memory per running workspace (the whole process tree, above the idle baseline);
//   - 1 container step per repository against `podman run` in a loop (when Podman works);
//   - the cold run again with the sandbox off, so the sandbox's cost per step shows (local steps
//     run in bubblewrap where it works, as a server runs them);
//   - the SQL statements each workspace job sends;
//   - with DATABASE_URL set, the cold and cached runs on PostgreSQL too.
//
//   node --conditions=source bench/batch-run.ts
//   BATCH_BENCH_REPOSITORIES=20 BATCH_BENCH_STEP_SECONDS=0.1 node --conditions=source bench/batch-run.ts
//   BATCH_BENCH_SANDBOX=on|off|both (default both)
//   BATCH_BENCH_ONLY=container: only the container steps beside the `podman run` loop
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { BatchRunService, createRunEventHub, ExecutionEnvironment } from "@deckhand/batches";
import { type ContainerRuntime, detectContainerRuntime } from "@deckhand/container-runtime";
import { createDb, type DbHandle, TaskRegistry, TaskWorker } from "@deckhand/db";
import { detectSandbox, ProcessLauncher } from "@deckhand/sandbox";
import {
  BUSYBOX_TEST_IMAGE,
  createPostgresTestDatabase,
  ensureBusyboxTestImage,
  type PostgresTestDatabase,
} from "@deckhand/testkit";
import type { BatchRun } from "@deckhand/wire";
import {
  followerStatements,
  generateRepositories,
  runFinished,
  STEP_SECONDS,
  specYaml,
  stepScript,
} from "./support/batch-run-fixtures.ts";
import {
  databaseUrlFromEnvironment,
  loadAverage,
  reportFigure,
  reportSkipped,
} from "./support/figures.ts";
import { treeRssKib } from "./support/process-tree.ts";
import { StatementCounter } from "./support/sql-trace.ts";

const REPOSITORIES = Number(process.env.BATCH_BENCH_REPOSITORIES ?? 100);
const STEPS = 3;
const PARALLELISM = availableParallelism();
const SANDBOX = process.env.BATCH_BENCH_SANDBOX ?? "both";
const ONLY_CONTAINER = process.env.BATCH_BENCH_ONLY === "container";

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

async function runToEnd(
  setup: Setup,
  source: string,
  runtime: "local" | "container",
): Promise<{
  run: BatchRun;
  seconds: number;
  peakKib: number;
  /** The share of the run this process's event loop was busy: near 1, it is the bottleneck. */
  loopUtilization: number;
}> {
  const { service } = setup;
  let peakKib = 0;
  const sampler = setInterval(() => {
    peakKib = Math.max(peakKib, treeRssKib());
  }, 100);
  const started = performance.now();
  const loopBefore = performance.eventLoopUtilization();
  const created = await service.createRun({ source, options: { runtime } });
  await runFinished(setup.feed, created.id);
  const seconds = (performance.now() - started) / 1000;
  const loopUtilization = performance.eventLoopUtilization(loopBefore).utilization;
  clearInterval(sampler);
  const run = await service.getRun(created.id);
  if (run.status !== "completed") {
    // Say why: a failed workspace is a finding, not only a failed benchmark.
    const failed = (await service.listWorkspaces(run.id)).filter(
      (workspace) => workspace.state !== "completed",
    );
    const reasons = failed.map((workspace) => `  ${workspace.repository}: ${workspace.error}`);
    throw new Error(`run ${run.id} ended ${run.status}: ${run.error}\n${reasons.join("\n")}`);
  }
  return { run, seconds, peakKib, loopUtilization };
}

/** The same work in shell: a worktree per repository, the scripts, a diff after each. */
function xargsBaseline(repositories: string[], scratch: string, steps: string[]): number {
  const worker = join(scratch, "xargs-worker.sh");
  writeFileSync(
    worker,
    `#!/bin/sh
set -e
repo="$1"; dir="${scratch}/xargs/$(basename "$repo")"
git -C "$repo" worktree add --quiet --detach "$dir" HEAD
cd "$dir"
${steps.map((script) => `${script}\ngit add -A && git diff --cached --binary HEAD > /dev/null`).join("\n")}
git -C "$repo" worktree remove --force "$dir"
`,
    { mode: 0o755 },
  );
  const started = performance.now();
  const result = spawnSync("xargs", ["-P", String(PARALLELISM), "-n", "1", worker], {
    input: repositories.join("\n"),
    stdio: ["pipe", "ignore", "inherit"],
  });
  if (result.status !== 0) throw new Error("the xargs baseline failed");
  return (performance.now() - started) / 1000;
}

function podmanLoop(
  repositories: string[],
  scratch: string,
  image: string,
  runtime: ContainerRuntime,
): number {
  const started = performance.now();
  const script = join(scratch, "podman-worker.sh");
  writeFileSync(
    script,
    `#!/bin/sh
set -e
repo="$1"; dir="${scratch}/podman/$(basename "$repo")"
git -C "$repo" worktree add --quiet --detach "$dir" HEAD
podman ${runtime.globalArgs.join(" ")} run ${runtime.runArgs.join(" ")} --rm --network none -v "$dir:/work" -w /work ${image} sh -c ${JSON.stringify(stepScript(0))}
git -C "$dir" add -A && git -C "$dir" diff --cached --binary HEAD > /dev/null
git -C "$repo" worktree remove --force "$dir"
`,
    { mode: 0o755 },
  );
  const result = spawnSync("xargs", ["-P", String(PARALLELISM), "-n", "1", script], {
    input: repositories.join("\n"),
    stdio: ["pipe", "ignore", "inherit"],
  });
  if (result.status !== 0) throw new Error("the podman loop failed");
  return (performance.now() - started) / 1000;
}

interface Setup {
  database: DbHandle;
  service: BatchRunService;
  worker: TaskWorker;
  launcher: ProcessLauncher;
  /** The runs' event feed, which the benchmark follows as the CLI does. */
  feed: ReturnType<typeof createRunEventHub>;
}

/** The run service and a task worker on `database`, its local steps started by `launcher`. */
async function setUp(
  database: DbHandle,
  scratch: string,
  root: string,
  launcher: ProcessLauncher,
  name: string,
): Promise<Setup> {
  const service = new BatchRunService({
    database,
    codeHosts: () => [{ type: "directory", path: root }],
    environment: new ExecutionEnvironment({
      directories: {
        cacheDirectory: join(scratch, `cache-${name}`),
        workDirectory: join(scratch, `work-${name}`),
        hookDirectory: join(scratch, `hooks-${name}`),
      },
      outerEnvironment: { PATH: process.env.PATH },
      launcher,
      // These machines need runc and fixed ulimits for Podman (see @deckhand/container-runtime).
      containerDetection: { restrictedHost: true },
    }),
  });
  const registry = new TaskRegistry();
  service.register(registry);
  const worker = new TaskWorker({ database, registry, concurrency: PARALLELISM });
  await worker.start();
  const feed = createRunEventHub(database);
  await feed.start();
  return { database, service, worker, launcher, feed };
}

async function tearDown(setup: Setup): Promise<void> {
  await setup.feed.stop();
  await setup.worker.stop();
  await setup.database.close();
}

/** 1 container step per repository beside `podman run` in an `xargs -P` loop doing the same. */
async function containerFigure(
  primary: Setup,
  repositories: string[],
  scratch: string,
): Promise<void> {
  const runtime = (await detectContainerRuntime({ restrictedHost: true })).runtime;
  if (runtime === null || runtime.kind !== "podman") {
    reportSkipped({
      id: "batch-container-vs-podman",
      label: "100 × 1 container steps / podman run loop",
      skipped: "no working Podman here (scripts/container-runtime.sh installs it)",
    });
    return;
  }
  ensureBusyboxTestImage(runtime);
  const containerRun = await runToEnd(
    primary,
    specYaml([stepScript(0)], BUSYBOX_TEST_IMAGE).replace("name: bench", "name: bench-container"),
    "container",
  );
  const loop = podmanLoop(repositories, scratch, BUSYBOX_TEST_IMAGE, runtime);
  console.table([
    { measure: "podman run in an xargs -P loop", seconds: round(loop) },
    { measure: "deckhand batch run, container runtime", seconds: round(containerRun.seconds) },
  ]);
  reportFigure({
    id: "batch-container-vs-podman",
    label: `${REPOSITORIES} × 1 container steps / podman run in an xargs -P loop`,
    value: containerRun.seconds,
    unit: "s",
    anchor: { label: "podman run loop", value: loop, unit: "s" },
    comparison: { value: containerRun.seconds / loop, unit: "×" },
  });
}

async function main(): Promise<void> {
  const scratch = mkdtempSync(join(tmpdir(), "deckhand-bench-batch-"));
  const setups: Setup[] = [];
  let postgres: PostgresTestDatabase | null = null;
  const capability = await detectSandbox("auto");
  const sandboxed = new ProcessLauncher({ capability });
  const unsandboxed = new ProcessLauncher({
    capability: { kind: "none", reason: "the benchmark's sandbox-off run" },
  });
  try {
    const root = join(scratch, "code");
    const repositories = generateRepositories(root, REPOSITORIES);
    const counter = await StatementCounter.create();
    const primary = await setUp(
      await createDb({ dataDir: join(scratch, "db") }),
      scratch,
      root,
      SANDBOX === "off" ? unsandboxed : sandboxed,
      "main",
    );
    setups.push(primary);
    const idleKib = treeRssKib();
    if (ONLY_CONTAINER) {
      await containerFigure(primary, repositories, scratch);
      return;
    }

    const steps = Array.from({ length: STEPS }, (_, step) => stepScript(step));
    const ideal = (REPOSITORIES * STEPS * STEP_SECONDS) / PARALLELISM;
    console.log(
      `${REPOSITORIES} repositories × ${STEPS} steps of ${STEP_SECONDS} s, parallelism ${PARALLELISM} (the CPU count), sandbox ${primary.launcher.sandbox}, load average ${loadAverage()}`,
    );
    counter.start();
    const cold = await runToEnd(primary, specYaml(steps), "local");
    const coldStatements = await counter.stop();
    const coldTexts = [...counter.byText];
    // Following the run's feed (its reads of new events) is the client's, not the jobs' work.
    const coldFollower = followerStatements(coldTexts);
    const jobStatements = (coldStatements.count - coldFollower) / REPOSITORIES;
    counter.start();
    const cached = await runToEnd(primary, specYaml(steps), "local");
    const cachedStatements = await counter.stop();
    const cachedJobStatements =
      (cachedStatements.count - followerStatements(counter.byText)) / REPOSITORIES;
    const xargs = xargsBaseline(repositories, scratch, steps);
    let coldOff: number | null = null;
    if (SANDBOX === "both" && capability.kind === "bubblewrap") {
      const off = await setUp(
        await createDb({ dataDir: join(scratch, "db-off") }),
        scratch,
        root,
        unsandboxed,
        "off",
      );
      setups.push(off);
      coldOff = (await runToEnd(off, specYaml(steps), "local")).seconds;
    }

    console.table([
      { measure: "ideal (sum of step times / parallelism)", seconds: round(ideal) },
      { measure: "xargs -P: worktree, scripts, diffs", seconds: round(xargs) },
      { measure: "deckhand batch run, cold", seconds: round(cold.seconds) },
      { measure: "deckhand batch run, fully cached", seconds: round(cached.seconds) },
      ...(coldOff !== null
        ? [{ measure: "deckhand batch run, cold, sandbox off", seconds: round(coldOff) }]
        : []),
    ]);
    const perWorkspaceMib = (cold.peakKib - idleKib) / 1024 / PARALLELISM;
    console.log(
      `event loop busy: ${round(cold.loopUtilization * 100, 1)} % of the cold run, ${round(cached.loopUtilization * 100, 1)} % of the cached one (the database, spawns and the engine share it)`,
    );
    console.log(
      `memory: process tree idle ${round(idleKib / 1024, 1)} MiB, peak ${round(cold.peakKib / 1024, 1)} MiB, ${round(perWorkspaceMib, 1)} MiB per running workspace`,
    );
    console.log(
      `SQL statements: ${round(jobStatements, 1)} per workspace job cold, besides ${coldFollower} reads of the run's feed by this benchmark (all statements: ${round(coldStatements.engineMs / REPOSITORIES, 1)} ms in PGlite's engine per job); ${round(cachedJobStatements, 1)} per job cached`,
    );
    const mostSent = coldTexts.sort((left, right) => right[1] - left[1]).slice(0, 12);
    for (const [text, count] of mostSent) {
      console.log(`  ${String(round(count / REPOSITORIES, 1)).padStart(5)}× per job  ${text}`);
    }
    if (cached.run.stats.steps_run !== 0) {
      throw new Error(`the cached run ran ${cached.run.stats.steps_run} steps`);
    }
    const sandboxNote = `sandbox ${primary.launcher.sandbox}, ${REPOSITORIES} repositories, PGlite`;
    reportFigure({
      id: "batch-cold-vs-ideal",
      label: `${REPOSITORIES} repos × ${STEPS} steps of ${STEP_SECONDS} s, cold / ideal`,
      value: cold.seconds,
      unit: "s",
      anchor: { label: "ideal (sum of steps ÷ parallelism)", value: ideal, unit: "s" },
      comparison: { value: cold.seconds / ideal, unit: "×" },
      note: sandboxNote,
    });
    reportFigure({
      id: "batch-cold-vs-xargs",
      label: "the same, cold / xargs -P doing the same work",
      value: cold.seconds,
      unit: "s",
      anchor: { label: "xargs -P", value: xargs, unit: "s" },
      comparison: { value: cold.seconds / xargs, unit: "×" },
      note: sandboxNote,
    });
    reportFigure({
      id: "batch-cached-vs-cold",
      label: "fully cached re-run / cold",
      value: cached.seconds,
      unit: "s",
      anchor: { label: "cold run", value: cold.seconds, unit: "s" },
      comparison: { value: (cached.seconds / cold.seconds) * 100, unit: "%" },
    });
    reportFigure({
      id: "batch-statements-per-job",
      label: "SQL statements per workspace job (3 steps, cold)",
      value: jobStatements,
      unit: "statements",
      note: `${round(cachedJobStatements, 1)} when cached`,
    });
    if (coldOff !== null) {
      // Each slot runs REPOSITORIES × STEPS / PARALLELISM steps one after another.
      const perStepMs = ((cold.seconds - coldOff) * 1000 * PARALLELISM) / (REPOSITORIES * STEPS);
      reportFigure({
        id: "sandbox-batch-step",
        label: "sandbox's cost per step inside the 100×3 run ((on − off) per slot per step)",
        value: perStepMs,
        unit: "ms",
        anchor: { label: "cold run with sandbox off", value: coldOff, unit: "s" },
        comparison: { value: cold.seconds / coldOff, unit: "×" },
      });
    }

    const databaseUrl = databaseUrlFromEnvironment();
    if (databaseUrl === undefined) {
      reportSkipped({
        id: "batch-cold-vs-ideal-postgres",
        label: "the 100×3 run on PostgreSQL",
        skipped: "set DATABASE_URL to include it",
      });
    } else {
      postgres = await createPostgresTestDatabase(databaseUrl);
      const onPostgres = await setUp(
        await createDb({ databaseUrl: postgres.url }),
        scratch,
        root,
        primary.launcher,
        "postgres",
      );
      setups.push(onPostgres);
      counter.start();
      const pgCold = await runToEnd(onPostgres, specYaml(steps), "local");
      const pgStatements = await counter.stop();
      const pgFollower = followerStatements(counter.byText);
      const pgCached = await runToEnd(onPostgres, specYaml(steps), "local");
      reportFigure({
        id: "batch-cold-vs-ideal-postgres",
        label: "the 100×3 run on PostgreSQL, cold / ideal",
        value: pgCold.seconds,
        unit: "s",
        anchor: { label: "ideal", value: ideal, unit: "s" },
        comparison: { value: pgCold.seconds / ideal, unit: "×" },
        note: `${round((pgStatements.count - pgFollower) / REPOSITORIES, 1)} statements per job`,
      });
      reportFigure({
        id: "batch-cached-vs-cold-postgres",
        label: "fully cached re-run / cold, PostgreSQL",
        value: pgCached.seconds,
        unit: "s",
        anchor: { label: "cold run", value: pgCold.seconds, unit: "s" },
        comparison: { value: (pgCached.seconds / pgCold.seconds) * 100, unit: "%" },
      });
    }
    await containerFigure(primary, repositories, scratch);
  } finally {
    for (const setup of setups.reverse()) await tearDown(setup);
    await sandboxed.close();
    await unsandboxed.close();
    await postgres?.drop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
