// Scoped model tokens kept in the shared database, so a token minted by whichever process runs
// a job (the server, or a `deckhand executor` on the same PostgreSQL) is verified by the server's
// proxy that the agent calls.
import { type Database, modelTokens } from "@deckhand/db";
import { and, eq, sql } from "drizzle-orm";
import type { ModelTokenRecord, ModelTokenStore } from "./model-token.ts";

const HASH_PATTERN = /^[0-9a-f]{64}$/;
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type TokenRow = typeof modelTokens.$inferSelect;

function toRecord(row: TokenRow): ModelTokenRecord {
  return {
    id: row.id,
    hash: row.tokenHash,
    jobId: row.jobId,
    expiresAt: row.expiresAt,
    revokedAt: row.revokedAt,
  };
}

/** Scoped model tokens in the `model_tokens` table: only hashes are ever written. */
export class DbModelTokenStore implements ModelTokenStore {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async insert(token: { hash: string; jobId: string; expiresAt: Date }): Promise<ModelTokenRecord> {
    const [row] = await this.#db
      .insert(modelTokens)
      .values({ tokenHash: token.hash, jobId: token.jobId, expiresAt: token.expiresAt })
      .returning();
    return toRecord(row!);
  }

  async findByHash(hash: string): Promise<ModelTokenRecord | undefined> {
    const [row] = await this.#db.select().from(modelTokens).where(eq(modelTokens.tokenHash, hash));
    return row ? toRecord(row) : undefined;
  }

  /** Moves a live token's expiry (a busy agent keeps its token; a revoked one stays revoked). */
  async extend(id: string, expiresAt: Date): Promise<boolean> {
    if (!UUID_PATTERN.test(id)) return false;
    const rows = await this.#db
      .update(modelTokens)
      .set({ expiresAt })
      .where(and(eq(modelTokens.id, id), sql`${modelTokens.revokedAt} is null`))
      .returning({ id: modelTokens.id });
    return rows.length > 0;
  }

  async revoke(idOrHash: string): Promise<boolean> {
    // Anything else would make PostgreSQL reject the uuid cast; it names no token either way.
    const where = HASH_PATTERN.test(idOrHash)
      ? eq(modelTokens.tokenHash, idOrHash)
      : UUID_PATTERN.test(idOrHash)
        ? eq(modelTokens.id, idOrHash)
        : undefined;
    if (!where) return false;
    const rows = await this.#db
      .update(modelTokens)
      .set({ revokedAt: sql`coalesce(${modelTokens.revokedAt}, now())` })
      .where(where)
      .returning({ id: modelTokens.id });
    return rows.length > 0;
  }
}
