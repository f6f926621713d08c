// What scopes have spent, read from `model_usage`: the rows the proxy records when each answer
// ends. Tokens are the provider's total (input and output when it reports no total); cost is
// priced per model with the configured table.
import { type Database, modelUsage } from "@deckhand/db";
import type { Spend } from "@deckhand/wire";
import { and, gte, inArray, type SQL, sql } from "drizzle-orm";
import { addModelTotals, emptySpend, type PriceTable } from "./spend.ts";

/** Whose usage a spend sums: some jobs, or every job since an instant (the day). */
export type SpendSelector = { jobIds: readonly string[] } | { since: Date };

export interface SpendLedger {
  readonly prices: PriceTable;
  spent(selector: SpendSelector): Promise<Spend>;
  /** Each job's spend, for lists of many (a run's workspaces); jobs without usage are absent. */
  spentByJob(jobIds: readonly string[]): Promise<Map<string, Spend>>;
}

const tokens = sql<number>`coalesce(sum(coalesce(${modelUsage.totalTokens}, coalesce(${modelUsage.inputTokens}, 0) + coalesce(${modelUsage.outputTokens}, 0))), 0)::bigint`;
const inputTokens = sql<number>`coalesce(sum(${modelUsage.inputTokens}), 0)::bigint`;
const outputTokens = sql<number>`coalesce(sum(${modelUsage.outputTokens}), 0)::bigint`;
const requests = sql<number>`count(*)::int`;

/** A batch of job ids small enough for one `in` list. */
const CHUNK = 5_000;

export class DbSpendLedger implements SpendLedger {
  readonly #db: Database;
  readonly #prices: () => PriceTable;

  constructor(db: Database, prices: () => PriceTable) {
    this.#db = db;
    this.#prices = prices;
  }

  get prices(): PriceTable {
    return this.#prices();
  }

  async spent(selector: SpendSelector): Promise<Spend> {
    const prices = this.prices;
    let spend = emptySpend(prices);
    const conditions: SQL[] = [];
    if ("since" in selector) conditions.push(gte(modelUsage.createdAt, selector.since));
    const chunks =
      "jobIds" in selector ? chunked(selector.jobIds) : [null as readonly string[] | null];
    for (const chunk of chunks) {
      if (chunk !== null && chunk.length === 0) continue;
      const where = and(
        ...conditions,
        ...(chunk === null ? [] : [inArray(modelUsage.jobId, [...chunk])]),
      );
      const rows = await this.#db
        .select({ model: modelUsage.model, tokens, inputTokens, outputTokens, requests })
        .from(modelUsage)
        .where(where)
        .groupBy(modelUsage.model);
      for (const row of rows) spend = addModelTotals(spend, totalsOf(row), prices);
    }
    return spend;
  }

  async spentByJob(jobIds: readonly string[]): Promise<Map<string, Spend>> {
    const prices = this.prices;
    const byJob = new Map<string, Spend>();
    for (const chunk of chunked(jobIds)) {
      if (chunk.length === 0) continue;
      const rows = await this.#db
        .select({
          jobId: modelUsage.jobId,
          model: modelUsage.model,
          tokens,
          inputTokens,
          outputTokens,
          requests,
        })
        .from(modelUsage)
        .where(inArray(modelUsage.jobId, [...chunk]))
        .groupBy(modelUsage.jobId, modelUsage.model);
      for (const row of rows) {
        const spend = byJob.get(row.jobId) ?? emptySpend(prices);
        byJob.set(row.jobId, addModelTotals(spend, totalsOf(row), prices));
      }
    }
    return byJob;
  }
}

function totalsOf(row: {
  model: string | null;
  tokens: number;
  inputTokens: number;
  outputTokens: number;
  requests: number;
}) {
  return {
    model: row.model,
    totalTokens: Number(row.tokens),
    inputTokens: Number(row.inputTokens),
    outputTokens: Number(row.outputTokens),
    requests: Number(row.requests),
  };
}

function chunked(ids: readonly string[]): (readonly string[])[] {
  const chunks: (readonly string[])[] = [];
  for (let start = 0; start < ids.length; start += CHUNK)
    chunks.push(ids.slice(start, start + CHUNK));
  return chunks;
}
