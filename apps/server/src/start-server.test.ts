import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { createDb, enqueue, TaskRegistry } from "@deckhand/db";
import { type ServerHealth, ServerPath, WirePath, WireSubprotocol } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
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
  taskShutdownTimeoutMs?: number,
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
    ...(taskShutdownTimeoutMs !== undefined ? { taskShutdownTimeoutMs } : {}),
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

  it("leaves queued tasks alone with runTasks false, as the CLI's embedded server does", async () => {
    const seen: unknown[] = [];
    const tasks = new TaskRegistry().register<{ n: number }>("test.echo", {
      handle: async (payload) => {
        seen.push(payload);
      },
    });
    const dataDir = tempDir();
    const config = resolveServerConfig(
      { listen: "127.0.0.1:0", dataDir, workspaceAgent: false },
      { environment: {} },
    );
    const server = await startServer(config, {
      logDestination: new PassThrough(),
      tasks,
      runTasks: false,
      warmUpProviders: false,
    });
    cleanups.push(() => server.close());
    await enqueue(server.database.db, { type: "test.echo", payload: { n: 1 } });
    await new Promise((resolveWait) => setTimeout(resolveWait, 500));
    expect(seen).toEqual([]);
    // The API still answers; only the queue reports that this process runs no tasks.
    const health = await fetch(`${server.url}${ServerPath.health}`);
    expect(((await health.json()) as ServerHealth).queue.ok).toBe(false);
  });

  it("lets a running task finish during shutdown while HTTP still answers it", async () => {
    const seen: { queueOkDuringShutdown?: boolean; httpStatus?: number } = {};
    let serverUrl = "";
    const tasks = new TaskRegistry().register("test.finishing", {
      // Stands in for an agent turn: it waits until shutdown has begun (the health check
      // reports the queue stopped), then needs the server's HTTP listener, as a turn needs the
      // model proxy, and only then finishes.
      handle: async () => {
        for (;;) {
          const health = (await (
            await fetch(`${serverUrl}${ServerPath.health}`)
          ).json()) as ServerHealth;
          if (!health.queue.ok) {
            seen.queueOkDuringShutdown = false;
            break;
          }
          await new Promise((resolveWait) => setTimeout(resolveWait, 20));
        }
        seen.httpStatus = (await fetch(`${serverUrl}${ServerPath.projects}`)).status;
      },
    });
    const dataDir = tempDir();
    const { server } = await start(dataDir, { workspaceAgent: false }, tasks);
    serverUrl = server.url;
    await enqueue(server.database.db, { type: "test.finishing", payload: {} });
    await waitForTaskStatus(server, "running");
    await server.close();
    expect(seen).toEqual({ queueOkDuringShutdown: false, httpStatus: 200 });
    const rows = await readTasks(dataDir);
    expect(rows).toEqual([{ type: "test.finishing", status: "succeeded", attempts: 1 }]);
  });

  it("as shutdown begins, closes the browsers' streams and refuses new work with a 503, while reads go on", async () => {
    const seen: { closeCode?: number; post?: number; message?: string; get?: number } = {};
    let serverUrl = "";
    let streamClosed: Promise<number> = new Promise(() => {});
    const tasks = new TaskRegistry().register("test.watching", {
      // Holds the worker (shutdown waits for it) and looks at the server meanwhile.
      handle: async () => {
        for (;;) {
          const health = (await (
            await fetch(`${serverUrl}${ServerPath.health}`)
          ).json()) as ServerHealth;
          if (!health.queue.ok) break;
          await new Promise((resolveWait) => setTimeout(resolveWait, 20));
        }
        seen.closeCode = await streamClosed;
        const post = await fetch(`${serverUrl}${ServerPath.projects}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ repository_path: "/nowhere" }),
        });
        seen.post = post.status;
        seen.message = ((await post.json()) as { error: { message: string } }).error.message;
        seen.get = (await fetch(`${serverUrl}${ServerPath.projects}`)).status;
      },
    });
    const { server } = await start(tempDir(), { workspaceAgent: false }, tasks);
    serverUrl = server.url;
    const socket = new WebSocket(
      `${server.url.replace(/^http/, "ws")}${ServerPath.sessionActivity}`,
      [WireSubprotocol.sessionActivity],
    );
    streamClosed = new Promise((resolveClose) => socket.once("close", resolveClose));
    await new Promise((resolveOpen, rejectOpen) => {
      socket.once("open", resolveOpen);
      socket.once("error", rejectOpen);
    });
    await enqueue(server.database.db, { type: "test.watching", payload: {} });
    await waitForTaskStatus(server, "running");
    await server.close();
    expect(seen).toEqual({
      closeCode: 1001,
      post: 503,
      message: "the server is shutting down; send this again once it is back",
      get: 200,
    });
  });

  it("releases a task still running at the shutdown bound; it completes after a restart", async () => {
    let aborted = false;
    const slow = new TaskRegistry().register("test.slow", {
      handle: (_payload, context) =>
        new Promise<void>((_resolve, reject) => {
          context.signal.addEventListener("abort", () => {
            aborted = true;
            reject(context.signal.reason);
          });
        }),
    });
    const dataDir = tempDir();
    const first = await start(dataDir, { workspaceAgent: false }, slow, 300);
    await enqueue(first.server.database.db, { type: "test.slow", payload: { n: 7 } });
    await waitForTaskStatus(first.server, "running");
    await first.server.close();
    expect(aborted).toBe(true);
    // Back to pending, unlocked, and the interrupted attempt not counted.
    expect(await readTasks(dataDir)).toEqual([
      { type: "test.slow", status: "pending", attempts: 0 },
    ]);

    const attempts: number[] = [];
    const quick = new TaskRegistry().register<{ n: number }>("test.slow", {
      handle: async (payload, context) => {
        expect(payload).toEqual({ n: 7 });
        attempts.push(context.attempt);
      },
    });
    const second = await start(dataDir, { workspaceAgent: false }, quick);
    await waitForTaskStatus(second.server, "succeeded");
    expect(attempts).toEqual([1]);
  });
});

async function waitForTaskStatus(server: RunningServer, status: string): Promise<void> {
  for (let attempt = 0; attempt < 500; attempt += 1) {
    const { rows } = await server.database.query<{ status: string }>("select status from tasks");
    if (rows.length > 0 && rows.every((row) => row.status === status)) return;
    await new Promise((resolveWait) => setTimeout(resolveWait, 20));
  }
  throw new Error(`tasks did not reach ${status}`);
}

/** The tasks table of a stopped server's embedded database. */
async function readTasks(dataDir: string): Promise<unknown[]> {
  const database = await createDb({ dataDir: join(dataDir, "db") });
  try {
    const { rows } = await database.query(
      "select type, status, attempts from tasks where locked_by is null order by id",
    );
    return rows;
  } finally {
    await database.close();
  }
}
