// Spend budgets at the proxy, on PGlite and on PostgreSQL: usage recorded in `model_usage` as
// the server records it, the proxy refusing a job's requests once one of its budgets is reached,
// in the error shape of the provider the agent speaks, and the spend reports.
import { createDb, type DbHandle, modelUsage } from "@deckhand/db";
import { createPostgresTestDatabase, testPostgresUrl } from "@deckhand/testkit";
import type { BudgetScopeKind } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import { startHarness } from "../../test/proxy-harness.ts";
import { DbUsageRecorder } from "../db-usage-recorder.ts";
import type { ModelUsageEntry, UsageRecorder } from "../usage.ts";
import { type BudgetScope, ModelBudgets, type ModelBudgetsFile } from "./model-budgets.ts";
import { PriceTable } from "./spend.ts";
import { DbSpendLedger } from "./spend-ledger.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const kinds = testPostgresUrl ? ["pglite", "postgres"] : ["pglite"];
if (!testPostgresUrl) it.skip("budgets on PostgreSQL (set DATABASE_URL)", () => {});

async function open(kind: string): Promise<DbHandle> {
  if (kind === "pglite") {
    const handle = await createDb({ dataDir: "memory://" });
    cleanups.push(() => handle.close());
    return handle;
  }
  const database = await createPostgresTestDatabase();
  cleanups.push(() => database.drop());
  const handle = await createDb({ databaseUrl: database.url, poolSize: 2 });
  cleanups.push(() => handle.close());
  return handle;
}

/** The server's recorder, counting what it recorded (usage is recorded when an answer ends). */
function databaseRecorder(database: DbHandle): UsageRecorder & { recorded: number } {
  const stored = new DbUsageRecorder(database.db);
  const recorder = {
    recorded: 0,
    async record(entry: ModelUsageEntry) {
      await stored.record(entry);
      recorder.recorded += 1;
    },
  };
  return recorder;
}

/** A batch-run-like source: job-a and job-b belong to one run. */
function runSource(limits: { job?: number; run?: number }) {
  return {
    async scopesOf(jobId: string): Promise<BudgetScope[] | null> {
      if (jobId !== "job-a" && jobId !== "job-b") return null;
      return [
        {
          kind: "job",
          id: jobId,
          label: `workspace ${jobId}`,
          limit: limits.job === undefined ? null : { tokens: limits.job },
          selector: { jobIds: [jobId] },
          advice: "raise the workspace budget",
        },
        {
          kind: "run",
          id: "run-1",
          label: "run run-1",
          limit: limits.run === undefined ? null : { tokens: limits.run },
          selector: { jobIds: ["job-a", "job-b"] },
          advice: "raise the run's budget",
        },
      ];
    },
  };
}

/**
 * Like a session's agents: scopes without limits of their own, which it says up front; `reads`
 * counts the scope reads a check makes.
 */
function limitlessSource() {
  const source = {
    reads: 0,
    async scopesOf(jobId: string): Promise<BudgetScope[] | null> {
      if (!jobId.startsWith("agent-")) return null;
      source.reads += 1;
      return [
        {
          kind: "job",
          id: jobId,
          label: `agent ${jobId}`,
          limit: null,
          selector: { jobIds: [jobId] },
          advice: "raise modelBudgets.job",
        },
        {
          kind: "session",
          id: "session-1",
          label: "session session-1",
          limit: null,
          selector: { jobIds: ["agent-a", "agent-b"] },
          advice: "raise modelBudgets.session",
        },
      ];
    },
    limitlessKinds(jobId: string): readonly BudgetScopeKind[] | null {
      return jobId.startsWith("agent-") ? ["job", "session"] : null;
    },
  };
  return source;
}

async function waitFor(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met");
    await new Promise((resolveWait) => setTimeout(resolveWait, 10));
  }
}

describe.each(kinds)("model budgets on %s", (kind) => {
  async function setUp(options: {
    limits?: ModelBudgetsFile;
    prices?: PriceTable;
    source?: ReturnType<typeof runSource>;
    now?: () => number;
  }) {
    const database = await open(kind);
    const usage = databaseRecorder(database);
    const budgets = new ModelBudgets({
      ledger: new DbSpendLedger(database.db, () => options.prices ?? PriceTable.none),
      limits: () => options.limits ?? {},
      sources: options.source ? [options.source] : [],
      ...(options.now ? { now: options.now } : {}),
    });
    const proxy = await startHarness({ usage, budgets, rateLimit: false });
    cleanups.push(() => proxy.close());
    const post = async (jobId: string, agentType = "codex") => {
      const token = await proxy.mint({ jobId });
      const path =
        agentType === "codex"
          ? "/responses"
          : agentType === "claude-code"
            ? "/v1/messages"
            : "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse";
      const before = usage.recorded;
      const response = await fetch(`${proxy.baseUrl(agentType)}${path}`, {
        method: "POST",
        headers: proxy.agentHeaders(token, { jobId, anthropic: agentType === "claude-code" }),
        body: JSON.stringify({
          model: "gpt-5",
          input: "hi",
          stream: true,
          messages: [],
          max_tokens: 10,
        }),
      });
      const text = await response.text();
      // Usage is recorded once the answer has ended; the next request must see it.
      if (response.status < 400) await waitFor(() => usage.recorded > before);
      return { status: response.status, text };
    };
    return { database, budgets, proxy, post, usage };
  }

  it("refuses a job's requests once its budget is reached, with the reason in the body", async () => {
    const { post, proxy } = await setUp({ source: runSource({ job: 30 }) });
    // The fake model reports 11 input and 7 output tokens per answer.
    expect((await post("job-a")).status).toBe(200);
    expect((await post("job-a")).status).toBe(200);
    const refused = await post("job-a");
    expect(refused.status).toBe(402);
    expect(JSON.parse(refused.text)).toEqual({
      error: {
        message:
          "budget of 30 tokens for workspace job-a reached (36 tokens spent); raise the workspace budget",
        type: "budget_exceeded",
        param: null,
        code: "budget_exceeded",
      },
    });
    expect(proxy.upstream.requests).toHaveLength(2);
    // Another job of the same run has its own budget left.
    expect((await post("job-b")).status).toBe(200);
  });

  it("answers in the shape of the agent's provider, and still lists models", async () => {
    const { post, proxy } = await setUp({ limits: { job: { tokens: 1 } } });
    expect((await post("job-x", "claude-code")).status).toBe(200);
    const anthropic = await post("job-x", "claude-code");
    expect(anthropic.status).toBe(402);
    expect(JSON.parse(anthropic.text)).toEqual({
      type: "error",
      error: {
        type: "budget_exceeded",
        message:
          "budget of 1 tokens for job job-x reached (18 tokens spent); raise modelBudgets.job in config.json",
      },
    });
    const gemini = await post("job-x", "gemini");
    expect(gemini.status).toBe(402);
    expect(JSON.parse(gemini.text).error).toMatchObject({
      code: 402,
      status: "RESOURCE_EXHAUSTED",
    });
    const token = await proxy.mint({ jobId: "job-x" });
    const models = await fetch(`${proxy.baseUrl("codex")}/models`, {
      headers: proxy.agentHeaders(token, { jobId: "job-x" }),
    });
    expect(models.status).toBe(200);
    await models.body?.cancel();
  });

  it("reads no scope of a job whose scopes have no limits while config.json sets none for them", async () => {
    const source = limitlessSource();
    const { post } = await setUp({ source, limits: { run: { tokens: 1 } } });
    expect((await post("agent-a")).status).toBe(200);
    expect((await post("agent-a")).status).toBe(200);
    expect(source.reads).toBe(0);
  });

  it("still holds such a job to config.json's limit for one of its kinds", async () => {
    const source = limitlessSource();
    const { post } = await setUp({ source, limits: { session: { tokens: 20 } } });
    expect((await post("agent-a")).status).toBe(200);
    expect((await post("agent-b")).status).toBe(200);
    const refused = await post("agent-a");
    expect(refused.status).toBe(402);
    expect(JSON.parse(refused.text).error.message).toBe(
      "budget of 20 tokens for session session-1 reached (36 tokens spent); raise modelBudgets.session",
    );
    expect(source.reads).toBe(3);
  });

  it("holds a run's budget across its jobs, the tighter of the run's and config.json's", async () => {
    const { post } = await setUp({
      source: runSource({ run: 1_000 }),
      limits: { run: { tokens: 40 } },
    });
    expect((await post("job-a")).status).toBe(200);
    expect((await post("job-b")).status).toBe(200);
    expect((await post("job-a")).status).toBe(200);
    const refused = await post("job-b");
    expect(refused.status).toBe(402);
    expect(JSON.parse(refused.text).error.message).toBe(
      "budget of 40 tokens for run run-1 reached (54 tokens spent); raise the run's budget",
    );
  });

  it("counts every job since midnight UTC against the daily budget", async () => {
    // The day is read at the test's start, so a run across midnight still reads one day.
    const started = Date.now();
    const { post, database, budgets } = await setUp({
      limits: { day: { tokens: 20 } },
      now: () => started,
    });
    // Yesterday's usage does not count.
    await database.db.insert(modelUsage).values({
      jobId: "old",
      agentType: "codex",
      upstream: "u",
      upstreamKind: "openai",
      endpoint: "responses",
      status: 200,
      totalTokens: 1_000_000,
      createdAt: new Date(Date.now() - 36 * 3_600_000),
    });
    expect((await post("probe-1")).status).toBe(200);
    expect((await post("probe-2")).status).toBe(200);
    const refused = await post("probe-3");
    expect(refused.status).toBe(402);
    const day = new Date(started).toISOString().slice(0, 10);
    expect(JSON.parse(refused.text).error.message).toBe(
      `budget of 20 tokens for the whole server on ${day} (UTC) reached (36 tokens spent); the daily budget (modelBudgets.day in config.json) starts again at midnight UTC`,
    );
    const status = await budgets.status(budgets.dayScope());
    expect(status).toMatchObject({ scope: "day", id: day, limit: { tokens: 20 }, reached: true });
    expect(status.spent).toMatchObject({
      tokens: 36,
      input_tokens: 22,
      output_tokens: 14,
      requests: 2,
    });
  });

  it("prices usage per model and refuses at a cost budget", async () => {
    const prices = new PriceTable({
      currency: "EUR",
      models: { "gpt-5*": { input: 1_000_000, output: 0 }, "*": { input: 0, output: 0 } },
    });
    const { post, budgets } = await setUp({ prices, limits: { job: { cost: 15 } } });
    // The fake model answers as gpt-5-codex: 11 input tokens at 1 EUR each.
    expect((await post("job-c")).status).toBe(200);
    expect((await post("job-c")).status).toBe(200);
    const refused = await post("job-c");
    expect(refused.status).toBe(402);
    expect(JSON.parse(refused.text).error.message).toBe(
      "budget of 15.00 EUR for job job-c reached (22.00 EUR spent); raise modelBudgets.job in config.json",
    );
    const [scope] = await budgets.scopesOf("job-c");
    const status = await budgets.status(scope!);
    expect(status.spent).toMatchObject({ tokens: 36, cost: 22, unpriced_tokens: 0 });
  });
});

describe("the price table", () => {
  it("prices exact names over the longest pattern over the catch-all, per million tokens", () => {
    const table = new PriceTable({
      models: {
        "gpt-5": { input: 1, output: 10 },
        "gpt-*": { input: 2, output: 20 },
        "gpt-5*": { input: 3, output: 30 },
      },
    });
    expect(table.currency).toBe("USD");
    expect(table.costOf("gpt-5", 1_000_000, 1_000_000)).toBe(11);
    expect(table.costOf("gpt-5-mini", 1_000_000, 0)).toBe(3);
    expect(table.costOf("gpt-4o", 0, 1_000_000)).toBe(20);
    expect(table.costOf("claude-sonnet", 1, 1)).toBeUndefined();
    expect(PriceTable.none.configured).toBe(false);
  });
});
