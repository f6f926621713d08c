// Model budgets of batch runs end to end, on PGlite and on PostgreSQL: codingAgent steps run the
// testkit's fake Codex through the real model proxy (tokens in `model_tokens`, usage in
// `model_usage`) in front of the fake model; a workspace whose budget is reached fails its step
// with the proxy's reason, and a run whose budget is spent starts no more workspaces.
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { createDb, type DbHandle, TaskRegistry, TaskWorker } from "@deckhand/db";
import {
  batchJobModelProviderAccess,
  createModelProxy,
  DbModelTokenStore,
  DbUsageRecorder,
} from "@deckhand/model-proxy";
import {
  createPostgresTestDatabase,
  type FakeCodexRelease,
  type FakeModel,
  fakeCodexDirective,
  startFakeCodexRelease,
  startFakeModel,
  testPostgresUrl,
  turn,
} from "@deckhand/testkit";
import type { BatchRun } from "@deckhand/wire";
import { type ServerType, serve } from "@hono/node-server";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, temporaryDirectory, testEnvironment } from "../../test/support.ts";
import { BatchRunService } from "../batch-run-service.ts";
import { createModelSpend, workspaceBudgetOf } from "./batch-spend.ts";

const VERSION = "0.0.1-fake";
/** What each answer of the fake model costs: 18 tokens. */
const ANSWER = { input: 11, output: 7 };
const backends = testPostgresUrl ? ["pglite", "postgres"] : ["pglite"];
if (!testPostgresUrl) it.skip("batch budgets on PostgreSQL (set DATABASE_URL)", () => {});

describe("a workspace's budget", () => {
  const step = (budget?: { tokens?: number; cost?: number }) => ({
    codingAgent: { type: "codex", prompt: "p", ...(budget ? { budget } : {}) },
  });

  it("is the run's option, else the sum of the spec's steps, else the server's default", () => {
    const spec = { steps: [step({ tokens: 5 }), step({ tokens: 7, cost: 1 }), step()] };
    expect(workspaceBudgetOf(spec, {}, undefined)).toEqual({ tokens: 12, cost: 1 });
    expect(
      workspaceBudgetOf(spec, { coding_agent: { workspace_budget: { tokens: 3 } } }, undefined),
    ).toEqual({ tokens: 3 });
    expect(workspaceBudgetOf({ steps: [step()] }, {}, { workspace_budget: { cost: 2 } })).toEqual({
      cost: 2,
    });
    expect(workspaceBudgetOf({ steps: [step()] }, {}, undefined)).toBeNull();
  });
});

describe.each(backends)("batch budgets on %s", { timeout: 240_000 }, (kind) => {
  let scratch: ReturnType<typeof temporaryDirectory>;
  let root: string;
  let database: DbHandle;
  let drop: () => Promise<void>;
  let model: FakeModel;
  let release: FakeCodexRelease;
  let proxyServer: ServerType;
  let worker: TaskWorker | null;
  let service: BatchRunService;

  beforeEach(async () => {
    scratch = temporaryDirectory();
    root = join(scratch.path, "code");
    for (const name of ["api", "web", "docs"]) {
      repositoryAt(join(root, `github.com/acme/${name}`), { "README.md": `# ${name}\n` });
    }
    if (kind === "postgres") {
      const created = await createPostgresTestDatabase();
      database = await createDb({ databaseUrl: created.url, poolSize: 4 });
      drop = () => created.drop();
    } else {
      database = await createDb({ dataDir: "memory://" });
      drop = async () => {};
    }
    model = await startFakeModel();
    release = await startFakeCodexRelease({ version: VERSION });
    worker = null;
  });

  afterEach(async () => {
    await worker?.stop();
    await new Promise<void>((resolveClose) => {
      if (proxyServer === undefined) return resolveClose();
      proxyServer.close(() => resolveClose());
      if ("closeAllConnections" in proxyServer) proxyServer.closeAllConnections();
    });
    await release.close();
    await model.close();
    await database.close();
    await drop();
    scratch.remove();
  });

  /** The server's composition: budgets over the database, the proxy asking them, the service. */
  async function start(limits: Parameters<typeof createModelSpend>[0]["limits"] = {}) {
    const spend = createModelSpend({ database, limits, prices: undefined });
    const modelTokens = new DbModelTokenStore(database.db);
    const proxy = createModelProxy({
      upstreams: { codex: { kind: "openai", baseUrl: `${model.url}/v1`, apiKey: "sk-upstream-1" } },
      tokens: modelTokens,
      usage: new DbUsageRecorder(database.db),
      budgets: spend.budgets,
      rateLimit: false,
    });
    proxyServer = await new Promise<ServerType>((resolveServer) => {
      const instance = serve({ fetch: proxy.fetch, hostname: "127.0.0.1", port: 0 }, () =>
        resolveServer(instance),
      );
    });
    const origin = `http://127.0.0.1:${(proxyServer.address() as AddressInfo).port}`;
    service = new BatchRunService({
      database,
      codeHosts: () => [{ type: "directory", path: root }],
      environment: testEnvironment(scratch.path, {
        containerRuntime: null,
        outerEnvironment: { PATH: process.env.PATH, HOME: join(scratch.path, "home") },
        modelProvider: batchJobModelProviderAccess({ modelTokens, serverUrl: () => origin }),
        codingAgent: {
          versions: { codex: VERSION },
          models: { codex: "gpt-5.5" },
          install_source: { kind: "release", base_url: release.baseUrl },
        },
        directories: { agentInstallDirectory: join(scratch.path, "agents") },
      }),
      budgets: spend.spend,
    });
    const registry = new TaskRegistry();
    service.register(registry);
    worker = new TaskWorker({ database, registry, concurrency: 1, pollIntervalMs: 50 });
    void worker.start();
    return spend;
  }

  async function finished(runId: string): Promise<BatchRun> {
    const deadline = Date.now() + 180_000;
    for (;;) {
      const run = await service.getRun(runId);
      if (run.status !== "queued" && run.status !== "running") return run;
      if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status}`);
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
  }

  const agentStep = (budget: string) => `
  - codingAgent:
      type: codex
      prompt: greet
${budget}    image: node:22`;

  it("fails a codingAgent step with the budget's reason once its workspace's budget is reached", async () => {
    await start();
    model.script([
      turn.text(fakeCodexDirective.write("ONE.md", "one\n"), { usage: ANSWER }),
      turn.text(fakeCodexDirective.write("TWO.md", "two\n"), { usage: ANSWER }),
    ]);
    const budget = "      budget:\n        tokens: 5\n";
    const run = await finished(
      (
        await service.createRun({
          source: `
version: 3
name: budgeted
on:
  - repository: github.com/acme/api
steps:${agentStep(budget)}${agentStep(budget)}
changesetTemplate:
  title: Agent
  branch: agent
  commit:
    message: agent
`,
          options: { runtime: "local" },
        })
      ).id,
    );
    expect(run.status).toBe("failed");
    const [workspace] = await service.listWorkspaces(run.id);
    expect(workspace!.state).toBe("failed");
    // The two steps' budgets add up to 10; the first step spent 18, so the second is refused.
    expect(workspace!.error).toMatch(/^step 1 failed with exit code 1: /);
    expect(workspace!.error).toContain(
      "budget of 10 tokens for workspace github.com/acme/api reached (18 tokens spent)",
    );
    expect(model.requests).toHaveLength(1);
    const report = await service.getStep(workspace!.id, 1);
    expect(report.stderr).toContain("the model provider answered 402");
  });

  it("stops dispatching workspaces once the run's budget is spent", async () => {
    const spend = await start();
    model.script([turn.text(fakeCodexDirective.write("ONE.md", "one\n"), { usage: ANSWER })]);
    const run = await finished(
      (
        await service.createRun({
          source: `
version: 3
name: run-budget
on:
  - repositoriesMatchingQuery: repo:acme
steps:${agentStep("")}
changesetTemplate:
  title: Agent
  branch: agent
  commit:
    message: agent
`,
          options: { runtime: "local", parallelism: 1, budget: { tokens: 10 } },
        })
      ).id,
    );
    expect(run.status).toBe("failed");
    const workspaces = await service.listWorkspaces(run.id);
    expect(workspaces.map((workspace) => workspace.state).sort()).toEqual([
      "cancelled",
      "cancelled",
      "completed",
    ]);
    for (const workspace of workspaces.filter((each) => each.state === "cancelled")) {
      expect(workspace.error).toMatch(
        /^not started: budget of 10 tokens for run [0-9a-f]{8} reached \(18 tokens spent\); its workspaces not started yet are not started/,
      );
      expect(workspace.steps.some((step) => step.outcome !== "skipped")).toBe(false);
    }
    expect(model.requests).toHaveLength(1);
    const report = await spend.spend.runSpend(run.id);
    expect(report.run).toMatchObject({ scope: "run", limit: { tokens: 10 }, reached: true });
    expect(report.run.spent.tokens).toBe(18);
    expect(report.workspaces.map((each) => each.budget.spent.tokens).sort()).toEqual([0, 0, 18]);
  });
});
