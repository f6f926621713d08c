import { WirePath } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { leaseModelProvider, leaseModelProxy } from "./model-proxy-lease.ts";
import { InMemoryModelTokenStore, verifyModelToken } from "./model-token.ts";

describe("model proxy leases", () => {
  it("mints a token for the job, names the proxy's base URL and revokes the token on release", async () => {
    const modelTokens = new InMemoryModelTokenStore();
    const lease = await leaseModelProvider(
      { modelTokens, serverUrl: async () => "http://127.0.0.1:7420" },
      { jobId: "batch-workspace:1", ttlMs: 60_000 },
    );
    expect(lease.baseUrl).toBe(`http://127.0.0.1:7420${WirePath.modelProvider}`);
    expect(lease.jobId).toBe("batch-workspace:1");
    expect((await verifyModelToken(modelTokens, lease.token, "batch-workspace:1")).ok).toBe(true);
    await lease.release();
    expect(await verifyModelToken(modelTokens, lease.token, "batch-workspace:1")).toMatchObject({
      ok: false,
      reason: "revoked",
    });
    // A second release is harmless.
    await lease.release();
  });

  it("points a per-agent-type lease at that type's route", async () => {
    const modelTokens = new InMemoryModelTokenStore();
    const lease = await leaseModelProxy(
      { modelTokens, serverUrl: () => "http://127.0.0.1:7420" },
      "codex",
      { jobId: "agent-session:7", ttlMs: 60_000 },
    );
    expect(lease.context).toMatchObject({
      proxyUrl: `http://127.0.0.1:7420${WirePath.modelProvider}/codex`,
      jobId: "agent-session:7",
    });
    expect(modelTokens.records().map((record) => record.id)).toEqual([lease.tokenId]);
    await lease.release();
    expect(modelTokens.records()[0]!.revokedAt).not.toBeNull();
  });
});
