import { createHash, randomBytes } from "node:crypto";
import type { apiTokens, Database, executorTokens } from "@deckhand/db";
import { and, asc, eq, isNull, sql } from "drizzle-orm";

/** The SHA-256 a bearer token is stored and looked up by. */
export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** The tables of bearer tokens: the same columns, one per kind of token. */
type TokenTable = typeof apiTokens | typeof executorTokens;
export type TokenRow = TokenTable["$inferSelect"];

/** A token row as the API shows it: never the token, never its hash. */
export interface TokenResource {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/**
 * Bearer tokens of one kind: 256-bit random behind a recognisable prefix, only their SHA-256
 * stored, revocable, looked up by hash on every use (so a revoked one is refused at once), with
 * `last_used_at` refreshed at most once per interval rather than on every request.
 */
export class HashedTokens {
  readonly #db: Database;
  readonly #table: TokenTable;
  readonly #prefix: string;
  readonly #touchIntervalMs: number;
  readonly #touchedAt = new Map<string, number>();

  constructor(
    db: Database,
    table: TokenTable,
    prefix: string,
    options: { touchIntervalMs?: number } = {},
  ) {
    this.#db = db;
    this.#table = table;
    this.#prefix = prefix;
    this.#touchIntervalMs = options.touchIntervalMs ?? 60_000;
  }

  async create(name: string): Promise<{ resource: TokenResource; token: string }> {
    const token = `${this.#prefix}${randomBytes(32).toString("base64url")}`;
    const [row] = await this.#db
      .insert(this.#table)
      .values({ name, tokenHash: hashToken(token) })
      .returning();
    return { resource: tokenResource(row!), token };
  }

  async list(): Promise<TokenResource[]> {
    const rows = await this.#db.select().from(this.#table).orderBy(asc(this.#table.createdAt));
    return rows.map(tokenResource);
  }

  /** Revokes a token by id; false when no such token exists. */
  async revoke(id: string): Promise<boolean> {
    if (!/^[0-9a-f-]{36}$/i.test(id)) return false;
    const table = this.#table;
    const rows = await this.#db
      .update(table)
      .set({ revokedAt: sql`coalesce(${table.revokedAt}, now())` })
      .where(eq(table.id, id))
      .returning({ id: table.id });
    return rows.length > 0;
  }

  /** Ids of the live tokens with this name. */
  async liveNamed(name: string): Promise<string[]> {
    const table = this.#table;
    const rows = await this.#db
      .select({ id: table.id })
      .from(table)
      .where(and(eq(table.name, name), isNull(table.revokedAt)));
    return rows.map((row) => row.id);
  }

  /**
   * The id of the live token presented; null for anything else. The lookup is by hash, so
   * neither the comparison's timing nor the query reveals anything about the token itself.
   */
  async verify(presented: string): Promise<string | null> {
    if (!presented.startsWith(this.#prefix)) return null;
    const table = this.#table;
    const [row] = await this.#db
      .select({ id: table.id })
      .from(table)
      .where(and(eq(table.tokenHash, hashToken(presented)), isNull(table.revokedAt)));
    if (!row) return null;
    const now = Date.now();
    if (now - (this.#touchedAt.get(row.id) ?? 0) >= this.#touchIntervalMs) {
      this.#touchedAt.set(row.id, now);
      await this.#db.update(table).set({ lastUsedAt: new Date() }).where(eq(table.id, row.id));
    }
    return row.id;
  }
}

function tokenResource(row: TokenRow): TokenResource {
  return {
    id: row.id,
    name: row.name,
    created_at: row.createdAt.toISOString(),
    last_used_at: row.lastUsedAt === null ? null : row.lastUsedAt.toISOString(),
    revoked_at: row.revokedAt === null ? null : row.revokedAt.toISOString(),
  };
}
