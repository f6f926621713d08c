import { type Database, modelUsage, providerProbes } from "@deckhand/db";
import type { ModelUsageEntry, UsageRecorder } from "@deckhand/model-proxy";
import { type ProbeRecord, type ProbeStore, parseStoredResult } from "@deckhand/providers";
import { redactSecrets } from "@deckhand/secrets";
import { and, asc, eq, inArray, sql } from "drizzle-orm";

/** One stored usage row, as the API will read it back. */
export type ModelUsageRow = typeof modelUsage.$inferSelect;

/** Proxied-request usage in the `model_usage` table, one row per forwarded request. */
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

/** Provider probe results in `provider_probes`, one row per provider, so restarts keep them. */
export class DbProbeStore implements ProbeStore {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async load(providerId: string): Promise<ProbeRecord | undefined> {
    const [row] = await this.#db
      .select()
      .from(providerProbes)
      .where(eq(providerProbes.providerId, providerId));
    if (!row) return undefined;
    // A result this version cannot read is no cache at all: the provider is probed again.
    const result = parseStoredResult(row.result);
    if (result === null) return undefined;
    return {
      providerId: row.providerId,
      fingerprint: row.fingerprint,
      status: row.status,
      result,
      error: row.error,
      probedAt: row.probedAt,
    };
  }

  async save(record: ProbeRecord): Promise<void> {
    // A probed agent holds a model token while it runs; what it wrote is kept without it.
    const values = {
      fingerprint: record.fingerprint,
      status: record.status,
      result: { ...record.result, stderrTail: redactSecrets(record.result.stderrTail) },
      error: record.error === null ? null : redactSecrets(record.error),
      probedAt: record.probedAt,
      updatedAt: new Date(),
    };
    await this.#db
      .insert(providerProbes)
      .values({ providerId: record.providerId, ...values })
      .onConflictDoUpdate({ target: providerProbes.providerId, set: values });
  }
}
