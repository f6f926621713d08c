import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type SpawnedService, spawnService } from "@deckhand/testkit";
import { ServerPath } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import {
  ADMIN_TOKEN_ENV,
  DATA_DIR_ENV,
  DATABASE_URL_ENV,
  LISTEN_ENV,
  LOG_LEVEL_ENV,
} from "../src/config.ts";

// The server's own entry point, run from source the way `deckhand up` runs it.
const serverEntry = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const serverDirectory = fileURLToPath(new URL("..", import.meta.url));

/** The environment without anything that would point the server elsewhere (PostgreSQL above all). */
function cleanEnvironment(): NodeJS.ProcessEnv {
  const environment = { ...process.env };
  for (const name of [DATABASE_URL_ENV, ADMIN_TOKEN_ENV, LISTEN_ENV, DATA_DIR_ENV, LOG_LEVEL_ENV]) {
    delete environment[name];
  }
  return environment;
}

const serverArguments = (dataDir: string) => [
  "--conditions=source",
  serverEntry,
  "--listen",
  "127.0.0.1:0",
  "--data-dir",
  dataDir,
  "--no-agent",
];

const started: SpawnedService[] = [];
const directories: string[] = [];
afterEach(async () => {
  for (const service of started.splice(0)) {
    if (service.child.exitCode === null && service.child.signalCode === null) {
      service.child.kill("SIGKILL");
      await service.exited;
    }
  }
  for (const directory of directories.splice(0))
    rmSync(directory, { recursive: true, force: true });
});

function temporaryDataDir(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-lock-")));
  directories.push(directory);
  return directory;
}

async function startServerProcess(dataDir: string): Promise<SpawnedService> {
  const service = await spawnService(process.execPath, serverArguments(dataDir), {
    readyMessage: "deckhand server listening",
    cwd: serverDirectory,
    env: cleanEnvironment(),
  });
  started.push(service);
  return service;
}

/** Runs a server that is expected to refuse to start; resolves with its exit code and stderr. */
async function runRefusedServer(dataDir: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, serverArguments(dataDir), {
    cwd: serverDirectory,
    env: cleanEnvironment(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  // Should it start after all, the test must still end: give it a bounded time, then stop it.
  // The bound is generous: on a busy machine loading the server from source takes a while
  // before it even reaches the lock.
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const [code] = (await once(child, "exit")) as [number | null];
  clearTimeout(timer);
  return { code, stderr };
}

describe("one server per data directory", () => {
  it("refuses a second server on the same --data-dir with exit 2 and one line naming the directory and the holder's pid", async () => {
    const dataDir = temporaryDataDir();
    const first = await startServerProcess(dataDir);

    const second = await runRefusedServer(dataDir);

    expect(second.code).toBe(2);
    expect(second.stderr).toBe(
      `deckhand up: the data directory ${dataDir} is in use by deckhand process ${first.child.pid}; ` +
        "stop that process, choose another --data-dir, or use PostgreSQL (--database-url) to run several processes\n",
    );
    // The first server was not disturbed.
    expect((await fetch(`${first.url}${ServerPath.health}`)).status).toBe(200);
  });

  it("releases the lock on a clean shutdown, so the next server starts", async () => {
    const dataDir = temporaryDataDir();
    const first = await startServerProcess(dataDir);
    // Answering a request means start-up has returned and the signal handlers are installed;
    // the "listening" line alone comes a moment earlier.
    expect((await fetch(`${first.url}${ServerPath.health}`)).status).toBe(200);
    first.child.kill("SIGTERM");
    expect(await first.exited).toEqual({ code: 0, signal: null });
    expect(existsSync(join(dataDir, "db", "deckhand.lock"))).toBe(false);

    const next = await startServerProcess(dataDir);
    expect((await fetch(`${next.url}${ServerPath.health}`)).status).toBe(200);
  });

  it("shuts down cleanly and releases the lock when SIGTERM arrives the moment it says it listens", async () => {
    const dataDir = temporaryDataDir();
    const server = await startServerProcess(dataDir);
    // No wait for a request: the signal lands right after the "listening" line.
    server.child.kill("SIGTERM");
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(existsSync(join(dataDir, "db", "deckhand.lock"))).toBe(false);
  });

  it("shuts down cleanly when SIGTERM arrives while it is still starting", async () => {
    const dataDir = temporaryDataDir();
    const child = spawn(process.execPath, serverArguments(dataDir), {
      cwd: serverDirectory,
      env: cleanEnvironment(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    // The first output line means the process runs its own code (and installed its handlers).
    await once(child.stdout, "data");
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    const [code, signal] = (await once(child, "exit")) as [number | null, string | null];
    clearTimeout(timer);
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(existsSync(join(dataDir, "db", "deckhand.lock"))).toBe(false);
  });

  it("takes over the lock of a server that was killed", async () => {
    const dataDir = temporaryDataDir();
    const killed = await startServerProcess(dataDir);
    killed.child.kill("SIGKILL");
    await killed.exited;
    expect(existsSync(join(dataDir, "db", "deckhand.lock"))).toBe(true);

    const next = await startServerProcess(dataDir);
    expect((await fetch(`${next.url}${ServerPath.health}`)).status).toBe(200);
  });
});
