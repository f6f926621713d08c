// The server's budget routes and its proxy's budget refusal, composed as start-server composes
// them: budgets over the database, the batch engine's and the sessions' scopes.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentPool } from "@deckhand/agent-backends";
import {
  BatchRunService,
  ChangesetPublisher,
  CodeHostAccess,
  createModelSpend,
  ExecutionEnvironment,
} from "@deckhand/batches";
import { createDb, type DbHandle } from "@deckhand/db";
import { DbModelTokenStore, DbUsageRecorder, mintModelToken } from "@deckhand/model-proxy";
import { SessionBudgetScopes, SessionService } from "@deckhand/sessions";
import { type FakeUpstream, startFakeUpstream } from "@deckhand/testkit";
import { ServerPath, serverPath, WireHeader, WirePath } from "@deckhand/wire";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiTokenStore } from "./api-tokens.ts";
import { serverOriginPolicy } from "./config.ts";
import { createServerApp } from "./create-server-app.ts";

let database: DbHandle;
let workDir: string;
let upstream: FakeUpstream;
beforeAll(async () => {
  database = await createDb({ dataDir: "memory://" });
  workDir = await mkdtemp(join(tmpdir(), "deckhand-spend-routes-"));
  upstream = await startFakeUpstream();
});
afterAll(async () => {
  await upstream.close();
  await database.close();
  await rm(workDir, { recursive: true, force: true });
});

function serverApp(withSpend: boolean) {
  const spend = createModelSpend({
    database,
    limits: { day: { tokens: 20 }, run: { tokens: 1_000_000 } },
    prices: { currency: "USD", models: { "gpt-5*": { input: 1, output: 10 } } },
  });
  const sessionScopes = new SessionBudgetScopes(database);
  spend.budgets.addSource(sessionScopes);
  const batches = new BatchRunService({
    database,
    codeHosts: () => [],
    environment: new ExecutionEnvironment({
      directories: {
        cacheDirectory: join(workDir, "cache"),
        workDirectory: join(workDir, "batches"),
        hookDirectory: join(workDir, "hooks"),
      },
    }),
  });
  const app = createServerApp({
    database,
    originPolicy: serverOriginPolicy({
      host: "127.0.0.1",
      publicUrl: null,
      allowedHosts: [],
      allowedOrigins: [],
    }),
    requireAuth: false,
    adminToken: null,
    sessions: new SessionService({
      database,
      projectsDir: join(workDir, "projects"),
      worktreesDir: join(workDir, "worktrees"),
    }),
    batches,
    publishing: new ChangesetPublisher({
      database,
      access: new CodeHostAccess({ connections: () => [] }),
    }),
    apiTokens: new ApiTokenStore(database.db),
    agentTurns: {
      cancel: async () => {},
      answerPermission: async () => {},
      health: async () => [],
      pool: new AgentPool({ create: () => Promise.reject(new Error("no agents here")) }),
    },
    agent: null,
    modelUpstreams: {
      codex: { kind: "openai", baseUrl: `${upstream.url}/v1`, apiKey: "sk-upstream-0123" },
    },
    modelTokens: new DbModelTokenStore(database.db),
    modelUsage: new DbUsageRecorder(database.db),
    ...(withSpend
      ? { spend: { budgets: spend.budgets, batches: spend.spend, sessions: sessionScopes } }
      : {}),
    logger: pino({ level: "silent" }),
  });
  return { app, batches };
}

async function json(response: Response): Promise<Record<string, unknown>> {
  return (await response.json()) as Record<string, unknown>;
}

describe("budget routes", () => {
  it("reports the server's budgets, a run's spend and refuses unknown scopes with 404", async () => {
    const { app, batches } = serverApp(true);
    const budgets = await json(await app.request(ServerPath.budgets));
    expect(budgets).toMatchObject({
      limits: { job: null, run: { tokens: 1_000_000 }, session: null, day: { tokens: 20 } },
      currency: "USD",
      priced_models: ["gpt-5*"],
      day: { scope: "day", reached: false },
    });
    const run = await batches.createRun({ source: "name: nothing\n" });
    const spend = await json(
      await app.request(serverPath(ServerPath.batchRunSpend, { batch_run_id: run.id })),
    );
    expect(spend).toMatchObject({
      batch_run_id: run.id,
      run: {
        scope: "run",
        limit: { tokens: 1_000_000 },
        reached: false,
        spent: { tokens: 0, cost: 0 },
      },
      workspaces: [],
      currency: "USD",
    });
    const missingRun = await app.request(
      serverPath(ServerPath.batchRunSpend, {
        batch_run_id: "8e1a7c52-54e4-4a8e-9a3c-1a2b3c4d5e6f",
      }),
    );
    expect(missingRun.status).toBe(404);
    const missingSession = await app.request(
      serverPath(ServerPath.sessionSpend, { session_id: "8e1a7c52-54e4-4a8e-9a3c-1a2b3c4d5e6f" }),
    );
    expect(missingSession.status).toBe(404);
    const missingChange = await app.request(
      serverPath(ServerPath.batchChangeRollout, { name: "no-such-change" }),
    );
    expect(missingChange.status).toBe(404);
  });

  it("says the routes need budgets set up when a server has none", async () => {
    const { app } = serverApp(false);
    const response = await app.request(ServerPath.budgets);
    expect(response.status).toBe(503);
    expect(await json(response)).toEqual({
      error: { code: "internal", message: "model budgets are not set up in this server" },
    });
  });

  it("has its proxy refuse a request once the server's daily budget is reached", async () => {
    const { app } = serverApp(true);
    const tokens = new DbModelTokenStore(database.db);
    const send = async () => {
      const minted = await mintModelToken(tokens, {
        jobId: "provider-probe:codex:1",
        ttlMs: 60_000,
      });
      return app.request(`${WirePath.modelProvider}/codex/v1/responses`, {
        method: "POST",
        headers: {
          [WireHeader.authorization]: `Bearer ${minted.token}`,
          [WireHeader.jobId]: "provider-probe:codex:1",
          "content-type": "application/json",
        },
        body: JSON.stringify({ model: "gpt-5-codex", stream: true, input: "hi" }),
      });
    };
    const usage = new DbUsageRecorder(database.db);
    for (let answered = 0; answered < 2; answered += 1) {
      const response = await send();
      expect(response.status).toBe(200);
      await response.text();
      // Usage is recorded once the answer has ended.
      for (let wait = 0; wait < 100; wait += 1) {
        if ((await usage.forJob("provider-probe:codex:1")).length > answered) break;
        await new Promise((resolveWait) => setTimeout(resolveWait, 20));
      }
    }
    const refused = await send();
    expect(refused.status).toBe(402);
    expect(((await json(refused)).error as { message: string }).message).toMatch(
      /^budget of 20 tokens for the whole server on \d{4}-\d{2}-\d{2} \(UTC\) reached \(36 tokens spent\)/,
    );
  });
});
