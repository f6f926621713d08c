// The Gemini kind: Google's Generative Language API as the Gemini CLI (@google/genai) speaks it,
// `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` with the key in `x-goog-api-key`
// (or the `key` query parameter), forwarded with the upstream's key and its usage recorded.
import { turn } from "@deckhand/testkit";
import { WireHeader } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import { GEMINI_KEY, type Harness, JOB_ID, startHarness } from "../test/proxy-harness.ts";

const harnesses: Harness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((started) => started.close()));
});
async function harness(): Promise<Harness> {
  const started = await startHarness();
  harnesses.push(started);
  return started;
}

const MODEL = "gemini-2.5-pro";
const body = JSON.stringify({
  contents: [{ role: "user", parts: [{ text: "Write a greeting" }] }],
  generationConfig: { temperature: 0 },
});

/** The headers @google/genai sends with an API key, plus the job id the Gemini CLI adds. */
function geminiHeaders(token: string): Headers {
  return new Headers({
    "content-type": "application/json",
    "x-goog-api-key": token,
    "x-goog-api-client": "google-genai-sdk/1.30.0 gl-node/v22",
    [WireHeader.jobId]: JOB_ID,
  });
}

describe("a gemini upstream", () => {
  it("streams streamGenerateContent with the upstream key in x-goog-api-key and records its usage", async () => {
    const proxy = await harness();
    const token = await proxy.mint();
    proxy.upstream.script([
      turn.text("Hello there.", { usage: { input: 40, output: 12, cachedInput: 8, reasoning: 2 } }),
    ]);
    const response = await fetch(
      `${proxy.baseUrl("gemini")}/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`,
      { method: "POST", headers: geminiHeaders(token), body },
    );
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain('"finishReason":"STOP"');
    expect(text).toContain('"text":" there."');

    const [request] = proxy.upstream.requests;
    expect(request!.url).toBe(`/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`);
    expect(request!.headers["x-goog-api-key"]).toBe(GEMINI_KEY);
    expect(request!.headers["x-goog-api-client"]).toBe("google-genai-sdk/1.30.0 gl-node/v22");
    expect(request!.headers.authorization).toBeUndefined();
    expect(JSON.stringify(request!.headers)).not.toContain(token);
    expect(JSON.stringify(request!.headers)).not.toContain(JOB_ID);

    const [entry] = await proxy.usage.waitFor(1);
    expect(entry).toMatchObject({
      jobId: JOB_ID,
      agentType: "gemini",
      upstreamKind: "gemini",
      endpoint: "stream_generate_content",
      model: MODEL,
      inputTokens: 40,
      outputTokens: 12,
      totalTokens: 52,
      status: 200,
      outcome: "completed",
    });
  });

  it("takes the token from the key query parameter and never forwards it", async () => {
    const proxy = await harness();
    const token = await proxy.mint();
    proxy.upstream.script([turn.text("Hi.", { usage: { input: 5, output: 3 } })]);
    const headers = geminiHeaders(token);
    headers.delete("x-goog-api-key");
    const response = await fetch(
      `${proxy.baseUrl("gemini")}/v1beta/models/${MODEL}:generateContent?key=${token}`,
      { method: "POST", headers, body },
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      candidates: [{ content: { parts: [{ text: "Hi." }] }, finishReason: "STOP" }],
    });
    const [request] = proxy.upstream.requests;
    expect(request!.url).toBe(`/v1beta/models/${MODEL}:generateContent`);
    expect(request!.headers["x-goog-api-key"]).toBe(GEMINI_KEY);
    const [entry] = await proxy.usage.waitFor(1);
    expect(entry).toMatchObject({
      endpoint: "generate_content",
      inputTokens: 5,
      outputTokens: 3,
      totalTokens: 8,
    });
  });

  it("refuses a key parameter and a header naming two different tokens", async () => {
    const proxy = await harness();
    const token = await proxy.mint();
    const other = await proxy.mint();
    const response = await fetch(
      `${proxy.baseUrl("gemini")}/v1beta/models/${MODEL}:generateContent?key=${other}`,
      { method: "POST", headers: geminiHeaders(token), body },
    );
    expect(response.status).toBe(401);
    expect(proxy.upstream.requests).toHaveLength(0);
  });

  it("forwards only the generateContent family and the model list, naming them otherwise", async () => {
    const proxy = await harness();
    const token = await proxy.mint();
    const models = await fetch(`${proxy.baseUrl("gemini")}/v1beta/models`, {
      headers: geminiHeaders(token),
    });
    expect(models.status).toBe(200);
    await models.arrayBuffer();
    expect(proxy.upstream.requests.map((request) => request.path)).toEqual(["/v1beta/models"]);
    const refused = await fetch(`${proxy.baseUrl("gemini")}/v1beta/cachedContents`, {
      method: "POST",
      headers: geminiHeaders(token),
      body,
    });
    expect(refused.status).toBe(404);
    const message = ((await refused.json()) as { error: { message: string } }).error.message;
    expect(message).toContain("POST /v1beta/models/<model>:streamGenerateContent");
    expect(proxy.upstream.requests).toHaveLength(1);
  });
});
