import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentPool } from "@deckhand/agent-backends";
import { BatchRunService, ExecutionEnvironment } from "@deckhand/batches";
import { createDb, type DbHandle } from "@deckhand/db";
import { DbModelTokenStore, mintModelToken } from "@deckhand/model-proxy";
import type { ProviderService } from "@deckhand/providers";
import { createSessionDomain } from "@deckhand/sessions";
import { type FakeUpstream, startFakeUpstream } from "@deckhand/testkit";
import { WireHeader, WirePath } from "@deckhand/wire";
import { Hono } from "hono";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiTokenStore } from "./api-tokens.ts";
import { serverOriginPolicy } from "./config.ts";
import {
  createServerApp,
  MODEL_PROXY_MAX_BODY_BYTES,
  type ServerAppOptions,
} from "./create-server-app.ts";
import { DbUsageRecorder } from "./db-stores.ts";

const ADMIN_TOKEN = "admin-token-0123456789abcdef";
const UPSTREAM_KEY = "sk-upstream-key-0123456789";
const health = `${WirePath.serverApi}/health`;

let database: DbHandle;
let workDir: string;
let upstream: FakeUpstream;
beforeAll(async () => {
  database = await createDb({ dataDir: "memory://" });
  workDir = await mkdtemp(join(tmpdir(), "deckhand-server-app-"));
  upstream = await startFakeUpstream();
});
afterAll(async () => {
  await upstream.close();
  await database.close();
  await rm(workDir, { recursive: true, force: true });
});

function app(overrides: Partial<ServerAppOptions> = {}): Hono {
  return createServerApp({
    database,
    originPolicy: serverOriginPolicy({
      host: "127.0.0.1",
      publicUrl: null,
      allowedHosts: [],
      allowedOrigins: [],
    }),
    requireAuth: overrides.adminToken !== undefined && overrides.adminToken !== null,
    adminToken: null,
    sessions: createSessionDomain({
      database,
      projectsDir: join(workDir, "projects"),
      worktreesDir: join(workDir, "worktrees"),
    }),
    batches: new BatchRunService({
      database,
      codeHosts: () => [],
      environment: new ExecutionEnvironment({
        directories: {
          cacheDirectory: join(workDir, "cache"),
          workDirectory: join(workDir, "batches"),
          hookDirectory: join(workDir, "hooks"),
        },
      }),
    }),
    apiTokens: new ApiTokenStore(database.db),
    agentTurns: {
      cancel: async () => {},
      answerPermission: async () => {},
      health: async () => [],
      pool: new AgentPool({
        create: () => Promise.reject(new Error("no agents in these tests")),
      }),
    },
    agent: null,
    modelUpstreams: {
      codex: { kind: "openai", baseUrl: `${upstream.url}/v1`, apiKey: UPSTREAM_KEY },
    },
    modelTokens: new DbModelTokenStore(database.db),
    modelUsage: new DbUsageRecorder(database.db),
    logger: pino({ level: "silent" }),
    ...overrides,
  });
}

describe("GET /api/health", () => {
  it("reports the database kind, the queue and no agent when none runs", async () => {
    const response = await app().request(health);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      status: "ok",
      database: { ok: true, kind: "pglite" },
      queue: { ok: true },
      agent: null,
    });
  });

  it("checks the agent through its health route with its token", async () => {
    const seen: string[] = [];
    const agentApp = new Hono().get(WirePath.agentHealth, (context) => {
      seen.push(context.req.header(WireHeader.authorization) ?? "");
      return context.json({ status: "ok" });
    });
    const fetch = ((input: string | URL | Request, init?: RequestInit) =>
      agentApp.request(String(input), init)) as typeof globalThis.fetch;
    const response = await app({
      agent: { url: "http://agent.test", token: "agent-secret" },
      fetch,
    }).request(health);
    expect(await response.json()).toMatchObject({
      status: "ok",
      agent: { ok: true, url: "http://agent.test" },
    });
    expect(seen).toEqual(["Bearer agent-secret"]);
  });

  it("answers 503 degraded when the agent does not answer in time", async () => {
    const fetch = ((_input: unknown, init?: RequestInit) =>
      new Promise((_resolve, reject) => {
        init?.signal?.addEventListener("abort", () => reject(init.signal?.reason));
      })) as typeof globalThis.fetch;
    const response = await app({
      agent: { url: "http://agent.test", token: null },
      fetch,
      agentHealthTimeoutMs: 50,
    }).request(health);
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({
      status: "degraded",
      database: { ok: true },
      agent: { ok: false, url: "http://agent.test" },
    });
  });

  it("reports the queue down when the worker has stopped", async () => {
    const response = await app({ queueRunning: () => false }).request(health);
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ status: "degraded", queue: { ok: false } });
  });
});

describe("errors and auth", () => {
  it("answers unknown routes with a 404 in the error shape", async () => {
    const response = await app().request(`${WirePath.serverApi}/nothing-here`);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      error: { code: "not_found", message: expect.stringContaining("/nothing-here") },
    });
  });

  it("requires the admin token on every /api route and does not echo what was sent", async () => {
    const guarded = app({ adminToken: ADMIN_TOKEN });
    const wrong = "Bearer wrong-token-that-must-not-echo";
    for (const path of [health, `${WirePath.serverApi}/nothing-here`, WirePath.serverApi]) {
      const response = await guarded.request(path, {
        headers: { [WireHeader.authorization]: wrong },
      });
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
      const text = await response.text();
      expect(JSON.parse(text)).toEqual({
        error: { code: "unauthorized", message: expect.any(String) },
      });
      expect(text).not.toContain("wrong-token-that-must-not-echo");
    }
    const missing = await guarded.request(health);
    expect(missing.status).toBe(401);
    const ok = await guarded.request(health, {
      headers: { [WireHeader.authorization]: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(ok.status).toBe(200);
  });

  it("leaves the model-provider proxy to its own scoped tokens, not the admin token", async () => {
    const response = await app({ adminToken: ADMIN_TOKEN }).request(
      `${WirePath.modelProvider}/codex/v1/responses`,
      {
        method: "POST",
        headers: { [WireHeader.authorization]: `Bearer ${ADMIN_TOKEN}` },
        body: "{}",
      },
    );
    expect(response.status).toBe(401);
    expect(await response.text()).not.toContain(ADMIN_TOKEN);
  });
});

describe("limits and unexpected errors", () => {
  it("applies the configured body limit to /api with a 413 naming the setting", async () => {
    const response = await app({ maxRequestBodyBytes: 64 * 1024 }).request(
      `${WirePath.serverApi}/tokens`,
      {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": String(65 * 1024) },
        body: JSON.stringify({ name: "x".repeat(65 * 1024 - 11) }),
      },
    );
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({
      error: {
        code: "body_too_large",
        message: expect.stringContaining("raise maxRequestBodyBytes in config.json"),
      },
    });
  });

  it("gives the model-provider proxy its own 32 MiB limit rather than the /api one", async () => {
    const limited = app({ maxRequestBodyBytes: 64 * 1024 });
    const post = (bytes: number) =>
      limited.request(`${WirePath.modelProvider}/codex/v1/responses`, {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": String(bytes) },
        body: "{}",
      });
    const over = await post(MODEL_PROXY_MAX_BODY_BYTES + 1);
    expect(over.status).toBe(413);
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe("body_too_large");
    // Over the /api limit but under the proxy's: the proxy itself answers (no token: 401).
    expect((await post(1024 * 1024)).status).toBe(401);
  });

  it("logs an unexpected error of the providers routes at error level with its cause", async () => {
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    const failing = {
      getConfig: () => Promise.reject(new Error("disk on fire")),
    } as unknown as ProviderService;
    const response = await app({ logger, providers: failing }).request(
      `${WirePath.serverApi}/providers/config`,
    );
    expect(response.status).toBe(500);
    const failed = lines.map((line) => JSON.parse(line)).filter((entry) => entry.level === 50);
    expect(failed).toEqual([
      expect.objectContaining({
        msg: "request failed",
        path: `${WirePath.serverApi}/providers/config`,
        err: expect.objectContaining({ message: "disk on fire" }),
      }),
    ]);
  });
});

describe("model-provider proxy", () => {
  it("forwards with a database-minted token, swaps in the upstream key and records usage", async () => {
    const tokens = new DbModelTokenStore(database.db);
    const usage = new DbUsageRecorder(database.db);
    const minted = await mintModelToken(tokens, { jobId: "job-proxy", ttlMs: 60_000 });
    const response = await app({ modelTokens: tokens, modelUsage: usage }).request(
      `${WirePath.modelProvider}/codex/v1/responses`,
      {
        method: "POST",
        headers: {
          [WireHeader.authorization]: `Bearer ${minted.token}`,
          [WireHeader.jobId]: "job-proxy",
          "content-type": "application/json",
        },
        body: JSON.stringify({ model: "gpt-5-codex", stream: true, input: "hi" }),
      },
    );
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain("response.completed");
    const forwarded = upstream.requests.at(-1)!;
    expect(forwarded.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(JSON.stringify(forwarded)).not.toContain(minted.token);

    // Usage is recorded after the response ends.
    let rows = await usage.forJob("job-proxy");
    for (let attempt = 0; rows.length === 0 && attempt < 50; attempt += 1) {
      await new Promise((resolveWait) => setTimeout(resolveWait, 20));
      rows = await usage.forJob("job-proxy");
    }
    expect(rows).toEqual([
      expect.objectContaining({
        agentType: "codex",
        status: 200,
        inputTokens: 11,
        outputTokens: 7,
      }),
    ]);
  });

  it("refuses a database token presented for another job", async () => {
    const tokens = new DbModelTokenStore(database.db);
    const minted = await mintModelToken(tokens, { jobId: "job-a", ttlMs: 60_000 });
    const response = await app({ modelTokens: tokens }).request(
      `${WirePath.modelProvider}/codex/v1/responses`,
      {
        method: "POST",
        headers: {
          [WireHeader.authorization]: `Bearer ${minted.token}`,
          [WireHeader.jobId]: "job-b",
        },
        body: "{}",
      },
    );
    expect(response.status).toBe(401);
    expect(await response.text()).not.toContain(minted.token);
  });

  it("applies the configured per-token rate limit, and none when it is turned off", async () => {
    const tokens = new DbModelTokenStore(database.db);
    const minted = await mintModelToken(tokens, { jobId: "job-limit", ttlMs: 60_000 });
    const statuses = async (server: Hono) => {
      const seen: number[] = [];
      for (let attempt = 0; attempt < 3; attempt += 1) {
        const response = await server.request(`${WirePath.modelProvider}/codex/v1/responses`, {
          method: "POST",
          headers: {
            [WireHeader.authorization]: `Bearer ${minted.token}`,
            [WireHeader.jobId]: "job-limit",
            "content-type": "application/json",
          },
          body: JSON.stringify({ model: "gpt-5-codex", input: "hi" }),
        });
        await response.arrayBuffer();
        seen.push(response.status);
      }
      return seen;
    };
    const limited = app({
      modelTokens: tokens,
      modelProxyRateLimit: { burst: 2, perSecond: 0.001 },
    });
    expect(await statuses(limited)).toEqual([200, 200, 429]);
    expect(await statuses(app({ modelTokens: tokens, modelProxyRateLimit: false }))).toEqual([
      200, 200, 200,
    ]);
  });
});

describe("read-only settings views", () => {
  const KEY_CANARY = "sk-canary-upstream-key-settings-9f8e7d";
  const TOKEN_CANARY = "ghp_canaryCodeHostToken0123456789abcdef";

  function settingsApp(): Hono {
    return app({
      modelUpstreams: {
        codex: {
          kind: "openai",
          baseUrl: "https://models.example.com/v1",
          apiKey: KEY_CANARY,
          apiKeyEnv: "CANARY_OPENAI_KEY",
        },
        claude: {
          kind: "anthropic",
          baseUrl: "https://anthropic.example.com",
          apiKey: KEY_CANARY,
          apiKeyEnv: "CANARY_ANTHROPIC_KEY",
        },
      },
      codeHostConnections: [
        { type: "github", url: "https://github.com", tokenEnv: "CANARY_GITHUB_TOKEN" },
        {
          type: "gitlab",
          url: "https://gitlab.example.com/",
          tokenEnv: "CANARY_GITLAB_TOKEN",
          name: "work",
          publishRate: { perMinute: 12 },
        },
      ],
      environment: {
        CANARY_OPENAI_KEY: KEY_CANARY,
        CANARY_ANTHROPIC_KEY: KEY_CANARY,
        CANARY_GITHUB_TOKEN: TOKEN_CANARY,
      },
    });
  }

  it("lists each model upstream's agent type, format, endpoints and key variable, never the key", async () => {
    const response = await settingsApp().request(`${WirePath.serverApi}/model-upstreams`);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toContain(KEY_CANARY);
    expect(JSON.parse(text)).toEqual({
      model_upstreams: [
        {
          agent_type: "claude",
          kind: "anthropic",
          base_url: "https://anthropic.example.com",
          endpoints: ["messages", "count_tokens", "models"],
          api_key_env: "CANARY_ANTHROPIC_KEY",
          api_key_set: true,
        },
        {
          agent_type: "codex",
          kind: "openai",
          base_url: "https://models.example.com/v1",
          endpoints: ["responses", "chat_completions", "models"],
          api_key_env: "CANARY_OPENAI_KEY",
          api_key_set: true,
        },
      ],
    });
  });

  it("lists each code host connection with its token variable and whether it is set, never the token", async () => {
    const response = await settingsApp().request(`${WirePath.serverApi}/code-host-connections`);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toContain(TOKEN_CANARY);
    expect(JSON.parse(text)).toEqual({
      code_host_connections: [
        {
          name: "github.com",
          type: "github",
          url: "https://github.com",
          api_url: "https://api.github.com",
          token_env: "CANARY_GITHUB_TOKEN",
          token_set: true,
          publish_rate_per_minute: 30,
        },
        {
          name: "work",
          type: "gitlab",
          url: "https://gitlab.example.com",
          api_url: "https://gitlab.example.com/api/v4",
          token_env: "CANARY_GITLAB_TOKEN",
          token_set: false,
          publish_rate_per_minute: 12,
        },
      ],
    });
  });

  it("answers empty lists when nothing is configured", async () => {
    const plain = app({ modelUpstreams: {} });
    const upstreams = await plain.request(`${WirePath.serverApi}/model-upstreams`);
    const connections = await plain.request(`${WirePath.serverApi}/code-host-connections`);
    expect(await upstreams.json()).toEqual({ model_upstreams: [] });
    expect(await connections.json()).toEqual({ code_host_connections: [] });
  });
});
