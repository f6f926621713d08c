import { createDb, type DbHandle } from "@deckhand/db";
import { DbModelTokenStore, mintModelToken } from "@deckhand/model-proxy";
import { REDACTED } from "@deckhand/secrets";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DbProbeStore, DbUsageRecorder } from "./db-stores.ts";

let database: DbHandle;
beforeAll(async () => {
  database = await createDb({ dataDir: "memory://" });
});
afterAll(async () => {
  await database.close();
});

describe("DbUsageRecorder", () => {
  it("records usage rows readable per job", async () => {
    const recorder = new DbUsageRecorder(database.db);
    await recorder.record({
      jobId: "job-u",
      agentType: "codex",
      upstream: "https://x.test/v1",
      upstreamKind: "openai",
      endpoint: "responses",
      model: "gpt-5-codex",
      inputTokens: 11,
      outputTokens: 7,
      totalTokens: 18,
      requestBytes: 100,
      responseBytes: 2_000,
      status: 200,
      outcome: "completed",
    });
    await recorder.record({
      jobId: "job-u",
      agentType: "codex",
      upstream: "https://x.test/v1",
      upstreamKind: "openai",
      endpoint: "responses",
      requestBytes: 5,
      responseBytes: 0,
      status: 502,
      outcome: "upstream_unavailable",
    });
    const rows = await recorder.forJob("job-u");
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({
      model: "gpt-5-codex",
      inputTokens: 11,
      outputTokens: 7,
      status: 200,
    });
    expect(rows[1]).toMatchObject({ model: null, inputTokens: null, requestBytes: 5, status: 502 });
    expect(await recorder.forJob("other")).toEqual([]);
  });
});

describe("DbProbeStore", () => {
  it("keeps no model token a probed agent wrote to stderr or an error", async () => {
    const store = new DbProbeStore(database.db);
    const { token } = await mintModelToken(new DbModelTokenStore(database.db), {
      jobId: "provider-probe:codex:1",
      ttlMs: 60_000,
    });
    await store.save({
      providerId: "codex",
      fingerprint: "f",
      status: "error",
      error: `the agent said: bad token ${token}`,
      result: {
        agentName: null,
        version: null,
        models: [],
        currentModel: null,
        modes: [],
        currentMode: null,
        commands: [],
        commandsComplete: false,
        stderrTail: `using ${token}\n`,
      },
      probedAt: new Date(),
    });
    const loaded = await store.load("codex");
    expect(JSON.stringify(loaded)).not.toContain(token);
    expect(loaded?.result.stderrTail).toContain(REDACTED);
    expect(loaded?.error).toContain(REDACTED);
  });
});
