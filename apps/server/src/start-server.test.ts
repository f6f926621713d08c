import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { enqueue, TaskRegistry } from "@deckhand/db";
import { WirePath } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import { resolveServerConfig } from "./config.ts";
import { type RunningServer, startServer } from "./start-server.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "deckhand-server-start-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function start(
  dataDir: string,
  flags: { workspaceAgent?: boolean } = {},
  tasks?: TaskRegistry,
): Promise<{ server: RunningServer; logs: () => string }> {
  const destination = new PassThrough();
  let logs = "";
  destination.on("data", (chunk: Buffer) => {
    logs += chunk.toString("utf8");
  });
  const config = resolveServerConfig(
    { listen: "127.0.0.1:0", dataDir, ...flags },
    { environment: {} },
  );
  const server = await startServer(config, {
    logDestination: destination,
    ...(tasks ? { tasks } : {}),
  });
  cleanups.push(() => server.close());
  return { server, logs: () => logs };
}

describe("startServer", () => {
  it("serves health with the embedded database and a reachable workspace agent", async () => {
    const dataDir = tempDir();
    const { server, logs } = await start(dataDir);
    expect(existsSync(join(dataDir, "workspaces"))).toBe(true);
    expect(existsSync(join(dataDir, "db"))).toBe(true);
    const response = await fetch(`${server.url}${WirePath.serverApi}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      status: "ok",
      database: { ok: true, kind: "pglite" },
      queue: { ok: true },
      agent: { ok: true, url: server.agent!.url },
    });
    expect(logs()).toContain("deckhand server listening");
    expect(logs()).toContain(server.url);
  });

  it("close stops the HTTP server, the agent and the database", async () => {
    const { server } = await start(tempDir());
    const agentUrl = server.agent!.url;
    await server.close();
    await expect(fetch(`${server.url}${WirePath.serverApi}/health`)).rejects.toThrow();
    await expect(fetch(`${agentUrl}${WirePath.agentHealth}`)).rejects.toThrow();
    await expect(server.database.query("select 1")).rejects.toThrow();
    await server.close();
  });

  it("keeps data across restarts in the same data directory", async () => {
    const dataDir = tempDir();
    const first = await start(dataDir, { workspaceAgent: false });
    expect(first.server.agent).toBeNull();
    await first.server.modelUsage.record({
      jobId: "j",
      agentType: "codex",
      upstream: "http://127.0.0.1:1",
      upstreamKind: "openai",
      endpoint: "responses",
      requestBytes: 1,
      responseBytes: 2,
      status: 200,
      outcome: "completed",
    });
    await first.server.close();
    const second = await start(dataDir, { workspaceAgent: false });
    expect((await second.server.modelUsage.forJob("j")).length).toBe(1);
  });

  it("runs registered task types with the worker", async () => {
    const seen: unknown[] = [];
    const tasks = new TaskRegistry().register<{ n: number }>("test.echo", {
      handle: async (payload) => {
        seen.push(payload);
      },
    });
    const { server } = await start(tempDir(), { workspaceAgent: false }, tasks);
    await enqueue(server.database.db, { type: "test.echo", payload: { n: 1 } });
    for (let attempt = 0; seen.length === 0 && attempt < 100; attempt += 1) {
      await new Promise((resolveWait) => setTimeout(resolveWait, 20));
    }
    expect(seen).toEqual([{ n: 1 }]);
  });
});
