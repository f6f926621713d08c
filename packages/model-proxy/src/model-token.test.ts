import { MODEL_TOKEN_PREFIX } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { ModelProxyError } from "./model-proxy-error.ts";
import {
  hashModelToken,
  InMemoryModelTokenStore,
  mintModelToken,
  revokeModelToken,
  verifyModelToken,
} from "./model-token.ts";

describe("model tokens", () => {
  it("mints a prefixed 256-bit base64url token and stores only its SHA-256 hash", async () => {
    const store = new InMemoryModelTokenStore();
    const { token, tokenId, expiresAt } = await mintModelToken(store, {
      jobId: "job-1",
      ttlMs: 60_000,
      now: () => 1_000,
    });
    expect(token.startsWith(MODEL_TOKEN_PREFIX)).toBe(true);
    expect(Buffer.from(token.slice(MODEL_TOKEN_PREFIX.length), "base64url")).toHaveLength(32);
    expect(expiresAt.getTime()).toBe(61_000);
    const [record] = store.records();
    expect(record).toEqual({
      id: tokenId,
      hash: hashModelToken(token),
      jobId: "job-1",
      expiresAt,
      revokedAt: null,
    });
    expect(JSON.stringify(store.records())).not.toContain(token.slice(MODEL_TOKEN_PREFIX.length));
  });

  it("mints a different token every time", async () => {
    const store = new InMemoryModelTokenStore();
    const tokens = await Promise.all(
      Array.from({ length: 50 }, () => mintModelToken(store, { jobId: "j", ttlMs: 1000 })),
    );
    expect(new Set(tokens.map((minted) => minted.token)).size).toBe(50);
  });

  it("accepts a live token for its own job only", async () => {
    const store = new InMemoryModelTokenStore();
    const { token } = await mintModelToken(store, { jobId: "job-1", ttlMs: 60_000 });
    expect((await verifyModelToken(store, token, "job-1")).ok).toBe(true);
    expect(await verifyModelToken(store, token, "job-2")).toMatchObject({
      ok: false,
      reason: "job_mismatch",
    });
    expect(await verifyModelToken(store, token, undefined)).toMatchObject({
      ok: false,
      reason: "job_mismatch",
    });
  });

  it("refuses expired, revoked, unknown and malformed tokens", async () => {
    const store = new InMemoryModelTokenStore();
    const { token, expiresAt } = await mintModelToken(store, { jobId: "j", ttlMs: 1000 });
    expect(await verifyModelToken(store, token, "j", expiresAt.getTime())).toMatchObject({
      reason: "expired",
    });
    const other = await mintModelToken(store, { jobId: "j", ttlMs: 1000 });
    expect(await revokeModelToken(store, other.token)).toBe(true);
    expect(await verifyModelToken(store, other.token, "j")).toMatchObject({ reason: "revoked" });
    const third = await mintModelToken(store, { jobId: "j", ttlMs: 1000 });
    expect(await revokeModelToken(store, third.tokenId)).toBe(true);
    expect(await verifyModelToken(store, third.token, "j")).toMatchObject({ reason: "revoked" });
    const unknown = `${MODEL_TOKEN_PREFIX}${"A".repeat(43)}`;
    expect(await verifyModelToken(store, unknown, "j")).toMatchObject({ reason: "unknown" });
    expect(await verifyModelToken(store, "sk-not-ours", "j")).toMatchObject({
      reason: "malformed",
    });
    expect(await revokeModelToken(store, unknown)).toBe(false);
  });

  it("refuses to mint without a job id or with a non-positive ttl", async () => {
    const store = new InMemoryModelTokenStore();
    await expect(mintModelToken(store, { jobId: "", ttlMs: 1000 })).rejects.toBeInstanceOf(
      ModelProxyError,
    );
    await expect(mintModelToken(store, { jobId: "j", ttlMs: 0 })).rejects.toMatchObject({
      code: "invalid_request",
    });
  });
});
