// Deckhand's CLI as its users run it: a process of its own, from the sources (what
// `pnpm deckhand` runs), timed from spawn to exit, with each stdout line stamped with the time it
// arrived; and `deckhand up` as a long-running process the benchmarks talk to.
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type SpawnedService, spawnService } from "@deckhand/testkit";
import { WireEnv } from "@deckhand/wire";

export const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));
export const cliEntry = join(repositoryRoot, "apps/cli/src/bin.ts");

/** This environment without what would point the CLI or server at another Deckhand. */
export function cleanEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const environment = { ...process.env };
  for (const name of [
    "DATABASE_URL",
    WireEnv.adminToken,
    WireEnv.serverDataDir,
    WireEnv.serverListen,
    WireEnv.serverLogLevel,
  ]) {
    delete environment[name];
  }
  return { ...environment, ...extra };
}

export interface CliLine {
  /** Milliseconds from spawn to the line's arrival. */
  at: number;
  json: Record<string, unknown> | null;
  text: string;
}

export interface CliRun {
  ms: number;
  code: number | null;
  lines: CliLine[];
  stderr: string;
}

/** `deckhand <args>` as a process; `nodeArgs` go before the entry (--cpu-prof, --import). */
export function runCli(
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; nodeArgs?: string[] },
): Promise<CliRun> {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), "--conditions=source", cliEntry, ...args],
    { cwd: options.cwd, env: options.env ?? cleanEnvironment(), stdio: ["ignore", "pipe", "pipe"] },
  );
  const lines: CliLine[] = [];
  let pending = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    const at = performance.now() - started;
    pending += chunk.toString("utf8");
    const complete = pending.split("\n");
    pending = complete.pop() ?? "";
    for (const text of complete) {
      let json: Record<string, unknown> | null = null;
      try {
        json = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // Not a JSON line.
      }
      lines.push({ at, json, text });
    }
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  return new Promise((resolveRun, reject) => {
    child.once("error", reject);
    child.once("close", (code) =>
      resolveRun({ ms: performance.now() - started, code, lines, stderr }),
    );
  });
}

/** Throws with what the command printed unless it exited 0. */
export function expectSuccess(run: CliRun, what: string): CliRun {
  if (run.code !== 0) {
    throw new Error(
      `${what} exited ${run.code}:\n${run.stderr}\n${run.lines.map((line) => line.text.slice(0, 400)).join("\n")}`,
    );
  }
  return run;
}

/** `deckhand up` from the sources on `dataDir`, on a free loopback port. */
export function startDeckhandUp(
  dataDir: string,
  env: NodeJS.ProcessEnv = cleanEnvironment(),
  nodeArgs: string[] = [],
): Promise<SpawnedService> {
  return spawnService(
    process.execPath,
    [
      ...nodeArgs,
      "--conditions=source",
      cliEntry,
      "up",
      "--listen",
      "127.0.0.1:0",
      "--data-dir",
      dataDir,
    ],
    {
      readyMessage: "deckhand server listening",
      cwd: repositoryRoot,
      env,
      // A first start makes the embedded database: tens of seconds on a loaded machine.
      timeoutMs: 180_000,
    },
  );
}

/** Sends SIGTERM and waits for the server's graceful exit. */
export async function stopService(service: SpawnedService): Promise<void> {
  if (service.child.exitCode !== null || service.child.signalCode !== null) return;
  service.child.kill("SIGTERM");
  await service.exited;
}

/** A git repository at `path` with `files` in one commit on main. */
export function createRepository(path: string, files: Record<string, string>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(path, name, ".."), { recursive: true });
    writeFileSync(join(path, name), content);
  }
  const git = (...args: string[]) => execFileSync("git", args, { cwd: path, stdio: "ignore" });
  git("init", "--quiet", "--initial-branch=main");
  git("add", "-A");
  git(
    "-c",
    "user.name=Bench",
    "-c",
    "user.email=bench@localhost",
    "commit",
    "--quiet",
    "-m",
    "init",
  );
}
