// Session agents' model access over this server's token store (PGlite): a lease per backend
// bound to its usage job, renewed each turn, revoked when the backend goes.
import { createDb, type DbHandle } from "@deckhand/db";
import { DbModelTokenStore, verifyModelToken } from "@deckhand/model-proxy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionModelAccess } from "./session-model-access.ts";

let database: DbHandle;
let modelTokens: DbModelTokenStore;

beforeAll(async () => {
  database = await createDb({ dataDir: "memory://" });
  modelTokens = new DbModelTokenStore(database.db);
});

afterAll(async () => {
  await database.close();
});

function access() {
  return sessionModelAccess({
    modelTokens,
    serverUrl: () => "http://127.0.0.1:7777",
    serves: (agentType) => agentType === "codex",
  });
}

describe("sessionModelAccess", () => {
  it("serves the agent types the proxy has an upstream for", () => {
    expect(access().serves("codex")).toBe(true);
    expect(access().serves("claude")).toBe(false);
  });

  it("leases the agent type's proxy route with a token bound to the job", async () => {
    const lease = await access().lease("codex", "agent-session:lease");
    expect(lease.context.proxyUrl).toBe("http://127.0.0.1:7777/model-provider/codex");
    expect(lease.context.jobId).toBe("agent-session:lease");
    expect(
      (await verifyModelToken(modelTokens, lease.context.token, "agent-session:lease")).ok,
    ).toBe(true);
    expect((await verifyModelToken(modelTokens, lease.context.token, "another-job")).ok).toBe(
      false,
    );
  });

  it("renews the token for another lifetime, and revokes it on release", async () => {
    const lease = await access().lease("codex", "agent-session:renew");
    // A lifetime of hours: the lease runs out long after this test. The job has one token.
    const expiresIn = async () => {
      const { rows } = await database.query<{ expires_at: string | Date }>(
        "select expires_at from model_tokens where job_id = $1",
        ["agent-session:renew"],
      );
      expect(rows).toHaveLength(1);
      return new Date(rows[0]!.expires_at).getTime() - Date.now();
    };
    expect(await expiresIn()).toBeGreaterThan(60 * 60_000);
    // As if the agent had sat unused until a minute before the end: a turn renews it.
    await database.query(
      "update model_tokens set expires_at = now() + interval '1 minute' where job_id = $1",
      ["agent-session:renew"],
    );
    expect(await expiresIn()).toBeLessThan(2 * 60_000);
    await lease.renew();
    expect(await expiresIn()).toBeGreaterThan(60 * 60_000);
    await lease.release();
    const refused = await verifyModelToken(modelTokens, lease.context.token, "agent-session:renew");
    expect(refused).toMatchObject({ ok: false, reason: "revoked" });
  });
});
