// Session agents' model access over this server's token store (PGlite): a lease per backend
// bound to its usage job, renewed by turns an hour or more after its last renewal, revoked when
// the backend goes.
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

function access(now: () => number = Date.now) {
  return sessionModelAccess({
    modelTokens,
    serverUrl: () => "http://127.0.0.1:7777",
    serves: (agentType) => agentType === "codex",
    now,
  });
}

/** The job's one token's time left, in milliseconds. */
async function expiresIn(jobId: string): Promise<number> {
  const { rows } = await database.query<{ expires_at: string | Date }>(
    "select expires_at from model_tokens where job_id = $1",
    [jobId],
  );
  expect(rows).toHaveLength(1);
  return new Date(rows[0]!.expires_at).getTime() - Date.now();
}

/** As if the agent had sat unused until a minute before its token's end. */
async function nearlyExpire(jobId: string): Promise<void> {
  await database.query(
    "update model_tokens set expires_at = now() + interval '1 minute' where job_id = $1",
    [jobId],
  );
  expect(await expiresIn(jobId)).toBeLessThan(2 * 60_000);
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
    let clock = Date.now();
    const lease = await access(() => clock).lease("codex", "agent-session:renew");
    // A lifetime of hours: the lease runs out long after this test. The job has one token.
    expect(await expiresIn("agent-session:renew")).toBeGreaterThan(60 * 60_000);
    await nearlyExpire("agent-session:renew");
    // Nearly twelve hours later, a turn renews it.
    clock += 12 * 60 * 60_000 - 60_000;
    await lease.renew();
    expect(await expiresIn("agent-session:renew")).toBeGreaterThan(60 * 60_000);
    await lease.release();
    const refused = await verifyModelToken(modelTokens, lease.context.token, "agent-session:renew");
    expect(refused).toMatchObject({ ok: false, reason: "revoked" });
  });

  it("sends nothing for a turn within an hour of the last renewal", async () => {
    let clock = Date.now();
    const lease = await access(() => clock).lease("codex", "agent-session:recent");
    // The database's expiry moved under the lease shows whether a renewal wrote it.
    await nearlyExpire("agent-session:recent");
    clock += 59 * 60_000;
    await lease.renew();
    expect(await expiresIn("agent-session:recent")).toBeLessThan(2 * 60_000);
    clock += 2 * 60_000;
    await lease.renew();
    expect(await expiresIn("agent-session:recent")).toBeGreaterThan(11 * 60 * 60_000);
    // The next hour counts from that renewal.
    await nearlyExpire("agent-session:recent");
    clock += 30 * 60_000;
    await lease.renew();
    expect(await expiresIn("agent-session:recent")).toBeLessThan(2 * 60_000);
    await lease.release();
  });
});
