import { type Database, executorTokens } from "@deckhand/db";
import type { ExecutorToken } from "@deckhand/wire";
import { HashedTokens } from "./hashed-tokens.ts";

/**
 * Prefix of executor tokens: a leaked one is recognisable as Deckhand's, and the server tells one
 * apart from an admin or API token before any lookup (it reaches the executor API only).
 */
export const EXECUTOR_TOKEN_PREFIX = "dhexe_";

/**
 * Executor tokens, kept as API tokens are: 256-bit random, only their SHA-256 stored, revocable.
 * Each request is checked against the table, so a revoked token is refused at its very next call.
 */
export class ExecutorTokenStore {
  readonly #tokens: HashedTokens;

  constructor(db: Database, options: { touchIntervalMs?: number } = {}) {
    this.#tokens = new HashedTokens(db, executorTokens, EXECUTOR_TOKEN_PREFIX, options);
  }

  async create(name: string): Promise<{ executorToken: ExecutorToken; token: string }> {
    const { resource, token } = await this.#tokens.create(name);
    return { executorToken: resource, token };
  }

  list(): Promise<ExecutorToken[]> {
    return this.#tokens.list();
  }

  /** Revokes a token by id; false when no such token exists. */
  revoke(id: string): Promise<boolean> {
    return this.#tokens.revoke(id);
  }

  /** The id of the live executor token presented; null for anything else. Looked up by hash. */
  verify(presented: string): Promise<string | null> {
    return this.#tokens.verify(presented);
  }
}
