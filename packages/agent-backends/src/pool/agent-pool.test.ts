import { afterEach, describe, expect, it } from "vitest";
import type { AgentBackend } from "../backend.ts";
import { AgentPool, type AgentPoolKey } from "./agent-pool.ts";

function fakeBackend(log: string[], name: string): AgentBackend {
  let status: "idle" | "closed" = "idle";
  return {
    async ensureSession() {
      return { agentSessionId: name, resumed: false };
    },
    async prompt() {
      return { stopReason: "end_turn", text: "" };
    },
    async cancel() {},
    async respondToPermission() {},
    async closeSession() {},
    async dispose() {
      status = "closed";
      log.push(`dispose ${name}`);
    },
    health() {
      return { status, pid: null, lastError: null };
    },
  };
}

const pools: AgentPool[] = [];
afterEach(async () => {
  for (const pool of pools.splice(0)) await pool.shutdown();
});

function pool(options: { idleTimeoutMs?: number; now?: () => number; fail?: boolean } = {}) {
  const log: string[] = [];
  let created = 0;
  const disposed: AgentPoolKey[] = [];
  const instance = new AgentPool({
    create: async (key) => {
      created += 1;
      log.push(`create ${key.agent}`);
      if (options.fail && created === 1) throw new Error("agent missing");
      return fakeBackend(log, `${key.sessionId}/${key.agent}#${created}`);
    },
    onDisposed: (key) => {
      disposed.push(key);
    },
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
    ...(options.now ? { now: options.now } : {}),
  });
  pools.push(instance);
  return { instance, log, disposed, created: () => created };
}

describe("AgentPool", () => {
  it("creates one backend per (session, agent), shared by concurrent uses", async () => {
    const { instance, created } = pool();
    const key = { sessionId: "s1", agent: "codex" };
    const names = await Promise.all(
      [1, 2, 3].map(() =>
        instance.use(key, async (backend) => (await backend.ensureSession()).agentSessionId),
      ),
    );
    expect(new Set(names).size).toBe(1);
    await instance.use({ sessionId: "s1", agent: "deckhand" }, async () => {});
    await instance.use({ sessionId: "s2", agent: "codex" }, async () => {});
    expect(created()).toBe(3);
    expect(instance.size).toBe(3);
  });

  it("disposes backends idle past the timeout, but never a busy one", async () => {
    let now = 0;
    const { instance, log, disposed } = pool({ idleTimeoutMs: 1_000, now: () => now });
    const idleKey = { sessionId: "s1", agent: "codex" };
    const busyKey = { sessionId: "s1", agent: "deckhand" };
    await instance.use(idleKey, async () => {});
    let release!: () => void;
    const busy = instance.use(
      busyKey,
      () => new Promise<void>((resolveWork) => (release = resolveWork)),
    );
    await new Promise((resolveWait) => setTimeout(resolveWait, 0));
    now = 5_000;
    expect(await instance.sweepIdle()).toBe(1);
    expect(disposed).toEqual([idleKey]);
    expect(log).toContain("dispose s1/codex#1");
    release();
    await busy;
    now = 10_000;
    expect(await instance.sweepIdle()).toBe(1);
    expect(instance.size).toBe(0);
  });

  it("forgets a backend whose creation failed, so the next use tries again", async () => {
    const { instance, created } = pool({ fail: true });
    const key = { sessionId: "s1", agent: "codex" };
    await expect(instance.use(key, async () => {})).rejects.toThrow("agent missing");
    await instance.use(key, async () => {});
    expect(created()).toBe(2);
  });

  it("peeks without creating, closes a session's backends, and disposes all on shutdown", async () => {
    const { instance, log } = pool();
    expect(await instance.peek({ sessionId: "s1", agent: "codex" })).toBeUndefined();
    await instance.use({ sessionId: "s1", agent: "codex" }, async () => {});
    await instance.use({ sessionId: "s1", agent: "deckhand" }, async () => {});
    await instance.use({ sessionId: "s2", agent: "codex" }, async () => {});
    expect(await instance.peek({ sessionId: "s1", agent: "codex" })).toBeDefined();
    await instance.closeSession("s1");
    expect(instance.size).toBe(1);
    expect((await instance.health()).map((entry) => entry.sessionId)).toEqual(["s2"]);
    await instance.shutdown();
    expect(log.filter((line) => line.startsWith("dispose"))).toHaveLength(3);
    await expect(instance.use({ sessionId: "s3", agent: "codex" }, async () => {})).rejects.toThrow(
      "shut down",
    );
  });
});
