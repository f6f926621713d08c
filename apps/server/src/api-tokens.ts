import { apiTokens, type Database } from "@deckhand/db";
import type { ApiToken } from "@deckhand/wire";
import { HashedTokens } from "./hashed-tokens.ts";

/** Prefix of server API tokens, so a leaked one is recognisable (and scannable) as Deckhand's. */
export const API_TOKEN_PREFIX = "dhapi_";
/** The name of the admin token a non-loopback server generates when none is configured. */
export const GENERATED_ADMIN_TOKEN_NAME = "admin (generated at first start)";

/** API tokens for the server's HTTP API: 256-bit random, only their SHA-256 is stored. */
export class ApiTokenStore {
  readonly #tokens: HashedTokens;

  constructor(db: Database, options: { touchIntervalMs?: number } = {}) {
    this.#tokens = new HashedTokens(db, apiTokens, API_TOKEN_PREFIX, options);
  }

  async create(name: string): Promise<{ apiToken: ApiToken; token: string }> {
    const { resource, token } = await this.#tokens.create(name);
    return { apiToken: resource, token };
  }

  list(): Promise<ApiToken[]> {
    return this.#tokens.list();
  }

  /** Revokes a token by id; false when no such token exists. */
  revoke(id: string): Promise<boolean> {
    return this.#tokens.revoke(id);
  }

  /** Whether a presented bearer token is a live API token (looked up by hash). */
  async verify(presented: string): Promise<boolean> {
    return (await this.#tokens.verify(presented)) !== null;
  }

  /**
   * For a server that needs auth but was given no admin token: creates one the first time and
   * returns it (to be printed once); returns null when a generated one exists already. With
   * `replace`, revokes the old generated token and makes a new one (the operator lost it).
   */
  async ensureGeneratedAdminToken(options: { replace?: boolean } = {}): Promise<string | null> {
    const live = await this.#tokens.liveNamed(GENERATED_ADMIN_TOKEN_NAME);
    if (live.length > 0 && !options.replace) return null;
    for (const id of live) await this.revoke(id);
    return (await this.create(GENERATED_ADMIN_TOKEN_NAME)).token;
  }
}
