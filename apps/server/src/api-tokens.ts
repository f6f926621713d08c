import { createHash, randomBytes } from "node:crypto";
import { apiTokens, type Database } from "@deckhand/db";
import type { ApiToken } from "@deckhand/wire";
import { and, asc, eq, isNull, sql } from "drizzle-orm";

/** Prefix of server API tokens, so a leaked one is recognisable (and scannable) as Deckhand's. */
export const API_TOKEN_PREFIX = "dhapi_";
/** The name of the admin token a non-loopback server generates when none is configured. */
export const GENERATED_ADMIN_TOKEN_NAME = "admin (generated at first start)";

/** The SHA-256 a bearer token is stored and looked up by. */
export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** API tokens for the server's HTTP API: 256-bit random, only their SHA-256 is stored. */
export class ApiTokenStore {
  readonly #db: Database;
  /** `last_used_at` is refreshed at most this often per token, not on every request. */
  readonly #touchIntervalMs: number;
  readonly #touchedAt = new Map<string, number>();

  constructor(db: Database, options: { touchIntervalMs?: number } = {}) {
    this.#db = db;
    this.#touchIntervalMs = options.touchIntervalMs ?? 60_000;
  }

  async create(name: string): Promise<{ apiToken: ApiToken; token: string }> {
    const token = `${API_TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
    const [row] = await this.#db
      .insert(apiTokens)
      .values({ name, tokenHash: hashToken(token) })
      .returning();
    return { apiToken: apiTokenResource(row!), token };
  }

  async list(): Promise<ApiToken[]> {
    const rows = await this.#db.select().from(apiTokens).orderBy(asc(apiTokens.createdAt));
    return rows.map(apiTokenResource);
  }

  /** Revokes a token by id; false when no such token exists. */
  async revoke(id: string): Promise<boolean> {
    if (!/^[0-9a-f-]{36}$/i.test(id)) return false;
    const rows = await this.#db
      .update(apiTokens)
      .set({ revokedAt: sql`coalesce(${apiTokens.revokedAt}, now())` })
      .where(eq(apiTokens.id, id))
      .returning({ id: apiTokens.id });
    return rows.length > 0;
  }

  /**
   * Whether a presented bearer token is a live API token. The lookup is by hash, so neither the
   * comparison's timing nor the query reveals anything about the token itself.
   */
  async verify(presented: string): Promise<boolean> {
    if (!presented.startsWith(API_TOKEN_PREFIX)) return false;
    const [row] = await this.#db
      .select({ id: apiTokens.id })
      .from(apiTokens)
      .where(and(eq(apiTokens.tokenHash, hashToken(presented)), isNull(apiTokens.revokedAt)));
    if (!row) return false;
    const now = Date.now();
    if (now - (this.#touchedAt.get(row.id) ?? 0) >= this.#touchIntervalMs) {
      this.#touchedAt.set(row.id, now);
      await this.#db
        .update(apiTokens)
        .set({ lastUsedAt: new Date() })
        .where(eq(apiTokens.id, row.id));
    }
    return true;
  }

  /**
   * For a server that needs auth but was given no admin token: creates one the first time and
   * returns it (to be printed once); returns null when a generated one exists already. With
   * `replace`, revokes the old generated token and makes a new one (the operator lost it).
   */
  async ensureGeneratedAdminToken(options: { replace?: boolean } = {}): Promise<string | null> {
    const live = await this.#db
      .select({ id: apiTokens.id })
      .from(apiTokens)
      .where(and(eq(apiTokens.name, GENERATED_ADMIN_TOKEN_NAME), isNull(apiTokens.revokedAt)));
    if (live.length > 0 && !options.replace) return null;
    for (const row of live) await this.revoke(row.id);
    return (await this.create(GENERATED_ADMIN_TOKEN_NAME)).token;
  }
}

function apiTokenResource(row: typeof apiTokens.$inferSelect): ApiToken {
  return {
    id: row.id,
    name: row.name,
    created_at: row.createdAt.toISOString(),
    last_used_at: row.lastUsedAt === null ? null : row.lastUsedAt.toISOString(),
    revoked_at: row.revokedAt === null ? null : row.revokedAt.toISOString(),
  };
}
