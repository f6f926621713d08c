import { randomBytes } from "node:crypto";
import { type Database, executorTokens } from "@deckhand/db";
import type { ExecutorToken } from "@deckhand/wire";
import { and, asc, eq, isNull, sql } from "drizzle-orm";
import { hashToken } from "./api-tokens.ts";

/**
 * Prefix of executor tokens: a leaked one is recognisable as Deckhand's, and the server tells one
 * apart from an admin or API token before any lookup (it reaches the executor API only).
 */
export const EXECUTOR_TOKEN_PREFIX = "dhexe_";

/**
 * Executor tokens, as API tokens are kept (api-tokens.ts): 256-bit random, only their SHA-256
 * stored, revocable. Each request is checked against the table, so a revoked token is refused at
 * its very next call.
 */
export class ExecutorTokenStore {
  readonly #db: Database;
  /** `last_used_at` is refreshed at most this often per token, not on every request. */
  readonly #touchIntervalMs: number;
  readonly #touchedAt = new Map<string, number>();

  constructor(db: Database, options: { touchIntervalMs?: number } = {}) {
    this.#db = db;
    this.#touchIntervalMs = options.touchIntervalMs ?? 60_000;
  }

  async create(name: string): Promise<{ executorToken: ExecutorToken; token: string }> {
    const token = `${EXECUTOR_TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
    const [row] = await this.#db
      .insert(executorTokens)
      .values({ name, tokenHash: hashToken(token) })
      .returning();
    return { executorToken: executorTokenResource(row!), token };
  }

  async list(): Promise<ExecutorToken[]> {
    const rows = await this.#db
      .select()
      .from(executorTokens)
      .orderBy(asc(executorTokens.createdAt));
    return rows.map(executorTokenResource);
  }

  /** Revokes a token by id; false when no such token exists. */
  async revoke(id: string): Promise<boolean> {
    if (!/^[0-9a-f-]{36}$/i.test(id)) return false;
    const rows = await this.#db
      .update(executorTokens)
      .set({ revokedAt: sql`coalesce(${executorTokens.revokedAt}, now())` })
      .where(eq(executorTokens.id, id))
      .returning({ id: executorTokens.id });
    return rows.length > 0;
  }

  /** The id of the live executor token presented; null for anything else. Looked up by hash. */
  async verify(presented: string): Promise<string | null> {
    if (!presented.startsWith(EXECUTOR_TOKEN_PREFIX)) return null;
    const [row] = await this.#db
      .select({ id: executorTokens.id })
      .from(executorTokens)
      .where(
        and(eq(executorTokens.tokenHash, hashToken(presented)), isNull(executorTokens.revokedAt)),
      );
    if (!row) return null;
    const now = Date.now();
    if (now - (this.#touchedAt.get(row.id) ?? 0) >= this.#touchIntervalMs) {
      this.#touchedAt.set(row.id, now);
      await this.#db
        .update(executorTokens)
        .set({ lastUsedAt: new Date() })
        .where(eq(executorTokens.id, row.id));
    }
    return row.id;
  }
}

function executorTokenResource(row: typeof executorTokens.$inferSelect): ExecutorToken {
  return {
    id: row.id,
    name: row.name,
    created_at: row.createdAt.toISOString(),
    last_used_at: row.lastUsedAt === null ? null : row.lastUsedAt.toISOString(),
    revoked_at: row.revokedAt === null ? null : row.revokedAt.toISOString(),
  };
}
