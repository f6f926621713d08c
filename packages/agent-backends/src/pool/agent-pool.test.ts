import { afterEach, describe, expect, it } from "vitest";
import type { AgentBackend } from "../backend.ts";
import { AgentPool, type AgentPoolKey } from "./agent-pool.ts";

type FakeBackend = AgentBackend & { crash(): void; recover(): void };

function fakeBackend(log: string[], name: string): FakeBackend {
  let status: "idle" | "closed" | "crashed" = "idle";
  return {
    crash() {
      status = "crashed";
    },
    recover() {
      status = "idle";
    },
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
  const reasons: string[] = [];
  const crashes: string[] = [];
  const backends: FakeBackend[] = [];
  const instance = new AgentPool({
    create: async (key) => {
      created += 1;
      log.push(`create ${key.agent}`);
      if (options.fail && created === 1) throw new Error("agent missing");
      const backend = fakeBackend(log, `${key.sessionId}/${key.agent}#${created}`);
      backends.push(backend);
      return backend;
    },
    onDisposed: (key, reason) => {
      disposed.push(key);
      reasons.push(`${key.agent} ${reason}`);
    },
    onCrashed: (key, health) => {
      crashes.push(`${key.agent} ${health.status}`);
    },
    // Tests call checkHealth themselves.
    healthIntervalMs: 60_000,
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
    ...(options.now ? { now: options.now } : {}),
  });
  pools.push(instance);
  return { instance, log, disposed, reasons, crashes, backends, created: () => created };
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

  it("says why each backend was disposed, and sweeps with a shorter idle time when asked", async () => {
    const { instance, reasons } = pool();
    await instance.use({ sessionId: "s1", agent: "codex" }, async () => {});
    await instance.use({ sessionId: "s1", agent: "deckhand" }, async () => {});
    await instance.use({ sessionId: "s2", agent: "codex" }, async () => {});
    // The idle timeout is a minute; a sweep asked to take anything unused disposes it now.
    expect(await instance.sweepIdle()).toBe(0);
    await instance.close({ sessionId: "s1", agent: "deckhand" });
    expect(await instance.sweepIdle(0)).toBe(2);
    await instance.use({ sessionId: "s3", agent: "codex" }, async () => {});
    await instance.shutdown();
    expect(reasons).toEqual(["deckhand closed", "codex idle", "codex idle", "codex shutdown"]);
  });

  it("reports a backend that crashed between uses once, and not one that crashed during a use", async () => {
    const { instance, crashes, backends } = pool();
    const key = { sessionId: "s1", agent: "codex" };
    await instance.use(key, async () => {});
    const [backend] = backends;
    backend!.crash();
    expect(await instance.checkHealth()).toEqual([key]);
    expect(await instance.checkHealth()).toEqual([]);
    expect(crashes).toEqual(["codex crashed"]);

    // Started again by the next use, it crashes during a use: that user reports it.
    await instance.use(key, async () => {
      backend!.recover();
      backend!.crash();
    });
    expect(await instance.checkHealth()).toEqual([]);
    // Recovered by a use and crashed again afterwards: news again.
    await instance.use(key, async () => backend!.recover());
    backend!.crash();
    expect(await instance.checkHealth()).toEqual([key]);
    expect(crashes).toHaveLength(2);
  });
});
