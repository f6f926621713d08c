// Measures a batch run end to end through @deckhand/batches' run service (the path `deckhand
// batch preview` and `deckhand executor` take: queue tasks, checkouts, steps, diffs, the step
// cache and the run's event log on embedded PGlite), side by side in one run with what it must
// beat:
//   - the ideal: the sum of the steps' own run times divided by the parallelism (goal ≤ 1.2×);
//   - `xargs -P` doing the same checkout-and-script work in shell (goal ≤ 1.1×);
//   - a fully cached re-run as a fraction of the cold run (goal ≤ 5%);
//   - peak memory per running workspace (the whole process tree, above the idle baseline);
//   - 1 container step per repository against `podman run` in a loop (when Podman works).
//
//   node --conditions=source bench/batch-run.ts
//   BATCH_BENCH_REPOSITORIES=20 BATCH_BENCH_STEP_SECONDS=0.1 node --conditions=source bench/batch-run.ts
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { BatchRunService, ExecutionEnvironment } from "@deckhand/batches";
import { type ContainerRuntime, detectContainerRuntime } from "@deckhand/container-runtime";
import { createDb, type DbHandle, TaskRegistry, TaskWorker } from "@deckhand/db";
import { BUSYBOX_TEST_IMAGE, ensureBusyboxTestImage } from "@deckhand/testkit";
import type { BatchRun } from "@deckhand/wire";

const REPOSITORIES = Number(process.env.BATCH_BENCH_REPOSITORIES ?? 100);
const STEP_SECONDS = Number(process.env.BATCH_BENCH_STEP_SECONDS ?? 0.2);
const STEPS = 3;
const PARALLELISM = availableParallelism();

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8" });
}

/** `count` small repositories under `root/bench/`, each with one commit on main. */
function generateRepositories(root: string, count: number): string[] {
  const paths: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const path = join(root, "bench", `repo-${String(index).padStart(3, "0")}`);
    mkdirSync(join(path, "src"), { recursive: true });
    writeFileSync(join(path, "README.md"), `# repo ${index}\n`);
    for (let file = 0; file < 20; file += 1) {
      writeFileSync(join(path, "src", `file-${file}.txt`), `line ${file}\n`.repeat(50));
    }
    git(path, "init", "--quiet", "--initial-branch=main");
    git(path, "add", "-A");
    git(
      path,
      "-c",
      "user.name=Bench",
      "-c",
      "user.email=bench@localhost",
      "commit",
      "--quiet",
      "-m",
      "initial",
    );
    paths.push(path);
  }
  return paths;
}

function stepScript(step: number): string {
  return `sleep ${STEP_SECONDS}; echo "step ${step}" >> CHANGES.md`;
}

function specYaml(steps: string[], container?: string): string {
  const stepLines = steps
    .map(
      (run) =>
        `  - run: ${JSON.stringify(run)}${container ? `\n    container: ${container}` : "\n    container: alpine:3"}`,
    )
    .join("\n");
  return `name: bench
on:
  - repositoriesMatchingQuery: repo:^bench/
steps:
${stepLines}
changesetTemplate:
  title: Bench
  branch: bench
  commit:
    message: bench
`;
}

/** Resident memory of this process and every descendant, in KiB. */
function treeRssKib(): number {
  const children = new Map<number, number[]>();
  const rss = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, "utf8");
      const parent = Number(/^PPid:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      const resident = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      rss.set(Number(entry), resident);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // The process ended while being read.
    }
  }
  let total = 0;
  const stack = [process.pid];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    total += rss.get(pid) ?? 0;
    stack.push(...(children.get(pid) ?? []));
  }
  return total;
}

async function runToEnd(
  service: BatchRunService,
  source: string,
  runtime: "local" | "container",
): Promise<{ run: BatchRun; seconds: number; peakKib: number }> {
  let peakKib = 0;
  const sampler = setInterval(() => {
    peakKib = Math.max(peakKib, treeRssKib());
  }, 100);
  const started = performance.now();
  const created = await service.createRun({ source, options: { runtime } });
  for (;;) {
    const run = await service.getRun(created.id);
    if (run.status !== "queued" && run.status !== "running") {
      clearInterval(sampler);
      if (run.status !== "completed")
        throw new Error(`run ${run.id} ended ${run.status}: ${run.error}`);
      return { run, seconds: (performance.now() - started) / 1000, peakKib };
    }
    await new Promise((resolveWait) => setTimeout(resolveWait, 25));
  }
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

async function main(): Promise<void> {
  const scratch = mkdtempSync(join(tmpdir(), "deckhand-bench-batch-"));
  let database: DbHandle | null = null;
  let worker: TaskWorker | null = null;
  try {
    const root = join(scratch, "code");
    const repositories = generateRepositories(root, REPOSITORIES);
    database = await createDb({ dataDir: join(scratch, "db") });
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
        // These machines need runc and fixed ulimits for Podman (see @deckhand/container-runtime).
        containerDetection: { restrictedHost: true },
      }),
    });
    const registry = new TaskRegistry();
    service.register(registry);
    worker = new TaskWorker({ database, registry, concurrency: PARALLELISM });
    await worker.start();
    const idleKib = treeRssKib();

    const steps = Array.from({ length: STEPS }, (_, step) => stepScript(step));
    const ideal = (REPOSITORIES * STEPS * STEP_SECONDS) / PARALLELISM;
    const cold = await runToEnd(service, specYaml(steps), "local");
    const cached = await runToEnd(service, specYaml(steps), "local");
    const xargs = xargsBaseline(repositories, scratch, steps);

    console.log(
      `${REPOSITORIES} repositories × ${STEPS} steps of ${STEP_SECONDS} s, parallelism ${PARALLELISM} (the CPU count)`,
    );
    console.table([
      { measure: "ideal (sum of step times / parallelism)", seconds: round(ideal) },
      { measure: "xargs -P: worktree, scripts, diffs", seconds: round(xargs) },
      { measure: "deckhand batch run, cold", seconds: round(cold.seconds) },
      { measure: "deckhand batch run, fully cached", seconds: round(cached.seconds) },
    ]);
    const perWorkspaceMib = (cold.peakKib - idleKib) / 1024 / PARALLELISM;
    console.log(
      `ratios: cold / ideal = ${round(cold.seconds / ideal)}× (goal ≤ 1.2×), cold / xargs = ${round(cold.seconds / xargs)}× (goal ≤ 1.1×), cached / cold = ${round((cached.seconds / cold.seconds) * 100, 1)}% (goal ≤ 5%)`,
    );
    console.log(
      `memory: process tree idle ${round(idleKib / 1024, 1)} MiB, peak ${round(cold.peakKib / 1024, 1)} MiB, ${round(perWorkspaceMib, 1)} MiB per running workspace`,
    );
    if (cached.run.stats.steps_run !== 0) {
      throw new Error(`the cached run ran ${cached.run.stats.steps_run} steps`);
    }

    const runtime = (await detectContainerRuntime({ restrictedHost: true })).runtime;
    if (runtime === null || runtime.kind !== "podman") {
      console.log(
        "container: skipped (no working Podman here; scripts/container-runtime.sh installs it)",
      );
      return;
    }
    ensureBusyboxTestImage(runtime);
    const containerRun = await runToEnd(
      service,
      specYaml([stepScript(0)], BUSYBOX_TEST_IMAGE).replace("name: bench", "name: bench-container"),
      "container",
    );
    const loop = podmanLoop(repositories, scratch, BUSYBOX_TEST_IMAGE, runtime);
    console.table([
      { measure: "podman run in an xargs -P loop", seconds: round(loop) },
      { measure: "deckhand batch run, container runtime", seconds: round(containerRun.seconds) },
    ]);
    console.log(`ratio: deckhand / podman loop = ${round(containerRun.seconds / loop)}×`);
  } finally {
    await worker?.stop();
    await database?.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
