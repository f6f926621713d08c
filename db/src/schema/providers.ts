import { sql } from "drizzle-orm";
import { check, jsonb, pgTable, text } from "drizzle-orm/pg-core";
import { oneOf, timestampColumn, updatedAt } from "./columns.ts";

export const providerProbeStatuses = ["ready", "not_installed", "error"] as const;
export type ProviderProbeStatus = (typeof providerProbeStatuses)[number];

/**
 * The last expensive probe of each provider (spawn, ACP initialize, open a session). Kept so a
 * restarted server does not re-probe before the TTL. `fingerprint` identifies the command and
 * environment probed: a changed provider definition makes the cached result stale.
 */
export const providerProbes = pgTable(
  "provider_probes",
  {
    providerId: text("provider_id").primaryKey(),
    fingerprint: text("fingerprint").notNull(),
    status: text("status").$type<ProviderProbeStatus>().notNull(),
    /** Version, models, modes and commands as the probe found them. */
    result: jsonb("result").notNull().default(sql`'{}'::jsonb`),
    error: text("error"),
    probedAt: timestampColumn("probed_at").notNull(),
    updatedAt: updatedAt(),
  },
  (table) => [check("provider_probes_status_check", oneOf(table.status, providerProbeStatuses))],
);
