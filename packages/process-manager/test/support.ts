// Helpers shared by this package's tests; not part of the public API.
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { errnoCode } from "@deckhand/errors";
import { WirePath } from "@deckhand/wire";
import { type ServerType, serve } from "@hono/node-server";
import { Hono } from "hono";
import { ProcessClient, type ProcessClientOptions } from "../src/process-client.ts";
import { ProcessManager, type ProcessManagerOptions } from "../src/process-manager.ts";
import { createProcessRouter } from "../src/process-router.ts";

/** Chat ids for scoping tests. */
export const CHAT_A = "6f0c7a0e-8a0f-4f57-9a47-3b8f3a1c0a01";
export const CHAT_B = "0d3bc0a4-5a0e-4d8e-8f0e-3c2a1b9d0b02";
export const CHAT_PARENT = "a7e9d1c2-3b4f-4a5e-9c8d-7e6f5a4b3c03";

/** Managers created by `createManager`; `stopAll` shuts every one down. */
const managers = new Set<ProcessManager>();
const servers = new Set<ServerType>();
const directories = new Set<string>();

/** A fresh directory (its real path), removed by `stopAll`. */
export function temporaryDirectory(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-process-manager-")));
  directories.add(directory);
  return directory;
}

/** A manager with short timers, so tests need not wait for production grace periods. */
export function createManager(options: ProcessManagerOptions = {}): ProcessManager {
  const manager = new ProcessManager({
    terminateGraceMs: 500,
    pipeDrainMs: 1000,
    ...options,
  });
  managers.add(manager);
  return manager;
}

export interface TestServer {
  url: string;
  manager: ProcessManager;
  client(options?: Omit<ProcessClientOptions, "baseUrl">): ProcessClient;
}

/** Serves the process router at its wire path on 127.0.0.1, on a free port. */
export async function serveManager(manager: ProcessManager): Promise<TestServer> {
  const app = new Hono();
  app.route(WirePath.processes, createProcessRouter(manager));
  const server = await new Promise<ServerType>((resolveServer) => {
    const instance = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () =>
      resolveServer(instance),
    );
  });
  servers.add(server);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    manager,
    client: (options = {}) => new ProcessClient({ baseUrl: url, ...options }),
  };
}

/** Stops every process group and server the tests started. */
export async function stopAll(): Promise<void> {
  await Promise.all([...managers].map((manager) => manager.shutdown({ graceMs: 200 })));
  managers.clear();
  await Promise.all(
    [...servers].map(
      (server) =>
        new Promise<void>((resolveClose) => {
          server.close(() => resolveClose());
          if ("closeAllConnections" in server) server.closeAllConnections();
        }),
    ),
  );
  servers.clear();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  directories.clear();
}

/**
 * Whether a process still runs. A zombie counts as gone: it has exited and only waits for
 * whichever init adopted it to reap it, which some container inits do only now and then.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return errnoCode(error) !== "ESRCH";
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** Polls until `check` holds; generous by default because the machine may be busy. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<boolean> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolveDelay) => setTimeout(resolveDelay, options.intervalMs ?? 25));
  }
}

/** Waits until the process's output contains `text`, and returns that output. */
export async function outputContaining(
  manager: ProcessManager,
  id: string,
  text: string,
): Promise<string> {
  let output = "";
  const found = await eventually(() => {
    output = manager.output(id).output;
    return output.includes(text);
  });
  if (!found) throw new Error(`output of ${id} never contained ${JSON.stringify(text)}: ${output}`);
  return output;
}
