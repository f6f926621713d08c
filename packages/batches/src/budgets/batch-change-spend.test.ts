// A batch change's spend across its runs, per changeset and per merged pull request, priced.
import {
  batchRuns,
  batchSpecs,
  createDb,
  type DbHandle,
  modelUsage,
  workspaces,
} from "@deckhand/db";
import { DbSpendLedger, PriceTable } from "@deckhand/model-proxy";
import { UsageJobId } from "@deckhand/wire";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { batchChangeSpend } from "./batch-change-spend.ts";

let database: DbHandle;
beforeEach(async () => {
  database = await createDb({ dataDir: "memory://" });
});
afterEach(async () => {
  await database.close();
});

async function runOf(name: string, repositories: string[]): Promise<string[]> {
  const [spec] = await database.db
    .insert(batchSpecs)
    .values({ name, source: `name: ${name}\n`, spec: { name, version: 1 } })
    .returning({ id: batchSpecs.id });
  const [run] = await database.db
    .insert(batchRuns)
    .values({ batchSpecId: spec!.id })
    .returning({ id: batchRuns.id });
  const rows = await database.db
    .insert(workspaces)
    .values(repositories.map((repository) => ({ batchRunId: run!.id, repository })))
    .returning({ id: workspaces.id });
  return rows.map((row) => row.id);
}

async function spent(workspaceId: string, model: string, input: number, output: number) {
  await database.db.insert(modelUsage).values({
    jobId: UsageJobId.batchWorkspace(workspaceId),
    agentType: "codex",
    upstream: "https://upstream.test",
    upstreamKind: "openai",
    endpoint: "responses",
    model,
    status: 200,
    inputTokens: input,
    outputTokens: output,
    totalTokens: input + output,
  });
}

describe("a batch change's spend", () => {
  it("sums every run's workspaces, gives each changeset its workspace's, and divides by merges", async () => {
    const [api, web] = await runOf("greet", ["github.com/acme/api", "github.com/acme/web"]);
    const [again] = await runOf("greet", ["github.com/acme/api"]);
    const [other] = await runOf("other", ["github.com/acme/api"]);
    await spent(api!, "gpt-5", 1_000_000, 100_000);
    await spent(web!, "gpt-5", 500_000, 0);
    await spent(again!, "gpt-5-mini", 200_000, 0);
    await spent(other!, "gpt-5", 9_000_000, 0);
    const prices = new PriceTable({ models: { "gpt-5": { input: 1, output: 10 } } });
    const spend = await batchChangeSpend(
      database.db,
      new DbSpendLedger(database.db, () => prices),
      {
        name: "greet",
        changesets: [
          { id: "c-api", workspaceId: again! },
          { id: "c-web", workspaceId: web! },
        ],
        merged: 2,
      },
    );
    expect(spend.total).toMatchObject({
      tokens: 1_800_000,
      cost: 2.5,
      unpriced_tokens: 200_000,
      requests: 3,
    });
    expect(spend.per_merged).toEqual({ tokens: 900_000, cost: 1.25 });
    expect(spend.changesets.map((entry) => [entry.changeset_id, entry.spent.tokens])).toEqual([
      ["c-api", 200_000],
      ["c-web", 500_000],
    ]);
    expect(spend.currency).toBe("USD");

    const none = await batchChangeSpend(
      database.db,
      new DbSpendLedger(database.db, () => PriceTable.none),
      { name: "greet", changesets: [], merged: 0 },
    );
    expect(none.per_merged).toBeNull();
    expect(none.total.cost).toBeNull();
    expect(none.currency).toBeNull();
  });
});
