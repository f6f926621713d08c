import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ProcessLauncher } from "@deckhand/sandbox";
import { afterEach, describe, expect, it } from "vitest";
import { temporaryDirectory } from "../test/support.ts";
import { runLocalStep } from "./run-local-step.ts";

const moduleUrl = new URL("./run-local-step.ts", import.meta.url).href;
const sandboxUrl = new URL("../../sandbox/src/index.ts", import.meta.url).href;

let scratch: ReturnType<typeof temporaryDirectory>;
afterEach(() => scratch?.remove());

/** Whether a process runs (a zombie waiting to be reaped does not). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^\d+ \(.*\) [ZX]/.test(stat);
  } catch {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}

async function waitFor(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 50));
  }
}

describe("runLocalStep", () => {
  it("runs the script in the shell it is given, with its exit code and output", async () => {
    scratch = temporaryDirectory();
    let stdout = "";
    const result = await runLocalStep({
      script: 'echo "$0 in $(basename "$PWD")"; exit 3',
      shell: "sh",
      cwd: scratch.path,
      env: { PATH: process.env.PATH ?? "" },
      launcher: ProcessLauncher.unconfined(),
      profile: { writable: [scratch.path], network: { internet: true, modelProxy: false } },
      signal: new AbortController().signal,
      onOutput: (stream, data) => {
        if (stream === "stdout") stdout += data.toString("utf8");
      },
    });
    expect(result.exitCode).toBe(3);
    expect(stdout.trim()).toMatch(/^sh in deckhand-batches-/);
  });

  it("runs a bash script in bash, where sh (dash on Debian) would read $'\\n' as text", async () => {
    scratch = temporaryDirectory();
    let stdout = "";
    const result = await runLocalStep({
      script: "IFS=$'\\n'; for word in $(printf 'one\\ntwo'); do echo \"[$word]\"; done",
      shell: "bash",
      cwd: scratch.path,
      env: { PATH: process.env.PATH ?? "" },
      launcher: ProcessLauncher.unconfined(),
      profile: { writable: [scratch.path], network: { internet: true, modelProxy: false } },
      signal: new AbortController().signal,
      onOutput: (stream, data) => {
        if (stream === "stdout") stdout += data.toString("utf8");
      },
    });
    expect(result.exitCode).toBe(0);
    expect(stdout).toBe("[one]\n[two]\n");
  });

  it("dies with the process that runs it, even one killed with SIGKILL", async () => {
    scratch = temporaryDirectory();
    const pids = join(scratch.path, "pids");
    const late = join(scratch.path, "late");
    // The step and a background child of it each write their pid, then sleep; if they
    // outlived their runner they would write `late`.
    const script = `(echo $$ $(exec sh -c 'echo $PPID') >> ${pids}; sleep 3; echo child > ${late}) & echo $$ >> ${pids}; sleep 3; echo step > ${late}`;
    const runner = join(scratch.path, "runner.mts");
    writeFileSync(
      runner,
      `import { runLocalStep } from ${JSON.stringify(moduleUrl)};
import { ProcessLauncher } from ${JSON.stringify(sandboxUrl)};
await runLocalStep({ script: ${JSON.stringify(script)}, shell: "sh", cwd: ${JSON.stringify(scratch.path)},
  env: { PATH: process.env.PATH }, launcher: ProcessLauncher.unconfined(),
  profile: { writable: [${JSON.stringify(scratch.path)}], network: { internet: true, modelProxy: false } },
  signal: new AbortController().signal, onOutput() {} });`,
    );
    const child = spawn(process.execPath, ["--conditions=source", runner], { stdio: "ignore" });
    await waitFor(
      () => existsSync(pids) && readFileSync(pids, "utf8").trim().split(/\s+/).length >= 3,
    );
    const stepPids = readFileSync(pids, "utf8").trim().split(/\s+/).map(Number);
    expect(stepPids.every(running)).toBe(true);
    child.kill("SIGKILL");
    await once(child, "exit");
    await waitFor(() => !stepPids.some(running), 60_000);
    // Well past the sleeps: nothing of the step was left to write.
    await new Promise((resolveWait) => setTimeout(resolveWait, 3_500));
    expect(existsSync(late)).toBe(false);
  });
});
