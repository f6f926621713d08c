import {
  ModelEndpointSchema,
  ModelUpstreamKindSchema,
  ModelUsageOutcomeSchema,
} from "@deckhand/wire";
import { sql } from "drizzle-orm";
import { bigint, bigserial, check, index, integer, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { createdAt, oneOf, timestampColumn } from "./columns.ts";

/**
 * Scoped model-provider tokens. Only the SHA-256 of a token is stored: the token itself is the
 * secret that travels furthest, and no database row may contain it.
 */
export const modelTokens = pgTable(
  "model_tokens",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    tokenHash: text("token_hash").notNull().unique("model_tokens_token_hash_unique"),
    jobId: text("job_id").notNull(),
    expiresAt: timestampColumn("expires_at").notNull(),
    revokedAt: timestampColumn("revoked_at"),
    createdAt: createdAt(),
  },
  (table) => [
    check("model_tokens_token_hash_check", sql`${table.tokenHash} ~ '^[0-9a-f]{64}$'`),
    index("model_tokens_job_idx").on(table.jobId),
  ],
);

/** One proxied model request's usage: token counts when the provider reports them, bytes always. */
export const modelUsage = pgTable(
  "model_usage",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    jobId: text("job_id").notNull(),
    tokenId: uuid("token_id").references(() => modelTokens.id, { onDelete: "set null" }),
    agentType: text("agent_type").notNull(),
    /** The upstream's base URL (never its key) and kind, and which endpoint was called. */
    upstream: text("upstream").notNull(),
    upstreamKind: text("upstream_kind")
      .$type<(typeof ModelUpstreamKindSchema.options)[number]>()
      .notNull(),
    endpoint: text("endpoint").$type<(typeof ModelEndpointSchema.options)[number]>().notNull(),
    model: text("model"),
    status: integer("status").notNull(),
    /** `completed`, `upstream_error`, `aborted`, ...: how the request ended. */
    outcome: text("outcome")
      .$type<(typeof ModelUsageOutcomeSchema.options)[number]>()
      .notNull()
      .default("completed"),
    inputTokens: integer("input_tokens"),
    outputTokens: integer("output_tokens"),
    totalTokens: integer("total_tokens"),
    requestBytes: bigint("request_bytes", { mode: "number" }).notNull().default(0),
    responseBytes: bigint("response_bytes", { mode: "number" }).notNull().default(0),
    createdAt: createdAt(),
  },
  (table) => [
    index("model_usage_job_idx").on(table.jobId, table.createdAt),
    // The daily budget sums every job's usage since the day began.
    index("model_usage_created_idx").on(table.createdAt),
    // Deleting a token sets this to null; without an index that scans every usage row.
    index("model_usage_token_idx").on(table.tokenId),
    check("model_usage_outcome_check", oneOf(table.outcome, ModelUsageOutcomeSchema.options)),
    check("model_usage_endpoint_check", oneOf(table.endpoint, ModelEndpointSchema.options)),
    check(
      "model_usage_upstream_kind_check",
      oneOf(table.upstreamKind, ModelUpstreamKindSchema.options),
    ),
    check(
      "model_usage_counts_check",
      sql`${table.requestBytes} >= 0 and ${table.responseBytes} >= 0`,
    ),
  ],
);

/**
 * API tokens for the server's HTTP API. Like model tokens, only the SHA-256 is stored; the token
 * is shown once when it is created. The generated admin token of a non-loopback server is one.
 */
export const apiTokens = pgTable(
  "api_tokens",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    name: text("name").notNull(),
    tokenHash: text("token_hash").notNull().unique("api_tokens_token_hash_unique"),
    lastUsedAt: timestampColumn("last_used_at"),
    revokedAt: timestampColumn("revoked_at"),
    createdAt: createdAt(),
  },
  (table) => [
    check("api_tokens_token_hash_check", sql`${table.tokenHash} ~ '^[0-9a-f]{64}$'`),
    index("api_tokens_name_idx").on(table.name),
    // The token list, oldest first.
    index("api_tokens_created_idx").on(table.createdAt),
  ],
);
