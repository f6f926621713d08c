import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { httpStatusOf } from "@deckhand/http-kit";
import { responsesStream, sseEvent } from "@deckhand/testkit";
import { ErrorCodeSchema, WireHeader, WirePath } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import {
  ANTHROPIC_KEY,
  type Harness,
  JOB_ID,
  OPENAI_KEY,
  serverEdge,
  startHarness,
} from "../test/proxy-harness.ts";
import { createModelProxy } from "./model-proxy.ts";
import { ModelProxyError } from "./model-proxy-error.ts";
import { InMemoryModelTokenStore, revokeModelToken } from "./model-token.ts";
import { InMemoryUsageRecorder } from "./usage.ts";

interface ErrorBody {
  error: { code: string; message: string };
}

const harnesses: Harness[] = [];
async function startedHarness(options: Parameters<typeof startHarness>[0] = {}): Promise<Harness> {
  const started = await startHarness(options);
  harnesses.push(started);
  return started;
}
const harness = startedHarness;
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((started) => started.close()));
});

const responsesBody = JSON.stringify({ model: "gpt-5-codex", input: "hi", stream: true });

describe("authentication", () => {
  async function refusedBody(proxy: Harness, headers: Headers): Promise<string> {
    const response = await fetch(`${proxy.baseUrl("codex")}/responses`, {
      method: "POST",
      headers,
      body: responsesBody,
    });
    expect(response.status).toBe(401);
    const text = await response.text();
    expect(JSON.parse(text).error.code).toBe("unauthorized");
    return text;
  }

  it("answers 401 without a token, without forwarding anything", async () => {
    const proxy = await harness();
    const headers = new Headers({ [WireHeader.jobId]: JOB_ID });
    await refusedBody(proxy, headers);
    expect(proxy.upstream.requests).toHaveLength(0);
  });

  it("answers 401 when the job id header is missing or names another job, without echoing either", async () => {
    const proxy = await harness();
    const token = await proxy.mint();
    const wrong = await refusedBody(proxy, proxy.agentHeaders(token, { jobId: "job-other-7" }));
    expect(wrong).not.toContain("job-other-7");
    expect(wrong).not.toContain(token);
    const headers = proxy.agentHeaders(token);
    headers.delete(WireHeader.jobId);
    await refusedBody(proxy, headers);
    expect(proxy.upstream.requests).toHaveLength(0);
    expect(proxy.logger.lines.map((line) => line.fields?.reason)).toEqual([
      "job_mismatch",
      "job_mismatch",
    ]);
  });

  it("answers 401 for an expired, a revoked and an unknown token", async () => {
    let clock = Date.now();
    const proxy = await harness({ now: () => clock });
    const token = await proxy.mint({ ttlMs: 1 });
    clock += 10_000;
    await refusedBody(proxy, proxy.agentHeaders(token));
    const revoked = await proxy.mint({ ttlMs: 1e12 });
    await revokeModelToken(proxy.tokens, revoked);
    await refusedBody(proxy, proxy.agentHeaders(revoked));
    await refusedBody(proxy, proxy.agentHeaders(`${token.slice(0, -4)}AAAA`));
    await refusedBody(proxy, proxy.agentHeaders("not-even-a-token"));
    expect(proxy.logger.lines.map((line) => line.fields?.reason)).toEqual([
      "expired",
      "revoked",
      "unknown",
      "malformed",
    ]);
  });

  it("refuses two different credentials at once", async () => {
    const proxy = await harness();
    const token = await proxy.mint();
    const headers = proxy.agentHeaders(token);
    headers.set("x-api-key", await proxy.mint());
    await refusedBody(proxy, headers);
  });
});

describe("limits and routing", () => {
  it("answers 429 with Retry-After once a token's burst is spent", async () => {
    const proxy = await harness({ rateLimit: { burst: 2, perSecond: 0.25 } });
    const token = await proxy.mint();
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let index = 0; index < 3; index += 1) {
      const response = await fetch(`${proxy.baseUrl("codex")}/models`, {
        headers: proxy.agentHeaders(token),
      });
      statuses.push(response.status);
      if (response.status === 429) {
        retryAfter = response.headers.get("retry-after");
        expect(((await response.json()) as ErrorBody).error.code).toBe("rate_limited");
      } else {
        await response.text();
      }
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(retryAfter).toBe("4");
    const other = await proxy.mint();
    const fresh = await fetch(`${proxy.baseUrl("codex")}/models`, {
      headers: proxy.agentHeaders(other),
    });
    expect(fresh.status).toBe(200);
    await fresh.text();
  });

  it("answers 404 naming the configured agent types for an unknown one", async () => {
    const proxy = await harness();
    const token = await proxy.mint();
    const response = await fetch(`${proxy.baseUrl("goose")}/responses`, {
      method: "POST",
      headers: proxy.agentHeaders(token),
      body: "{}",
    });
    expect(response.status).toBe(404);
    const body = (await response.json()) as ErrorBody;
    expect(body.error.code).toBe("not_found");
    expect(body.error.message).toContain("claude-code, codex, gemini");
  });

  it("answers 404 for an endpoint the upstream kind does not forward", async () => {
    const proxy = await harness();
    const token = await proxy.mint();
    const response = await fetch(`${proxy.baseUrl("codex")}/files`, {
      headers: proxy.agentHeaders(token),
    });
    expect(response.status).toBe(404);
    expect(((await response.json()) as ErrorBody).error.message).toContain("POST /responses");
    expect(proxy.upstream.requests).toHaveLength(0);
  });

  it("refuses an invalid upstream configuration without quoting its key", () => {
    const build = () =>
      createModelProxy({
        upstreams: {
          codex: { kind: "openai", baseUrl: "not a url", apiKey: "sk-secret-config-key" },
        },
        tokens: new InMemoryModelTokenStore(),
        usage: new InMemoryUsageRecorder(),
      });
    expect(build).toThrow(ModelProxyError);
    expect(build).toThrow(/baseUrl/);
    expect(build).not.toThrow(/sk-secret-config-key/);
  });
});

describe("error statuses", () => {
  it("answers every wire code a ModelProxyError carries with the status map's status", async () => {
    for (const code of ErrorCodeSchema.options) {
      const tokens = new InMemoryModelTokenStore();
      tokens.findByHash = async () => {
        throw new ModelProxyError(code, `failing with ${code}`);
      };
      const proxy = createModelProxy({
        upstreams: { codex: { kind: "openai", baseUrl: "http://127.0.0.1:9", apiKey: "sk-k" } },
        tokens,
        usage: new InMemoryUsageRecorder(),
      });
      const response = await proxy.request(`${WirePath.modelProvider}/codex/responses`, {
        method: "POST",
        headers: {
          [WireHeader.authorization]: `Bearer dhmp_${"a".repeat(43)}`,
          [WireHeader.jobId]: JOB_ID,
          "Content-Type": "application/json",
        },
        body: responsesBody,
      });
      expect({ code, status: response.status }).toEqual({ code, status: httpStatusOf(code) });
      expect(((await response.json()) as ErrorBody).error).toEqual({
        code,
        message: `failing with ${code}`,
      });
    }
  });
});

/**
 * The proxy forwards with the platform fetch unless given one, and the server answers its routes
 * with its Node handler ahead of the app (the app answers them where there is no handler): every
 * way must behave the same.
 */
const transports = [
  { transport: "the platform fetch, served by the app", options: {} },
  { transport: "an injected fetch, served by the app", options: { fetch: globalThis.fetch } },
  {
    transport: "the platform fetch, served by the proxy's Node handler",
    options: { direct: serverEdge(32 * 1024 * 1024) },
  },
];

describe.each(transports)("over $transport", ({ options: transportOptions }) => {
  const harness = (options: Parameters<typeof startHarness>[0] = {}) =>
    startedHarness({ ...transportOptions, ...options });

  describe("forwarding", () => {
    it("forwards a Responses request with the upstream key and streams back the events", async () => {
      const proxy = await harness();
      const token = await proxy.mint();
      const headers = proxy.agentHeaders(token);
      headers.set("x-client-request-id", "abc");
      const response = await fetch(`${proxy.baseUrl("codex")}/responses?trace=1`, {
        method: "POST",
        headers,
        body: responsesBody,
      });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/event-stream");
      const text = await response.text();
      expect(text).toBe(responsesStream("hello from responses", { input: 11, output: 7 }).join(""));

      const [sent] = proxy.upstream.requests;
      expect(sent?.method).toBe("POST");
      expect(sent?.url).toBe("/v1/responses?trace=1");
      expect(sent?.body).toBe(responsesBody);
      expect(sent?.headers[WireHeader.authorization.toLowerCase()]).toBe(`Bearer ${OPENAI_KEY}`);
      expect(sent?.headers["x-client-request-id"]).toBe("abc");
      expect(sent?.headers[WireHeader.jobId.toLowerCase()]).toBeUndefined();
      expect(JSON.stringify(sent)).not.toContain(token);

      const [entry] = await proxy.usage.waitFor(1);
      expect(entry).toMatchObject({
        jobId: JOB_ID,
        agentType: "codex",
        upstreamKind: "openai",
        endpoint: "responses",
        model: "gpt-5-codex",
        inputTokens: 11,
        outputTokens: 7,
        totalTokens: 18,
        requestBytes: Buffer.byteLength(responsesBody),
        responseBytes: Buffer.byteLength(text),
        status: 200,
        outcome: "completed",
      });
    });

    it("forwards Chat Completions and records the usage of its final chunk", async () => {
      const proxy = await harness();
      const token = await proxy.mint();
      const response = await fetch(`${proxy.baseUrl("codex")}/chat/completions`, {
        method: "POST",
        headers: proxy.agentHeaders(token),
        body: JSON.stringify({ model: "gpt-4o", stream: true, messages: [] }),
      });
      expect(await response.text()).toContain("data: [DONE]");
      const [entry] = await proxy.usage.waitFor(1);
      expect(entry).toMatchObject({
        endpoint: "chat_completions",
        inputTokens: 11,
        outputTokens: 7,
        totalTokens: 18,
      });
    });

    it("forwards Anthropic Messages with x-api-key, passing anthropic-version and the query through", async () => {
      const proxy = await harness();
      const token = await proxy.mint();
      const headers = proxy.agentHeaders(token, { anthropic: true });
      headers.set("anthropic-beta", "fine-grained-tool-streaming-2025-05-14");
      const response = await fetch(`${proxy.baseUrl("claude-code")}/v1/messages?beta=true`, {
        method: "POST",
        headers,
        body: JSON.stringify({ model: "claude-sonnet-4-5", stream: true, messages: [] }),
      });
      expect(response.status).toBe(200);
      expect(await response.text()).toContain("event: message_stop");
      const [sent] = proxy.upstream.requests;
      expect(sent?.url).toBe("/v1/messages?beta=true");
      expect(sent?.headers["x-api-key"]).toBe(ANTHROPIC_KEY);
      expect(sent?.headers["anthropic-version"]).toBe("2023-06-01");
      expect(sent?.headers["anthropic-beta"]).toBe("fine-grained-tool-streaming-2025-05-14");
      expect(sent?.headers[WireHeader.authorization.toLowerCase()]).toBeUndefined();
      const [entry] = await proxy.usage.waitFor(1);
      expect(entry).toMatchObject({
        endpoint: "messages",
        upstreamKind: "anthropic",
        model: "claude-sonnet-4-5",
        inputTokens: 11,
        outputTokens: 7,
        totalTokens: 18,
      });
    });

    it("forwards GET /models and counts bytes when the answer has no usage", async () => {
      const proxy = await harness();
      const token = await proxy.mint();
      const response = await fetch(`${proxy.baseUrl("codex")}/models`, {
        headers: proxy.agentHeaders(token),
      });
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(JSON.parse(text).data[0].id).toBe("gpt-5-codex");
      const [entry] = await proxy.usage.waitFor(1);
      expect(entry).toMatchObject({ endpoint: "models", responseBytes: Buffer.byteLength(text) });
      expect(entry?.inputTokens).toBeUndefined();
    });

    it("reads usage from a non-streaming JSON answer", async () => {
      const proxy = await harness();
      proxy.upstream.respondWith(() => ({
        headers: { "content-type": "application/json" },
        chunks: [
          JSON.stringify({
            id: "resp_2",
            model: "gpt-5",
            usage: { input_tokens: 5, output_tokens: 6, total_tokens: 11 },
          }),
        ],
      }));
      const token = await proxy.mint();
      await (
        await fetch(`${proxy.baseUrl("codex")}/responses`, {
          method: "POST",
          headers: proxy.agentHeaders(token),
          body: "{}",
        })
      ).text();
      const [entry] = await proxy.usage.waitFor(1);
      expect(entry).toMatchObject({
        model: "gpt-5",
        inputTokens: 5,
        outputTokens: 6,
        totalTokens: 11,
      });
    });

    it.each(["gzip", "br", "deflate"] as const)(
      "asks for compression and passes a %s-encoded stream on decoded, usage read",
      async (coding) => {
        const proxy = await harness();
        const stream = responsesStream("compressed hello", { input: 3, output: 4 }).join("");
        const encode = { gzip: gzipSync, br: brotliCompressSync, deflate: deflateSync }[coding];
        proxy.upstream.respondWith(() => ({
          headers: { "content-type": "text/event-stream", "content-encoding": coding },
          chunks: [encode(stream)],
        }));
        const token = await proxy.mint();
        const response = await fetch(`${proxy.baseUrl("codex")}/responses`, {
          method: "POST",
          headers: proxy.agentHeaders(token),
          body: responsesBody,
        });
        expect(response.headers.get("content-encoding")).toBeNull();
        expect(await response.text()).toBe(stream);
        expect(proxy.upstream.requests[0]?.headers["accept-encoding"]).toMatch(/gzip/);
        const [entry] = await proxy.usage.waitFor(1);
        expect(entry).toMatchObject({
          outcome: "completed",
          inputTokens: 3,
          outputTokens: 4,
          responseBytes: Buffer.byteLength(stream),
        });
      },
    );
  });

  describe("upstream failures and streaming", () => {
    it("keeps an upstream error's status and body", async () => {
      const proxy = await harness();
      const upstreamBody = JSON.stringify({
        error: { message: "overloaded", type: "server_error" },
      });
      proxy.upstream.respondWith(() => ({
        status: 503,
        headers: { "content-type": "application/json", "retry-after": "7" },
        chunks: [upstreamBody],
      }));
      const token = await proxy.mint();
      const response = await fetch(`${proxy.baseUrl("codex")}/responses`, {
        method: "POST",
        headers: proxy.agentHeaders(token),
        body: responsesBody,
      });
      expect(response.status).toBe(503);
      expect(response.headers.get("retry-after")).toBe("7");
      expect(await response.text()).toBe(upstreamBody);
      const [entry] = await proxy.usage.waitFor(1);
      expect(entry).toMatchObject({ status: 503, outcome: "completed" });
    });

    it("answers 502 upstream_unavailable when the upstream refuses connections", async () => {
      const proxy = await harness({ upstreamUrl: "http://127.0.0.1:1" });
      const token = await proxy.mint();
      const response = await fetch(`${proxy.baseUrl("codex")}/responses`, {
        method: "POST",
        headers: proxy.agentHeaders(token),
        body: responsesBody,
      });
      expect(response.status).toBe(502);
      expect(((await response.json()) as ErrorBody).error.code).toBe("upstream_unavailable");
      const [entry] = await proxy.usage.waitFor(1);
      expect(entry).toMatchObject({
        status: 502,
        outcome: "upstream_unavailable",
        responseBytes: 0,
      });
    });

    it("passes each event through as it arrives, before the upstream has finished", async () => {
      const proxy = await harness();
      proxy.upstream.respondWith(() => ({
        chunks: [sseEvent({ type: "response.created" }, "response.created")],
        ending: "hang",
      }));
      const token = await proxy.mint();
      const abort = new AbortController();
      const response = await fetch(`${proxy.baseUrl("codex")}/responses`, {
        method: "POST",
        headers: proxy.agentHeaders(token),
        body: responsesBody,
        signal: abort.signal,
      });
      const reader = response.body!.getReader();
      const first = await reader.read();
      expect(new TextDecoder().decode(first.value)).toContain("response.created");
      abort.abort();
    });

    it("aborts the upstream request when the agent disconnects mid-stream", async () => {
      const proxy = await harness();
      proxy.upstream.respondWith(() => ({
        chunks: [sseEvent({ type: "response.created" }, "response.created")],
        ending: "hang",
      }));
      const token = await proxy.mint();
      const abort = new AbortController();
      const response = await fetch(`${proxy.baseUrl("codex")}/responses`, {
        method: "POST",
        headers: proxy.agentHeaders(token),
        body: responsesBody,
        signal: abort.signal,
      });
      await response.body!.getReader().read();
      abort.abort();
      const closed = await proxy.upstream.nextEarlyClose();
      expect(closed.url).toBe("/v1/responses");
      const [entry] = await proxy.usage.waitFor(1);
      expect(entry).toMatchObject({ outcome: "client_aborted", status: 200 });
      expect(entry?.responseBytes).toBeGreaterThan(0);
    });

    it("records an upstream that breaks off mid-stream as upstream_aborted with the tokens seen", async () => {
      const proxy = await harness();
      proxy.upstream.respondWith(() => ({
        chunks: [
          sseEvent(
            {
              type: "message_start",
              message: { model: "claude", usage: { input_tokens: 9, output_tokens: 1 } },
            },
            "message_start",
          ),
        ],
        chunkDelayMs: 20,
        ending: "destroy",
      }));
      const token = await proxy.mint();
      const response = await fetch(`${proxy.baseUrl("claude-code")}/v1/messages`, {
        method: "POST",
        headers: proxy.agentHeaders(token, { anthropic: true }),
        body: "{}",
      });
      expect(response.status).toBe(200);
      await expect(response.text()).rejects.toThrow();
      const [entry] = await proxy.usage.waitFor(1);
      expect(entry).toMatchObject({ outcome: "upstream_aborted", inputTokens: 9, model: "claude" });
    });
  });
});
