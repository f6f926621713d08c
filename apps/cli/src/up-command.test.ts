import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ADMIN_TOKEN_ENV, DATABASE_URL_ENV } from "@deckhand/server-app";
import { WireEnv, WirePath } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import { MALLOC_ARENA_MAX_ENV } from "./bounded-malloc-arenas.ts";

const cliEntry = fileURLToPath(new URL("./bin.ts", import.meta.url));
const cliRoot = fileURLToPath(new URL("..", import.meta.url));

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

/** Runs `deckhand up <args>` from the checkout, as a user would. */
function spawnUp(args: string[], extraEnvironment: NodeJS.ProcessEnv = {}): ChildProcess {
  const environment = { ...process.env };
  // The test must not pick up a developer's database, admin token or server settings.
  for (const name of [
    DATABASE_URL_ENV,
    ADMIN_TOKEN_ENV,
    WireEnv.serverListen,
    WireEnv.serverDataDir,
    WireEnv.serverLogLevel,
    MALLOC_ARENA_MAX_ENV,
  ]) {
    delete environment[name];
  }
  Object.assign(environment, extraEnvironment);
  const child = spawn(process.execPath, ["--conditions=source", cliEntry, "up", ...args], {
    cwd: cliRoot,
    env: environment,
    stdio: ["ignore", "pipe", "pipe"],
  });
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  return child;
}

function exited(child: ChildProcess): Promise<{ code: number | null; stderr: string }> {
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  return new Promise((resolveExit) => child.once("exit", (code) => resolveExit({ code, stderr })));
}

/** A variable of the running process's environment, as the kernel holds it. */
function environmentOf(child: ChildProcess, name: string): string | undefined {
  const entries = readFileSync(`/proc/${child.pid}/environ`, "utf8").split("\0");
  return entries.find((entry) => entry.startsWith(`${name}=`))?.slice(name.length + 1);
}

function listeningUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolveUrl, reject) => {
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
      for (const line of output.split("\n")) {
        if (!line.includes("deckhand server listening")) continue;
        resolveUrl((JSON.parse(line) as { url: string }).url);
      }
    });
    child.once("exit", (code) => reject(new Error(`exited with ${code} before listening`)));
  });
}

describe("deckhand up", () => {
  it("starts on the embedded database, answers health and exits 0 on SIGTERM", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "deckhand-up-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const child = spawnUp(["--listen", "127.0.0.1:0", "--data-dir", dataDir]);
    const exit = exited(child);
    const url = await listeningUrl(child);
    const response = await fetch(`${url}${WirePath.serverApi}/health`);
    expect(response.status).toBe(200);
    // The server started again in the same process under two malloc arenas.
    if (process.platform === "linux") expect(environmentOf(child, MALLOC_ARENA_MAX_ENV)).toBe("2");
    expect(await response.json()).toMatchObject({
      status: "ok",
      database: { ok: true, kind: "pglite" },
      agent: { ok: true },
    });
    child.kill("SIGTERM");
    expect((await exit).code).toBe(0);
  });

  it("takes its listen address and data directory from the environment", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "deckhand-up-env-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const child = spawnUp(["--no-agent"], {
      [WireEnv.serverListen]: "127.0.0.1:0",
      [WireEnv.serverDataDir]: dataDir,
      [MALLOC_ARENA_MAX_ENV]: "4",
    });
    const exit = exited(child);
    const url = await listeningUrl(child);
    expect((await fetch(`${url}${WirePath.serverApi}/health`)).status).toBe(200);
    if (process.platform === "linux") expect(environmentOf(child, MALLOC_ARENA_MAX_ENV)).toBe("4");
    expect(existsSync(join(dataDir, "db"))).toBe(true);
    child.kill("SIGTERM");
    expect((await exit).code).toBe(0);
  });

  it("exits 2 with one line naming a bad environment variable", async () => {
    const child = spawnUp([], { [WireEnv.serverLogLevel]: "loud" });
    const { code, stderr } = await exited(child);
    expect(code).toBe(2);
    expect(stderr).toBe(
      `deckhand up: ${WireEnv.serverLogLevel} "loud" is not a log level; use one of fatal, error, warn, info, debug, silent\n`,
    );
  });

  it("exits 2 with one line naming the bad setting, without a stack trace", async () => {
    const child = spawnUp(["--listen", "not-an-address"]);
    const { code, stderr } = await exited(child);
    expect(code).toBe(2);
    expect(stderr).toMatch(/^deckhand up: --listen "not-an-address" is not host:port/);
    expect(stderr).not.toContain("    at ");
  });
});
