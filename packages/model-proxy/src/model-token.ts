import { createHash, randomBytes, randomUUID } from "node:crypto";
import { MODEL_TOKEN_PREFIX, ModelTokenPattern } from "@deckhand/wire";
import { ModelProxyError } from "./model-proxy-error.ts";

/** What the store keeps of a token: never the token itself, only its SHA-256 hash. */
export interface ModelTokenRecord {
  id: string;
  /** Hex SHA-256 of the whole token, prefix included. */
  hash: string;
  jobId: string;
  expiresAt: Date;
  revokedAt: Date | null;
}

/**
 * Where scoped tokens live. The server backs it with the `model_tokens` table; tests and a
 * single process use `InMemoryModelTokenStore`.
 */
export interface ModelTokenStore {
  insert(token: { hash: string; jobId: string; expiresAt: Date }): Promise<ModelTokenRecord>;
  findByHash(hash: string): Promise<ModelTokenRecord | undefined>;
  /** Revokes by id or by hash; false when no such token exists. */
  revoke(idOrHash: string): Promise<boolean>;
}

export class InMemoryModelTokenStore implements ModelTokenStore {
  readonly #byHash = new Map<string, ModelTokenRecord>();

  async insert(token: { hash: string; jobId: string; expiresAt: Date }): Promise<ModelTokenRecord> {
    const record: ModelTokenRecord = { id: randomUUID(), ...token, revokedAt: null };
    this.#byHash.set(record.hash, record);
    return { ...record };
  }

  async findByHash(hash: string): Promise<ModelTokenRecord | undefined> {
    const record = this.#byHash.get(hash);
    return record ? { ...record } : undefined;
  }

  async revoke(idOrHash: string): Promise<boolean> {
    const record =
      this.#byHash.get(idOrHash) ??
      [...this.#byHash.values()].find((candidate) => candidate.id === idOrHash);
    if (!record) return false;
    record.revokedAt ??= new Date();
    return true;
  }

  /** Every stored record, for tests that check nothing but hashes is kept. */
  records(): ModelTokenRecord[] {
    return [...this.#byHash.values()].map((record) => ({ ...record }));
  }
}

/** Hex SHA-256 of a token: the only form in which a token is stored or compared. */
export function hashModelToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

export interface MintModelTokenOptions {
  jobId: string;
  ttlMs: number;
  /** The clock, for tests. */
  now?: () => number;
}

export interface MintedModelToken {
  /** The secret: hand it to the agent's environment and nowhere else. */
  token: string;
  /** The store's id for the token, to revoke it without the secret. */
  tokenId: string;
  expiresAt: Date;
}

/** Mints a 256-bit scoped token bound to one job; only its hash reaches the store. */
export async function mintModelToken(
  store: ModelTokenStore,
  options: MintModelTokenOptions,
): Promise<MintedModelToken> {
  if (options.jobId.length === 0) {
    throw new ModelProxyError("invalid_request", "a model token needs a non-empty job id");
  }
  if (!Number.isFinite(options.ttlMs) || options.ttlMs <= 0) {
    throw new ModelProxyError(
      "invalid_request",
      `a model token's ttlMs must be a positive number of milliseconds, not ${options.ttlMs}`,
    );
  }
  const token = `${MODEL_TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
  const expiresAt = new Date((options.now ?? Date.now)() + options.ttlMs);
  const record = await store.insert({
    hash: hashModelToken(token),
    jobId: options.jobId,
    expiresAt,
  });
  return { token, tokenId: record.id, expiresAt };
}

/** Revokes a token given the token itself or its store id; false when it is unknown. */
export async function revokeModelToken(
  store: ModelTokenStore,
  tokenOrId: string,
): Promise<boolean> {
  const key = tokenOrId.startsWith(MODEL_TOKEN_PREFIX) ? hashModelToken(tokenOrId) : tokenOrId;
  return store.revoke(key);
}

/** Why a presented token was refused. Logged; the agent gets only a generic 401. */
export type TokenRefusal = "malformed" | "unknown" | "expired" | "revoked" | "job_mismatch";

export type TokenVerification =
  | { ok: true; record: ModelTokenRecord }
  | { ok: false; reason: TokenRefusal; record?: ModelTokenRecord };

const wholeToken = new RegExp(`^${ModelTokenPattern.source}$`);

/**
 * Checks a presented token against the store. The comparison is a lookup by SHA-256 hash, so
 * response time says nothing about how much of a guess was right (constant-time in effect).
 */
export async function verifyModelToken(
  store: ModelTokenStore,
  token: string,
  jobId: string | undefined,
  now: number = Date.now(),
): Promise<TokenVerification> {
  if (!wholeToken.test(token)) return { ok: false, reason: "malformed" };
  const record = await store.findByHash(hashModelToken(token));
  if (!record) return { ok: false, reason: "unknown" };
  if (record.revokedAt !== null) return { ok: false, reason: "revoked", record };
  if (record.expiresAt.getTime() <= now) return { ok: false, reason: "expired", record };
  if (jobId !== record.jobId) return { ok: false, reason: "job_mismatch", record };
  return { ok: true, record };
}
