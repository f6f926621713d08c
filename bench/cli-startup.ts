// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the spec contains ${{ }} templates on purpose
// CLI start-up: wall time of `deckhand version` and of `deckhand batch validate` of a small spec,
// each as a fresh process, beside `node -e 0` in the same run. The bundled bin (what
// `npm install -g` gives users) is built from the current sources first; the source run
// (`pnpm deckhand`, TypeScript through --conditions=source) is shown for comparison, and so is
// the bundled `batch validate` without Node's compile cache (what the very first run pays).
// Targets: bundled `version` at most 3x `node -e 0`; bundled `batch validate` at most 0.3 s.
// Run from the repository root: node --conditions=source bench/cli-startup.ts
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import cliPackage from "../apps/cli/package.json" with { type: "json" };
import { buildBundledCli } from "./support/deckhand-process.ts";
import { reportFigure } from "./support/figures.ts";

const versionTargetRatio = 3;
const validateTargetSeconds = 0.3;
const rounds = 40;

const cliDirectory = fileURLToPath(new URL("../apps/cli/", import.meta.url));
// What `npm install -g` links as the `deckhand` command.
const bundledBin = join(cliDirectory, cliPackage.bin.deckhand);
const sourceBin = join(cliDirectory, "src/bin.ts");

buildBundledCli();

const scratch = mkdtempSync(join(tmpdir(), "deckhand-bench-cli-"));
const spec = join(scratch, "small.yaml");
writeFileSync(
  spec,
  `version: 3
name: small
description: A small spec
on:
  - repository: github.com/acme/service
    branch: main
steps:
  - run: sed -i 's/old/new/g' \${{ join repository.search_result_paths " " }}
    image: alpine:3
  - codingAgent:
      type: claude-code
      prompt: Review the change in \${{ repository.name }}
    image: node:22
changesetTemplate:
  title: Small change
  branch: batch/small
  commit:
    message: Small change
`,
);

interface Variant {
  name: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  samples: number[];
  /** CPU seconds of every timed run together, when the system reports it. */
  cpuSeconds?: number;
}

const clockTicks = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || undefined;
  } catch {
    return undefined;
  }
})();

/**
 * CPU seconds (user + system) of the child processes this one has waited for, from Linux's
 * /proc (cutime and cstime); undefined elsewhere. A busy machine stretches a start-up's wall
 * time, not the CPU it takes, so this compares the commands where the medians cannot.
 */
function childrenCpuSeconds(): number | undefined {
  if (clockTicks === undefined) return undefined;
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[13]) + Number(fields[14])) / clockTicks;
  } catch {
    return undefined;
  }
}

const variants: Variant[] = [
  { name: "node -e 0", args: ["-e", "0"], samples: [] },
  { name: "deckhand version (bundled)", args: [bundledBin, "version"], samples: [] },
  {
    name: "deckhand batch validate (bundled)",
    args: [bundledBin, "batch", "validate", spec],
    samples: [],
  },
  {
    // What a first run pays, before Node's compile cache holds the command's modules.
    name: "deckhand batch validate (bundled, no compile cache)",
    args: [bundledBin, "batch", "validate", spec],
    env: { NODE_DISABLE_COMPILE_CACHE: "1" },
    samples: [],
  },
  {
    name: "deckhand version (source)",
    args: ["--conditions=source", sourceBin, "version"],
    samples: [],
  },
  {
    name: "deckhand batch validate (source)",
    args: ["--conditions=source", sourceBin, "batch", "validate", spec],
    samples: [],
  },
];

function run(variant: Variant): number {
  const cpuBefore = childrenCpuSeconds();
  const started = performance.now();
  const result = spawnSync(process.execPath, variant.args, {
    cwd: scratch,
    env: { ...process.env, ...variant.env },
    stdio: "pipe",
  });
  const seconds = (performance.now() - started) / 1_000;
  const cpuAfter = childrenCpuSeconds();
  if (cpuBefore !== undefined && cpuAfter !== undefined) {
    variant.cpuSeconds = (variant.cpuSeconds ?? 0) + cpuAfter - cpuBefore;
  }
  if (result.status !== 0) {
    throw new Error(`${variant.name} exited ${result.status}: ${result.stderr.toString("utf8")}`);
  }
  return seconds;
}

function median(values: number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.floor(sorted.length / 2)]!;
}

try {
  // One warm-up round (file cache), then rounds interleaved so every variant sees the same
  // machine state.
  for (const variant of variants) run(variant);
  for (const variant of variants) delete variant.cpuSeconds;
  for (let round = 0; round < rounds; round += 1) {
    for (const variant of variants) variant.samples.push(run(variant));
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

const baseline = median(variants[0]!.samples);
const medians = new Map(variants.map((variant) => [variant.name, median(variant.samples)]));
const width = Math.max(...variants.map((variant) => variant.name.length));
/** CPU milliseconds a run of the variant took, on average; undefined when not measured. */
const cpuPerRun = (variant: Variant) =>
  variant.cpuSeconds === undefined ? undefined : (variant.cpuSeconds / rounds) * 1_000;
const baselineCpu = cpuPerRun(variants[0]!);
console.log(
  `${"command".padEnd(width)}  ${"median wall".padStart(12)}  ratio to node -e 0  ${"CPU a run".padStart(10)}  ratio`,
);
for (const variant of variants) {
  const seconds = medians.get(variant.name)!;
  const cpu = cpuPerRun(variant);
  const cpuColumns =
    cpu === undefined || baselineCpu === undefined
      ? ""
      : `  ${`${cpu.toFixed(1)} ms`.padStart(10)}  ${(cpu / baselineCpu).toFixed(2)}x`;
  console.log(
    `${variant.name.padEnd(width)}  ${`${(seconds * 1_000).toFixed(0)} ms`.padStart(12)}  ${`${(seconds / baseline).toFixed(2)}x`.padStart(18)}${cpuColumns}`,
  );
}

const bundledVersion = medians.get("deckhand version (bundled)")!;
const versionCpu = cpuPerRun(variants[1]!);
const bundledValidate = medians.get("deckhand batch validate (bundled)")!;
const result = {
  benchmark: "cli-startup",
  rounds,
  nodeSeconds: baseline,
  bundled: {
    versionSeconds: bundledVersion,
    versionRatio: bundledVersion / baseline,
    batchValidateSeconds: bundledValidate,
    batchValidateWithoutCompileCacheSeconds: medians.get(
      "deckhand batch validate (bundled, no compile cache)",
    )!,
  },
  source: {
    versionSeconds: medians.get("deckhand version (source)")!,
    versionRatio: medians.get("deckhand version (source)")! / baseline,
    batchValidateSeconds: medians.get("deckhand batch validate (source)")!,
  },
  versionTargetRatio,
  validateTargetSeconds,
  withinTarget:
    bundledVersion / baseline <= versionTargetRatio && bundledValidate <= validateTargetSeconds,
};
console.log(`BENCH ${JSON.stringify(result)}`);
reportFigure({
  id: "cli-version",
  label: "CLI `version` (bundled)",
  value: bundledVersion * 1000,
  unit: "ms",
  anchor: { label: "node -e 0", value: baseline * 1000, unit: "ms" },
  comparison: { value: bundledVersion / baseline, unit: "×" },
  ...(versionCpu === undefined || baselineCpu === undefined
    ? {}
    : {
        note: `CPU ${versionCpu.toFixed(1)} ms vs ${baselineCpu.toFixed(1)} ms → ${(versionCpu / baselineCpu).toFixed(2)}×`,
      }),
});
// A figure, not an assertion: a busy machine must not turn a benchmark run red.
if (!result.withinTarget) console.log("outside the targets above (see the ratios)");
