// Proxied-request usage in the `model_usage` table, one row per forwarded request: what the
// usage routes read back and what spend budgets sum.
import { type Database, modelUsage } from "@deckhand/db";
import { asc, inArray } from "drizzle-orm";
import type { ModelUsageEntry, UsageRecorder } from "./usage.ts";

/** One stored usage row, as the API will read it back. */
export type ModelUsageRow = typeof modelUsage.$inferSelect;

export class DbUsageRecorder implements UsageRecorder {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async record(entry: ModelUsageEntry): Promise<void> {
    await this.#db.insert(modelUsage).values({
      jobId: entry.jobId,
      agentType: entry.agentType,
      upstream: entry.upstream,
      upstreamKind: entry.upstreamKind,
      endpoint: entry.endpoint,
      model: entry.model ?? null,
      status: entry.status,
      outcome: entry.outcome,
      inputTokens: entry.inputTokens ?? null,
      outputTokens: entry.outputTokens ?? null,
      totalTokens: entry.totalTokens ?? null,
      requestBytes: entry.requestBytes,
      responseBytes: entry.responseBytes,
    });
  }

  /** Every usage row of one job, oldest first. */
  async forJob(jobId: string): Promise<ModelUsageRow[]> {
    return this.forJobs([jobId]);
  }

  /** The rows of any of `jobIds`, oldest first. */
  async forJobs(jobIds: readonly string[]): Promise<ModelUsageRow[]> {
    if (jobIds.length === 0) return [];
    return this.#db
      .select()
      .from(modelUsage)
      .where(inArray(modelUsage.jobId, [...jobIds]))
      .orderBy(asc(modelUsage.createdAt), asc(modelUsage.id));
  }
}
