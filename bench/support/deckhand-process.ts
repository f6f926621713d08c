// Deckhand's CLI as its users run it: a process of its own, from the sources (what
// `pnpm deckhand` runs), timed from spawn to exit, with each stdout line stamped with the time it
// arrived; and `deckhand up` as a long-running process the benchmarks talk to.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type SpawnedService, spawnService } from "@deckhand/testkit";
import { WireEnv } from "@deckhand/wire";

export const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));
export const cliEntry = join(repositoryRoot, "apps/cli/src/bin.ts");
/** The published `deckhand` (every dependency inlined): what `npm install -g` gives users. */
export const bundledCliEntry = join(repositoryRoot, "apps/cli/dist/bin/deckhand.cjs");

/** Builds the bundled CLI from the current sources (and the web UI it ships, when missing). */
export function buildBundledCli(): void {
  const webDirectory = join(repositoryRoot, "apps/web");
  if (!existsSync(join(webDirectory, "dist/index.html"))) {
    execFileSync(join(webDirectory, "node_modules/.bin/vite"), ["build"], {
      cwd: webDirectory,
      stdio: "pipe",
    });
  }
  const cliDirectory = join(repositoryRoot, "apps/cli");
  execFileSync(join(cliDirectory, "node_modules/.bin/tsup"), [], {
    cwd: cliDirectory,
    stdio: "pipe",
  });
}

// GNU time reports the CPU the command and every child it waited for used: on a machine other
// work keeps busy, CPU seconds hold still where wall time does not.
const GNU_TIME = "/usr/bin/time";
const cpuTimeAvailable = existsSync(GNU_TIME);

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
  /** User + system CPU ms of the process and its children; null without /usr/bin/time. */
  cpuMs: number | null;
  code: number | null;
  lines: CliLine[];
  stderr: string;
}

/**
 * `deckhand <args>` as a process; `nodeArgs` go before the entry (--cpu-prof, --import);
 * `entry` is the sources' bin (TypeScript through --conditions=source) unless given.
 */
export function runCli(
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; nodeArgs?: string[]; entry?: string },
): Promise<CliRun> {
  const entry = options.entry ?? cliEntry;
  const command = [
    process.execPath,
    ...(options.nodeArgs ?? []),
    ...(entry === cliEntry ? ["--conditions=source"] : []),
    entry,
    ...args,
  ];
  const timeDirectory = cpuTimeAvailable ? mkdtempSync(join(tmpdir(), "deckhand-cli-time-")) : null;
  const timeFile = timeDirectory === null ? null : join(timeDirectory, "cpu");
  const [file, ...fileArgs] =
    timeFile === null ? command : [GNU_TIME, "-f", "%U %S", "-o", timeFile, ...command];
  const started = performance.now();
  const child = spawn(file!, fileArgs, {
    cwd: options.cwd,
    env: options.env ?? cleanEnvironment(),
    stdio: ["ignore", "pipe", "pipe"],
  });
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
    child.once("close", (code) => {
      const ms = performance.now() - started;
      resolveRun({ ms, cpuMs: readCpuMs(timeFile), code, lines, stderr });
      if (timeDirectory !== null) rmSync(timeDirectory, { recursive: true, force: true });
    });
  });
}

/** The "user system" seconds GNU time wrote (after any "Command exited" line), in ms. */
function readCpuMs(timeFile: string | null): number | null {
  if (timeFile === null) return null;
  try {
    const last = readFileSync(timeFile, "utf8").trim().split("\n").at(-1) ?? "";
    const [user, system] = last.split(" ").map(Number);
    return user === undefined || system === undefined || Number.isNaN(user + system)
      ? null
      : (user + system) * 1000;
  } catch {
    return null;
  }
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
