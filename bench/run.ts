// Runs every benchmark in this folder, one after another, in one process tree, so the figures
// they print come from the same machine state. `pnpm bench` (or `npm run bench`) calls this.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const benchmarks = [
  "headtail.ts",
  "process-api.ts",
  "batch-spec.ts",
  "batch-run.ts",
  "queue.ts",
  "model-proxy.ts",
  "session-stream.ts",
  "agent-turn.ts",
  "cli-startup.ts",
  "native-turn.ts",
];
const only = process.argv.slice(2);
const directory = fileURLToPath(new URL(".", import.meta.url));
let failed = 0;

for (const file of benchmarks) {
  const name = file.split("/").at(-1)!;
  if (only.length > 0 && !only.some((wanted) => name.startsWith(wanted))) continue;
  console.log(`\n=== ${file} ===`);
  const result = spawnSync(
    process.execPath,
    ["--conditions=source", "--expose-gc", `${directory}${file}`],
    { stdio: "inherit" },
  );
  if (result.status !== 0) {
    failed += 1;
    console.error(`${file} failed with ${result.status ?? result.signal}`);
  }
}
process.exitCode = failed === 0 ? 0 : 1;
