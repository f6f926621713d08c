import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ProcessLauncher } from "@deckhand/sandbox";
import { SpawnHost } from "@deckhand/spawn-host";
import { afterEach, describe, expect, it } from "vitest";
import { temporaryDirectory } from "../test/support.ts";
import { runLocalStep } from "./run-local-step.ts";

const moduleUrl = new URL("./run-local-step.ts", import.meta.url).href;
const sandboxUrl = new URL("../../sandbox/src/index.ts", import.meta.url).href;
const spawnHostUrl = new URL("../../spawn-host/src/index.ts", import.meta.url).href;

let scratch: ReturnType<typeof temporaryDirectory>;
let spawnHost: SpawnHost | undefined;
afterEach(() => {
  scratch?.remove();
  spawnHost?.close();
});

/** A launcher whose steps the (ready) spawn host starts, as in a server. */
async function hostedLauncher(): Promise<ProcessLauncher> {
  spawnHost = new SpawnHost();
  expect(await spawnHost.ready()).toBe(true);
  return new ProcessLauncher({ capability: { kind: "none", reason: "a test" }, spawnHost });
}

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

  it("runs the step from the spawn host, with its exit code and output", async () => {
    scratch = temporaryDirectory();
    const launcher = await hostedLauncher();
    let stdout = "";
    const result = await runLocalStep({
      script: 'echo "parent $PPID"; echo oops >&2; exit 4',
      shell: "sh",
      cwd: scratch.path,
      env: { PATH: process.env.PATH ?? "" },
      launcher,
      profile: { writable: [scratch.path], network: { internet: true, modelProxy: false } },
      signal: new AbortController().signal,
      onOutput: (stream, data) => {
        stdout += `${stream}: ${data.toString("utf8")}`;
      },
    });
    expect(result.exitCode).toBe(4);
    expect(stdout).toContain(`stdout: parent ${spawnHost!.pid}\n`);
    expect(stdout).toContain("stderr: oops\n");
  });

  it("stops a step aborted before the spawn host has reported its start, its group included", async () => {
    scratch = temporaryDirectory();
    const launcher = await hostedLauncher();
    const pids = join(scratch.path, "pids");
    const controller = new AbortController();
    const result = runLocalStep({
      script: `sleep 600 & echo $$ $! > ${pids}; wait`,
      shell: "sh",
      cwd: scratch.path,
      env: { PATH: process.env.PATH ?? "" },
      launcher,
      profile: { writable: [scratch.path], network: { internet: true, modelProxy: false } },
      signal: controller.signal,
      onOutput: () => {},
    });
    // The host has not answered yet: the step's pid is not known here.
    controller.abort();
    expect(await result).toEqual({ exitCode: null });
    // Had the abort been lost, the step would have written its pids and slept on.
    await waitFor(() => !existsSync(pids) || readFileSync(pids, "utf8").includes("\n"), 60_000);
    const stepPids = existsSync(pids)
      ? readFileSync(pids, "utf8").trim().split(/\s+/).map(Number)
      : [];
    await waitFor(() => !stepPids.some(running), 60_000);
  });

  it.each([
    { how: "forked by it", launcher: "ProcessLauncher.unconfined()" },
    {
      how: "started by its spawn host",
      launcher: `await (async () => {
  const spawnHost = new SpawnHost();
  if (!(await spawnHost.ready())) throw new Error("no spawn host");
  return new ProcessLauncher({ capability: { kind: "none", reason: "a test" }, spawnHost });
})()`,
    },
  ])(
    "dies with the process that runs it, even one killed with SIGKILL ($how)",
    async ({ launcher }) => {
      scratch = temporaryDirectory();
      const pids = join(scratch.path, "pids");
      const late = join(scratch.path, "late");
      // The step and a background child of it each write their pid, then sleep; if they
      // outlived their runner they would write `late`. The sleeps are far longer than any wait
      // for the kill, so a loaded machine that takes seconds to deliver it cannot make a step
      // that does die write `late` first.
      const script = `(echo $$ $(exec sh -c 'echo $PPID') >> ${pids}; sleep 60; echo child > ${late}) & echo $$ >> ${pids}; sleep 60; echo step > ${late}`;
      const runner = join(scratch.path, "runner.mts");
      writeFileSync(
        runner,
        `import { runLocalStep } from ${JSON.stringify(moduleUrl)};
import { ProcessLauncher } from ${JSON.stringify(sandboxUrl)};
import { SpawnHost } from ${JSON.stringify(spawnHostUrl)};
await runLocalStep({ script: ${JSON.stringify(script)}, shell: "sh", cwd: ${JSON.stringify(scratch.path)},
  env: { PATH: process.env.PATH }, launcher: ${launcher},
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
      await waitFor(() => !stepPids.some(running), 50_000);
      // Every process that could write `late` is gone, and none did first.
      expect(existsSync(late)).toBe(false);
    },
  );
});
