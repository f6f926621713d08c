import { sql } from "drizzle-orm";
import { check, index, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { createdAt, timestampColumn } from "./columns.ts";

/**
 * Executor tokens: what a `deckhand executor --server-url` presents to the server's executor API
 * instead of holding the database. An admin creates and revokes them; only the SHA-256 of a token
 * is stored (as for API tokens), and a token reaches the executor routes only.
 */
export const executorTokens = pgTable(
  "executor_tokens",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    name: text("name").notNull(),
    tokenHash: text("token_hash").notNull().unique("executor_tokens_token_hash_unique"),
    lastUsedAt: timestampColumn("last_used_at"),
    revokedAt: timestampColumn("revoked_at"),
    createdAt: createdAt(),
  },
  (table) => [
    check("executor_tokens_token_hash_check", sql`${table.tokenHash} ~ '^[0-9a-f]{64}$'`),
    // The token list, oldest first.
    index("executor_tokens_created_idx").on(table.createdAt),
  ],
);
