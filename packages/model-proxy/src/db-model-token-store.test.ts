import { createDb, type DbHandle } from "@deckhand/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DbModelTokenStore } from "./db-model-token-store.ts";
import {
  hashModelToken,
  mintModelToken,
  revokeModelToken,
  verifyModelToken,
} from "./model-token.ts";

let database: DbHandle;
beforeAll(async () => {
  database = await createDb({ dataDir: "memory://" });
});
afterAll(async () => {
  await database.close();
});

describe("DbModelTokenStore", () => {
  it("stores only the hash of a minted token and verifies it for its job", async () => {
    const store = new DbModelTokenStore(database.db);
    const minted = await mintModelToken(store, { jobId: "job-1", ttlMs: 60_000 });
    const rows = await database.query<Record<string, unknown>>("select * from model_tokens");
    expect(JSON.stringify(rows.rows)).not.toContain(minted.token);
    expect(rows.rows.map((row) => row.token_hash)).toContain(hashModelToken(minted.token));
    const verified = await verifyModelToken(store, minted.token, "job-1");
    expect(verified.ok).toBe(true);
    expect((await verifyModelToken(store, minted.token, "job-2")).ok).toBe(false);
  });

  it("revokes by token, by id and by hash, and says false for unknown ones", async () => {
    const store = new DbModelTokenStore(database.db);
    const first = await mintModelToken(store, { jobId: "job-r", ttlMs: 60_000 });
    const second = await mintModelToken(store, { jobId: "job-r", ttlMs: 60_000 });
    const third = await mintModelToken(store, { jobId: "job-r", ttlMs: 60_000 });
    expect(await revokeModelToken(store, first.token)).toBe(true);
    expect(await store.revoke(second.tokenId)).toBe(true);
    expect(await store.revoke(hashModelToken(third.token))).toBe(true);
    for (const minted of [first, second, third]) {
      const result = await verifyModelToken(store, minted.token, "job-r");
      expect(result).toMatchObject({ ok: false, reason: "revoked" });
    }
    expect(await store.revoke("00000000-0000-4000-8000-000000000000")).toBe(false);
    expect(await store.revoke("not-an-id")).toBe(false);
  });

  it("keeps the first revocation time when revoked twice", async () => {
    const store = new DbModelTokenStore(database.db);
    const minted = await mintModelToken(store, { jobId: "job-twice", ttlMs: 60_000 });
    await store.revoke(minted.tokenId);
    const first = (await store.findByHash(hashModelToken(minted.token)))!.revokedAt;
    await store.revoke(minted.tokenId);
    expect((await store.findByHash(hashModelToken(minted.token)))!.revokedAt).toEqual(first);
  });
});

describe("DbModelTokenStore.extend", () => {
  it("moves a live token's expiry, and never revives a revoked one", async () => {
    const store = new DbModelTokenStore(database.db);
    const now = Date.now();
    const live = await mintModelToken(store, {
      jobId: "job-x",
      ttlMs: 1_000,
      now: () => now - 5_000,
    });
    expect((await verifyModelToken(store, live.token, "job-x")).ok).toBe(false);
    expect(await store.extend(live.tokenId, new Date(now + 60_000))).toBe(true);
    expect((await verifyModelToken(store, live.token, "job-x")).ok).toBe(true);
    const revoked = await mintModelToken(store, { jobId: "job-x", ttlMs: 60_000 });
    await store.revoke(revoked.tokenId);
    expect(await store.extend(revoked.tokenId, new Date(now + 60_000))).toBe(false);
    expect((await verifyModelToken(store, revoked.token, "job-x")).ok).toBe(false);
  });
});
