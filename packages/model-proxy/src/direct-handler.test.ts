import { request as httpRequest } from "node:http";
import { NO_CONTENT_SECURITY_POLICY, type RequestLogEntry } from "@deckhand/http-kit";
import { responsesStream, sseEvent } from "@deckhand/testkit";
import { WireHeader, WirePath } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import {
  type Harness,
  JOB_ID,
  OPENAI_KEY,
  serverEdge,
  startHarness,
} from "../test/proxy-harness.ts";

const MAX_BODY_BYTES = 4096;
const responsesBody = JSON.stringify({ model: "gpt-5-codex", input: "hi", stream: true });

const harnesses: Harness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((started) => started.close()));
});

/** The proxy behind its Node handler with the server's edge: guard, limit, headers, log. */
async function direct(
  options: Parameters<typeof startHarness>[0] = {},
): Promise<Harness & { log: RequestLogEntry[] }> {
  const log: RequestLogEntry[] = [];
  const started = await startHarness({ direct: serverEdge(MAX_BODY_BYTES, log), ...options });
  harnesses.push(started);
  return Object.assign(started, { log });
}

/** A raw node:http request, so Host, chunked bodies and early hang-ups are ours to choose. */
function send(
  url: string,
  options: {
    method?: string;
    headers: Record<string, string>;
    chunks?: string[];
    /** The request target as sent, unnormalised. */
    rawPath?: string;
  },
): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  return new Promise((resolveAnswer, reject) => {
    const target = new URL(url);
    const outgoing = httpRequest({
      host: target.hostname,
      port: target.port,
      path: options.rawPath ?? `${target.pathname}${target.search}`,
      method: options.method ?? "POST",
      headers: options.headers,
    });
    outgoing.on("response", (incoming) => {
      let text = "";
      incoming.setEncoding("utf8");
      incoming.on("data", (chunk: string) => {
        text += chunk;
      });
      incoming.on("end", () =>
        resolveAnswer({ status: incoming.statusCode ?? 0, headers: incoming.headers, text }),
      );
      incoming.on("error", reject);
    });
    outgoing.on("error", reject);
    for (const chunk of options.chunks ?? []) outgoing.write(chunk);
    outgoing.end();
  });
}

function headersOf(proxy: Harness, token: string): Record<string, string> {
  return Object.fromEntries(proxy.agentHeaders(token));
}

describe("the proxy's Node handler ahead of the app", () => {
  it("streams an answer to the socket itself, with the app's security headers and log line", async () => {
    const proxy = await direct();
    const token = await proxy.mint();
    const response = await fetch(`${proxy.baseUrl("codex")}/responses?trace=1`, {
      method: "POST",
      headers: proxy.agentHeaders(token),
      body: responsesBody,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    expect(response.headers.get("content-security-policy")).toBe(NO_CONTENT_SECURITY_POLICY);
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    const text = await response.text();
    expect(text).toBe(responsesStream("hello from responses", { input: 11, output: 7 }).join(""));
    expect(proxy.appRequests()).toBe(0);

    const [sent] = proxy.upstream.requests;
    expect(sent?.url).toBe("/v1/responses?trace=1");
    expect(sent?.body).toBe(responsesBody);
    expect(sent?.headers[WireHeader.authorization.toLowerCase()]).toBe(`Bearer ${OPENAI_KEY}`);
    expect(sent?.headers[WireHeader.jobId.toLowerCase()]).toBeUndefined();
    expect(JSON.stringify(sent)).not.toContain(token);

    const [entry] = await proxy.usage.waitFor(1);
    expect(entry).toMatchObject({
      jobId: JOB_ID,
      totalTokens: 18,
      responseBytes: Buffer.byteLength(text),
      status: 200,
      outcome: "completed",
    });
    expect(proxy.log).toEqual([
      {
        method: "POST",
        path: `${WirePath.modelProvider}/codex/responses`,
        status: 200,
        duration_ms: expect.any(Number),
      },
    ]);
    const logged = JSON.stringify([proxy.log, proxy.logger.lines]);
    expect(logged).not.toContain(token);
    expect(logged).not.toContain(OPENAI_KEY);
  });

  it("passes a long stream through whole, its usage read at the end", async () => {
    const proxy = await direct();
    const delta = sseEvent({ type: "response.output_text.delta", delta: "x".repeat(4000) });
    const stream = responsesStream("end", { input: 3, output: 4 });
    const chunks = [stream[0]!, ...Array.from({ length: 600 }, () => delta), ...stream.slice(1)];
    proxy.upstream.respondWith(() => ({
      headers: { "content-type": "text/event-stream" },
      chunks,
    }));
    const token = await proxy.mint();
    const answer = await send(`${proxy.baseUrl("codex")}/responses`, {
      headers: headersOf(proxy, token),
      chunks: [responsesBody],
    });
    expect(answer.text).toBe(chunks.join(""));
    const [entry] = await proxy.usage.waitFor(1);
    expect(entry).toMatchObject({ totalTokens: 7, outcome: "completed" });
  });

  it("refuses a Host that is not the server's with 403, before reading anything", async () => {
    const proxy = await direct();
    const token = await proxy.mint();
    const answer = await send(`${proxy.baseUrl("codex")}/responses`, {
      headers: { ...headersOf(proxy, token), host: "rebound.example:1234" },
      chunks: [responsesBody],
    });
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.text).error.code).toBe("host_not_allowed");
    expect(answer.headers["x-content-type-options"]).toBe("nosniff");
    expect(proxy.upstream.requests).toHaveLength(0);
    expect(proxy.log).toMatchObject([{ status: 403 }]);
    expect(proxy.appRequests()).toBe(0);
  });

  it("refuses another site's browser request with 403", async () => {
    const proxy = await direct();
    const token = await proxy.mint();
    const answer = await send(`${proxy.baseUrl("codex")}/responses`, {
      headers: { ...headersOf(proxy, token), origin: "https://evil.example" },
      chunks: [responsesBody],
    });
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.text).error.code).toBe("origin_not_allowed");
    expect(proxy.upstream.requests).toHaveLength(0);
  });

  it("refuses a body over the limit with 413, by its length or as it streams, and closes", async () => {
    const proxy = await direct();
    const token = await proxy.mint();
    const big = JSON.stringify({ input: "y".repeat(MAX_BODY_BYTES) });
    const declared = await send(`${proxy.baseUrl("codex")}/responses`, {
      headers: headersOf(proxy, token),
      chunks: [big],
    });
    expect(declared.status).toBe(413);
    expect(JSON.parse(declared.text).error).toMatchObject({
      code: "body_too_large",
      message: expect.stringContaining("the proxy's limit"),
    });
    expect(declared.headers.connection).toBe("close");

    const streamed = await send(`${proxy.baseUrl("codex")}/responses`, {
      headers: { ...headersOf(proxy, token), "transfer-encoding": "chunked" },
      chunks: [big.slice(0, 3000), big.slice(3000)],
    });
    expect(streamed.status).toBe(413);
    expect(JSON.parse(streamed.text).error.code).toBe("body_too_large");
    expect(proxy.upstream.requests).toHaveLength(0);
  });

  it("answers 401 to a bad token without echoing it to the agent or the log", async () => {
    const proxy = await direct();
    const forged = "dhm_forged-token-0123456789abcdef";
    const answer = await send(`${proxy.baseUrl("codex")}/responses`, {
      headers: {
        "content-type": "application/json",
        [WireHeader.authorization]: `Bearer ${forged}`,
        [WireHeader.jobId]: JOB_ID,
      },
      chunks: [responsesBody],
    });
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.text).error.code).toBe("unauthorized");
    expect(answer.text).not.toContain(forged);
    expect(JSON.stringify(proxy.logger.lines)).not.toContain(forged);
    expect(proxy.upstream.requests).toHaveLength(0);
  });

  it("replaces the token and the job id in the body it forwards", async () => {
    const proxy = await direct();
    // Long enough to count as a secret (shorter values are too common to replace).
    const jobId = "job-direct-0123456789";
    const token = await proxy.mint({ jobId });
    const answer = await send(`${proxy.baseUrl("codex")}/responses`, {
      headers: Object.fromEntries(proxy.agentHeaders(token, { jobId })),
      chunks: [JSON.stringify({ input: `env: TOKEN=${token} JOB=${jobId} KEY=${OPENAI_KEY}` })],
    });
    expect(answer.status).toBe(200);
    const [sent] = proxy.upstream.requests;
    expect(sent?.body).not.toContain(token);
    expect(sent?.body).not.toContain(jobId);
    expect(sent?.body).not.toContain(OPENAI_KEY);
    expect(sent?.body).toContain("[REDACTED]");
  });

  it("answers 502 upstream_unavailable when the upstream cannot be reached", async () => {
    const proxy = await direct({ upstreamUrl: "http://127.0.0.1:1" });
    const token = await proxy.mint();
    const answer = await send(`${proxy.baseUrl("codex")}/responses`, {
      headers: headersOf(proxy, token),
      chunks: [responsesBody],
    });
    expect(answer.status).toBe(502);
    expect(JSON.parse(answer.text).error.code).toBe("upstream_unavailable");
    expect(answer.headers["x-content-type-options"]).toBe("nosniff");
    expect(proxy.log).toMatchObject([{ status: 502 }]);
  });

  it("leaves to the app the paths it does not take, which answer as before", async () => {
    const proxy = await direct();
    const token = await proxy.mint();
    const bare = await send(proxy.baseUrl("codex"), {
      headers: headersOf(proxy, token),
      chunks: [responsesBody],
    });
    expect(bare.status).toBe(404);
    const dotted = await send(proxy.baseUrl("codex"), {
      rawPath: `${WirePath.modelProvider}/codex/../codex/responses`,
      headers: headersOf(proxy, token),
      chunks: [responsesBody],
    });
    expect(dotted.status).toBe(200);
    expect(proxy.appRequests()).toBe(2);
  });
});
