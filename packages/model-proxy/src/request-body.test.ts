// An agent that printed its environment sends the output back to the model with its next
// request. The proxy replaces every secret it knows in the body before forwarding it, so the
// fake upstream, which records what it received, must see none of them.
import { gzipSync } from "node:zlib";
import { REDACTED, rememberSecrets } from "@deckhand/secrets";
import { WireEnv } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import { type Harness, OPENAI_KEY, startHarness } from "../test/proxy-harness.ts";
import { MAX_DECODED_BODY_BYTES } from "./request-body.ts";

/** A job id as batch runs mint them; long and namespaced, so it never occurs by chance. */
const JOB = "batch-workspace:6f1c2a9e-3d4b-4c1a-9e7f-0a2b3c4d5e6f";
/** The workspace agent's token, as the server remembers it. */
const AGENT_TOKEN = "wsa-Qm9vYmFyLXdvcmtzcGFjZS1hZ2VudC10b2tlbg";
/** A remembered secret with characters JSON escapes: a code host URL's password, say. */
const QUOTED_PASSWORD = 'pa"ss\\word-ä-7e3f';

const harnesses: Harness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((harness) => harness.close()));
});

async function proxyWithToken(): Promise<{ proxy: Harness; token: string }> {
  const proxy = await startHarness();
  harnesses.push(proxy);
  rememberSecrets([AGENT_TOKEN, QUOTED_PASSWORD]);
  return { proxy, token: await proxy.mint({ jobId: JOB }) };
}

/** What `env` printed in the agent's shell. */
function environmentDump(token: string): string {
  return [
    "PATH=/usr/bin:/bin",
    `${WireEnv.modelProviderToken}=${token}`,
    `${WireEnv.jobId}=${JOB}`,
    `${WireEnv.modelProviderUrl}=http://127.0.0.1:1/model-provider/codex`,
    `DECKHAND_AGENT_TOKEN=${AGENT_TOKEN}`,
    `GIT_PASSWORD=${QUOTED_PASSWORD}`,
    `LEAKED_UPSTREAM_KEY=${OPENAI_KEY}`,
  ].join("\n");
}

/** A Responses request whose conversation holds the dump: as tool output and in call arguments. */
function responsesRequest(token: string): Record<string, unknown> {
  return {
    model: "gpt-5-codex",
    stream: true,
    input: [
      { type: "message", role: "user", content: [{ type: "input_text", text: "print env" }] },
      {
        type: "function_call",
        call_id: "call_1",
        name: "shell",
        arguments: JSON.stringify({ command: ["sh", "-c", `curl -H 'x: ${token}' ${JOB}`] }),
      },
      { type: "function_call_output", call_id: "call_1", output: environmentDump(token) },
    ],
  };
}

/** Which secrets `text` still holds, in any spelling a JSON body gives them. */
function hunt(text: string, token: string): string[] {
  const once = JSON.stringify(QUOTED_PASSWORD).slice(1, -1);
  const twice = JSON.stringify(once).slice(1, -1);
  const found: Record<string, boolean> = {
    token: text.includes(token.slice(-43)),
    jobId: text.includes(JOB),
    agentToken: text.includes(AGENT_TOKEN),
    password: [QUOTED_PASSWORD, once, twice].some((spelling) => text.includes(spelling)),
    upstreamKey: text.includes(OPENAI_KEY),
  };
  return Object.keys(found).filter((name) => found[name]);
}

describe("secrets in request bodies", () => {
  it("forwards an environment dump with the token, job id and every known secret replaced", async () => {
    const { proxy, token } = await proxyWithToken();
    const request = responsesRequest(token);
    const response = await fetch(`${proxy.baseUrl("codex")}/responses`, {
      method: "POST",
      headers: proxy.agentHeaders(token, { jobId: JOB }),
      body: JSON.stringify(request),
    });
    expect(response.status).toBe(200);
    await response.text();
    const [sent] = proxy.upstream.requests;
    expect(hunt(sent!.body, token)).toEqual([]);
    // Still the agent's JSON, with the marker where each secret was.
    const input = (sent!.json as { input: { output?: string; arguments?: string }[] }).input;
    expect(input[2]!.output).toBe(
      [
        "PATH=/usr/bin:/bin",
        `${WireEnv.modelProviderToken}=${REDACTED}`,
        `${WireEnv.jobId}=${REDACTED}`,
        `${WireEnv.modelProviderUrl}=http://127.0.0.1:1/model-provider/codex`,
        `DECKHAND_AGENT_TOKEN=${REDACTED}`,
        `GIT_PASSWORD=${REDACTED}`,
        `LEAKED_UPSTREAM_KEY=${REDACTED}`,
      ].join("\n"),
    );
    expect(JSON.parse(input[1]!.arguments!)).toEqual({
      command: ["sh", "-c", `curl -H 'x: ${REDACTED}' ${REDACTED}`],
    });
    // The operator learns that it happened, and nothing of what was replaced.
    const warned = proxy.logger.lines.find((line) => line.message.includes("secrets replaced"));
    expect(warned?.fields).toMatchObject({ agentType: "codex", redactions: 7 });
    expect(hunt(JSON.stringify(proxy.logger.lines.map((line) => line.message)), token)).toEqual([]);
    const [entry] = await proxy.usage.waitFor(1);
    expect(entry?.requestBytes).toBe(Buffer.byteLength(JSON.stringify(request)));
  });

  it("replaces them in an Anthropic request too, keeping a body without secrets byte for byte", async () => {
    const { proxy, token } = await proxyWithToken();
    const clean = JSON.stringify({ model: "claude-sonnet-4-5", stream: true, messages: [] });
    const dirty = JSON.stringify({
      model: "claude-sonnet-4-5",
      stream: true,
      messages: [
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "t1", content: environmentDump(token) }],
        },
      ],
    });
    for (const body of [clean, dirty]) {
      const response = await fetch(`${proxy.baseUrl("claude-code")}/v1/messages`, {
        method: "POST",
        headers: proxy.agentHeaders(token, { jobId: JOB, anthropic: true }),
        body,
      });
      expect(response.status).toBe(200);
      await response.text();
    }
    const [first, second] = proxy.upstream.requests;
    expect(first!.body).toBe(clean);
    expect(hunt(second!.body, token)).toEqual([]);
    expect(second!.json).toMatchObject({ messages: [{ role: "user" }] });
  });

  it("decodes a compressed body to search it, and forwards it uncompressed", async () => {
    const { proxy, token } = await proxyWithToken();
    const headers = proxy.agentHeaders(token, { jobId: JOB });
    headers.set("content-encoding", "gzip");
    const response = await fetch(`${proxy.baseUrl("codex")}/responses`, {
      method: "POST",
      headers,
      body: gzipSync(JSON.stringify(responsesRequest(token))),
    });
    expect(response.status).toBe(200);
    await response.text();
    const [sent] = proxy.upstream.requests;
    expect(sent!.headers["content-encoding"]).toBeUndefined();
    expect(sent!.json).toMatchObject({ model: "gpt-5-codex" });
    expect(hunt(sent!.body, token)).toEqual([]);
  });

  it("refuses a body it cannot read or that decodes past the bound, forwarding nothing", async () => {
    const { proxy, token } = await proxyWithToken();
    const send = async (encoding: string, body: Uint8Array | string) => {
      const headers = proxy.agentHeaders(token, { jobId: JOB });
      headers.set("content-encoding", encoding);
      const response = await fetch(`${proxy.baseUrl("codex")}/responses`, {
        method: "POST",
        headers,
        body,
      });
      return { status: response.status, body: (await response.json()) as { error: unknown } };
    };
    expect(await send("compress", "{}")).toMatchObject({
      status: 400,
      body: { error: { code: "invalid_request" } },
    });
    expect(await send("gzip", "not gzip at all")).toMatchObject({
      status: 400,
      body: { error: { code: "invalid_request" } },
    });
    const bomb = gzipSync(Buffer.alloc(MAX_DECODED_BODY_BYTES + 1));
    expect(await send("gzip", bomb)).toMatchObject({
      status: 413,
      body: { error: { code: "body_too_large" } },
    });
    expect(proxy.upstream.requests).toHaveLength(0);
  });
});
