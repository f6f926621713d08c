import { type Database, providerProbes } from "@deckhand/db";
import { type ProbeRecord, type ProbeStore, parseStoredResult } from "@deckhand/providers";
import { redactSecrets } from "@deckhand/secrets";
import { eq } from "drizzle-orm";

// The usage recorder lives with the proxy that records usage and the budgets that sum it.
export { DbUsageRecorder, type ModelUsageRow } from "@deckhand/model-proxy";

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
