import { ProviderCommandSchema, ProviderOptionSchema } from "@deckhand/wire";
import { z } from "zod";

/** What a probe learnt; on failure, whatever it got to before failing. */
export const ProbeResultSchema = z.object({
  /** `agentInfo.name` from `initialize`. */
  agentName: z.string().nullable(),
  /** `agentInfo.version` from `initialize`. */
  version: z.string().nullable(),
  models: z.array(ProviderOptionSchema),
  currentModel: z.string().nullable(),
  modes: z.array(ProviderOptionSchema),
  currentMode: z.string().nullable(),
  commands: z.array(ProviderCommandSchema),
  /** False when the commands notification did not arrive within the bound. */
  commandsComplete: z.boolean(),
  /** The end of the agent's stderr, for the diagnostic. */
  stderrTail: z.string(),
});
export type ProbeResult = z.infer<typeof ProbeResultSchema>;

/**
 * One provider's last probe, shaped like a row of the `provider_probes` table: `result` is the
 * jsonb column, `error` null unless the status is `error`.
 */
export interface ProbeRecord {
  providerId: string;
  /** Hash of the resolved command, arguments and environment the probe ran with. */
  fingerprint: string;
  status: "ready" | "not_installed" | "error";
  result: ProbeResult;
  error: string | null;
  probedAt: Date;
}

/** Where probe results outlive the process, so a restart does not re-probe within the TTL. */
export interface ProbeStore {
  /**
   * The provider's last record; undefined when there is none or its result no longer parses
   * (check it with parseStoredResult): the service takes what this answers as valid.
   */
  load(providerId: string): Promise<ProbeRecord | undefined>;
  save(record: ProbeRecord): Promise<void>;
}

/**
 * Checks a result read back from storage. Null for a row written by another version, or edited
 * by hand: a store's `load` then answers no record, so the provider is probed again instead of
 * showing as ready with nothing.
 */
export function parseStoredResult(value: unknown): ProbeResult | null {
  const parsed = ProbeResultSchema.safeParse(value);
  return parsed.success ? parsed.data : null;
}

/** Keeps records in memory: for tests, and for a server without a database. */
export class MemoryProbeStore implements ProbeStore {
  readonly records = new Map<string, ProbeRecord>();
  loads = 0;
  saves = 0;

  /** Checks the result as a database row's is: `records` is open to whoever holds the store. */
  async load(providerId: string): Promise<ProbeRecord | undefined> {
    this.loads += 1;
    const record = this.records.get(providerId);
    if (!record) return undefined;
    const result = parseStoredResult(record.result);
    return result === null ? undefined : { ...structuredClone(record), result };
  }

  async save(record: ProbeRecord): Promise<void> {
    this.saves += 1;
    this.records.set(record.providerId, structuredClone(record));
  }
}
