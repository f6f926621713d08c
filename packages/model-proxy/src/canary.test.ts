// The canary: one known token pushed through every path the proxy has, then searched for in
// everything the proxy produced. It must appear nowhere but as its hash in the token store.
import { REDACTED } from "@deckhand/secrets";
import { type FakeUpstream, sseEvent, startFakeUpstream } from "@deckhand/testkit";
import { WireHeader, WirePath } from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ANTHROPIC_KEY, OPENAI_KEY, recordingLogger, serveApp } from "../test/proxy-harness.ts";
import { createModelProxy } from "./model-proxy.ts";
import {
  hashModelToken,
  InMemoryModelTokenStore,
  type ModelTokenStore,
  mintModelToken,
  revokeModelToken,
} from "./model-token.ts";
import { InMemoryUsageRecorder, type ModelUsageEntry, type UsageRecorder } from "./usage.ts";

const JOB = "canary-job";

interface Observed {
  path: string;
  status: number;
  headers: string;
  body: string;
}

// The canary runs with the platform fetch and with an injected one; only the injected fetch
// can be made to throw.
describe.each([
  { transport: "an injected fetch", injectFetch: true },
  { transport: "the platform fetch", injectFetch: false },
])("token redaction canary over $transport", ({ injectFetch }) => {
  let upstream: FakeUpstream;
  let proxy: { origin: string; close: () => Promise<void> };
  let clock = Date.now();
  const store = new InMemoryModelTokenStore();
  const usage = new InMemoryUsageRecorder();
  const logger = recordingLogger();
  const failures = { store: false, usage: false, fetch: false };
  const secrets: string[] = [];
  const observed: Observed[] = [];
  const consoleLines: string[] = [];

  beforeAll(async () => {
    for (const method of ["log", "info", "warn", "error", "debug"] as const) {
      vi.spyOn(console, method).mockImplementation((...values: unknown[]) => {
        consoleLines.push(
          values
            .map((value) =>
              value instanceof Error ? `${value.stack} ${String(value.cause)}` : String(value),
            )
            .join(" "),
        );
      });
    }
    upstream = await startFakeUpstream();
    // Storage and fetch that fail on demand with the token in their error text, as a careless
    // driver or a bug might.
    const tokens: ModelTokenStore = {
      insert: (token) => store.insert(token),
      findByHash: async (hash) => {
        if (failures.store)
          throw new Error(`database unreachable while checking ${secrets.join(",")}`);
        return store.findByHash(hash);
      },
      revoke: (key) => store.revoke(key),
    };
    const recorder: UsageRecorder = {
      record: async (entry: ModelUsageEntry) => {
        if (failures.usage) throw new Error(`could not record usage for ${secrets.join(",")}`);
        await usage.record(entry);
      },
    };
    const app = createModelProxy({
      upstreams: {
        codex: { kind: "openai", baseUrl: `${upstream.url}/v1`, apiKey: OPENAI_KEY },
        "claude-code": { kind: "anthropic", baseUrl: upstream.url, apiKey: ANTHROPIC_KEY },
        dead: { kind: "openai", baseUrl: "http://127.0.0.1:1/v1", apiKey: OPENAI_KEY },
      },
      tokens,
      usage: recorder,
      logger,
      now: () => clock,
      rateLimit: { burst: 3, perSecond: 1 },
      ...(injectFetch
        ? {
            fetch: async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
              if (failures.fetch) {
                throw new TypeError(`fetch exploded; request had ${secrets.join(",")}`);
              }
              return fetch(input, init);
            },
          }
        : {}),
    });
    proxy = await serveApp(app);
  });

  afterAll(async () => {
    vi.restoreAllMocks();
    await proxy.close();
    await upstream.close();
  });

  async function send(
    agentType: string,
    path: string,
    token: string,
    options: { jobId?: string; anthropic?: boolean; abortAfterFirstChunk?: boolean } = {},
  ): Promise<Observed> {
    clock += 10_000; // lets the rate limiter refill between paths
    const headers = new Headers({ "content-type": "application/json" });
    if (options.anthropic) headers.set("x-api-key", token);
    else headers.set(WireHeader.authorization, `Bearer ${token}`);
    headers.set(WireHeader.jobId, options.jobId ?? JOB);
    // A copy in a header the proxy does not know must not travel upstream either.
    headers.set("x-extra-credential", token);
    const abort = new AbortController();
    let body = "";
    let status = 0;
    let responseHeaders = "";
    try {
      const response = await fetch(`${proxy.origin}${WirePath.modelProvider}/${agentType}${path}`, {
        method: "POST",
        headers,
        body: JSON.stringify({ model: "m", stream: true, note: "payloads are the agent's own" }),
        signal: abort.signal,
      });
      status = response.status;
      responseHeaders = JSON.stringify([...response.headers]);
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        body += decoder.decode(value, { stream: true });
        if (options.abortAfterFirstChunk) {
          abort.abort();
          break;
        }
      }
    } catch (error) {
      body += ` [stream failed: ${String(error)}]`;
    }
    const result = { path: `${agentType}${path}`, status, headers: responseHeaders, body };
    observed.push(result);
    return result;
  }

  it("never lets the token out on any path", async () => {
    const minted = await mintModelToken(store, { jobId: JOB, ttlMs: 3_600_000, now: () => clock });
    const expiring = await mintModelToken(store, { jobId: JOB, ttlMs: 1000, now: () => clock });
    const revoked = await mintModelToken(store, { jobId: JOB, ttlMs: 3_600_000, now: () => clock });
    const limited = await mintModelToken(store, { jobId: JOB, ttlMs: 3_600_000, now: () => clock });
    await revokeModelToken(store, revoked.token);
    const token = minted.token;
    secrets.push(token, expiring.token, revoked.token, limited.token);

    const statuses: Record<string, number> = {};
    statuses.good = (await send("codex", "/responses", token)).status;
    statuses.anthropic = (
      await send("claude-code", "/v1/messages", token, { anthropic: true })
    ).status;
    statuses.wrongJob = (await send("codex", "/responses", token, { jobId: "other" })).status;
    statuses.expired = (await send("codex", "/responses", expiring.token)).status;
    statuses.revoked = (await send("codex", "/responses", revoked.token)).status;
    const burst = [];
    for (let index = 0; index < 4; index += 1) {
      clock -= 10_000; // no refill: four requests at one instant
      burst.push((await send("codex", "/models-not-allowed", limited.token)).status);
    }
    statuses.rateLimited = burst.at(-1)!;
    statuses.unknownType = (await send("gemini", "/responses", token)).status;

    upstream.respondWith(() => ({
      status: 500,
      headers: { "content-type": "application/json" },
      chunks: [JSON.stringify({ error: { message: "upstream blew up" } })],
    }));
    statuses.upstream500 = (await send("codex", "/responses", token)).status;
    upstream.respondWith(() => ({
      chunks: [sseEvent({ type: "response.created", response: { usage: null } })],
      chunkDelayMs: 10,
      ending: "destroy",
    }));
    statuses.upstreamBrokeOff = (await send("codex", "/responses", token)).status;
    upstream.respondWith(() => ({
      chunks: [sseEvent({ type: "response.created" })],
      ending: "hang",
    }));
    statuses.clientGone = (
      await send("codex", "/responses", token, { abortAfterFirstChunk: true })
    ).status;
    await upstream.nextEarlyClose();
    upstream.respondWith(undefined);
    statuses.refused = (await send("dead", "/responses", token)).status;

    if (injectFetch) {
      failures.fetch = true;
      statuses.fetchThrew = (await send("codex", "/responses", token)).status;
      failures.fetch = false;
    }
    failures.usage = true;
    statuses.usageThrew = (await send("codex", "/responses", token)).status;
    failures.usage = false;
    failures.store = true;
    statuses.storeThrew = (await send("codex", "/responses", token)).status;
    failures.store = false;
    await usage.waitFor(injectFetch ? 7 : 6);

    // Every path really ran.
    expect(statuses).toEqual({
      good: 200,
      anthropic: 200,
      wrongJob: 401,
      expired: 401,
      revoked: 401,
      rateLimited: 429,
      unknownType: 404,
      upstream500: 500,
      upstreamBrokeOff: 200,
      clientGone: 200,
      refused: 502,
      ...(injectFetch ? { fetchThrew: 502 } : {}),
      usageThrew: 200,
      storeThrew: 500,
    });
    expect(logger.lines.some((line) => line.level === "error")).toBe(true);
    // The failures' texts did carry the token; the logs kept them, redacted.
    expect(JSON.stringify(logger.lines)).toContain(REDACTED);

    const places: Record<string, string> = {
      logs: JSON.stringify(logger.lines),
      console: consoleLines.join("\n"),
      responses: JSON.stringify(observed),
      usage: JSON.stringify(usage.entries),
      upstreamRequests: JSON.stringify(upstream.requests),
      tokenStoreWithoutHashes: JSON.stringify(
        store.records().map(({ hash: _hash, ...rest }) => rest),
      ),
    };
    for (const secret of secrets) {
      const randomPart = secret.slice(-43);
      for (const [place, text] of Object.entries(places)) {
        expect({ place, leaked: text.includes(randomPart) }).toEqual({ place, leaked: false });
      }
      expect(store.records().some((record) => record.hash === hashModelToken(secret))).toBe(true);
    }
    // The upstream keys stay between the proxy and the upstream too.
    for (const [place, text] of Object.entries(places)) {
      if (place === "upstreamRequests") continue;
      expect({ place, leaked: text.includes(OPENAI_KEY) || text.includes(ANTHROPIC_KEY) }).toEqual({
        place,
        leaked: false,
      });
    }
  });
});
