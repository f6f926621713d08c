import { type FakeModel, item, sseEvent, startFakeModel, turn } from "@deckhand/testkit";
import { WireHeader } from "@deckhand/wire";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ModelClientError } from "./model-client-error.ts";
import type { ModelStreamEvent } from "./responses-events.ts";
import { type StreamResponseOptions, streamResponse } from "./stream-response.ts";

const TOKEN = "dmt_secret-token-0123456789";
let fake: FakeModel;
beforeEach(async () => {
  fake = await startFakeModel();
});
afterEach(async () => {
  await fake.close();
});

function options(overrides: Partial<StreamResponseOptions> = {}): StreamResponseOptions {
  return {
    baseUrl: `${fake.url}/v1`,
    token: TOKEN,
    jobId: "job-7",
    model: "gpt-5-codex",
    instructions: "Be brief.",
    input: [{ type: "message", role: "user", content: "hi" }],
    ...overrides,
  };
}

async function collect(stream: AsyncIterable<ModelStreamEvent>): Promise<ModelStreamEvent[]> {
  const events: ModelStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

async function failureOf(promise: Promise<unknown>): Promise<ModelClientError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ModelClientError);
    return error as ModelClientError;
  }
  throw new Error("expected a failure");
}

describe("streamResponse", () => {
  it("streams text and usage, sending token, job id and the request the proxy expects", async () => {
    fake.script([
      turn.text("Hello there world", { usage: { input: 40, output: 3, cachedInput: 32 } }),
    ]);
    const events = await collect(
      streamResponse(
        options({
          tools: [{ type: "function", name: "execute", description: "Run", parameters: {} }],
        }),
      ),
    );
    expect(events[0]).toEqual({ type: "created", response_id: expect.any(String) });
    const deltas = events.filter((event) => event.type === "text_delta");
    expect(deltas.map((event) => event.delta).join("")).toBe("Hello there world");
    expect(deltas.length).toBeGreaterThan(1);
    expect(events.find((event) => event.type === "message")).toMatchObject({
      text: "Hello there world",
      item: { type: "message", role: "assistant" },
    });
    expect(events.at(-1)).toEqual({
      type: "completed",
      response_id: expect.any(String),
      usage: {
        input_tokens: 40,
        cached_input_tokens: 32,
        output_tokens: 3,
        reasoning_output_tokens: 0,
        total_tokens: 43,
      },
    });

    const [sent] = fake.requests;
    expect(sent?.path).toBe("/v1/responses");
    expect(sent?.headers[WireHeader.authorization.toLowerCase()]).toBe(`Bearer ${TOKEN}`);
    expect(sent?.headers[WireHeader.jobId.toLowerCase()]).toBe("job-7");
    expect(sent?.json).toMatchObject({
      model: "gpt-5-codex",
      instructions: "Be brief.",
      input: [{ type: "message", role: "user", content: "hi" }],
      tools: [{ type: "function", name: "execute" }],
      stream: true,
      store: false,
    });
  });

  it("streams reasoning deltas and the finished reasoning item", async () => {
    fake.script([turn.reasoning("First think hard.", "Done.")]);
    const events = await collect(streamResponse(options()));
    const reasoning = events.filter((event) => event.type === "reasoning_delta");
    expect(reasoning.map((event) => event.delta).join("")).toBe("First think hard.");
    expect(events.find((event) => event.type === "reasoning")).toMatchObject({
      summary: ["First think hard."],
      item: { type: "reasoning", encrypted_content: expect.any(String) },
    });
    expect(events.find((event) => event.type === "message")).toMatchObject({ text: "Done." });
  });

  it("reports a function call and a custom tool call once each is complete", async () => {
    fake.script([
      turn.of([
        item.functionCall("execute", { command: "ls -la", timeout: 5 }, "call_x"),
        item.customToolCall("apply_patch", "*** Begin Patch\n*** End Patch", "call_y"),
      ]),
    ]);
    const events = await collect(streamResponse(options()));
    expect(events.filter((event) => event.type === "function_call")).toEqual([
      {
        type: "function_call",
        item_id: expect.any(String),
        call_id: "call_x",
        name: "execute",
        arguments: JSON.stringify({ command: "ls -la", timeout: 5 }),
        item: expect.objectContaining({ type: "function_call", call_id: "call_x" }),
      },
    ]);
    expect(events.find((event) => event.type === "custom_tool_call")).toMatchObject({
      call_id: "call_y",
      name: "apply_patch",
      input: "*** Begin Patch\n*** End Patch",
    });
  });

  it("yields response.failed as a failed event, retryable unless the code says otherwise", async () => {
    fake.script([
      turn.failed({ code: "rate_limit_exceeded", message: "Please try again in 1.5s." }),
      turn.failed({ code: "context_length_exceeded", message: "too long" }),
    ]);
    expect((await collect(streamResponse(options()))).at(-1)).toMatchObject({
      type: "failed",
      code: "rate_limit_exceeded",
      retryable: true,
      retry_after_ms: 1500,
    });
    expect((await collect(streamResponse(options()))).at(-1)).toMatchObject({
      type: "failed",
      code: "context_length_exceeded",
      retryable: false,
    });
  });

  it("throws on an HTTP error, with the status and without the token", async () => {
    fake.script([
      turn.fail({ status: 401, message: `token ${TOKEN} is not valid` }),
      turn.fail({ status: 503, retryAfter: 3 }),
    ]);
    const refused = await failureOf(collect(streamResponse(options())));
    expect(refused).toMatchObject({ kind: "http_status", status: 401, retryable: false });
    expect(refused.message).toContain("HTTP 401");
    expect(refused.message).not.toContain(TOKEN);
    const unavailable = await failureOf(collect(streamResponse(options())));
    expect(unavailable).toMatchObject({ status: 503, retryable: true, retryAfterMs: 3000 });
  });

  it("throws a retryable connection error when the stream drops, and when it just ends", async () => {
    fake.script([turn.drop([item.text("partial")])]);
    const seen: ModelStreamEvent[] = [];
    const dropped = await failureOf(
      (async () => {
        for await (const event of streamResponse(options())) seen.push(event);
      })(),
    );
    expect(dropped).toMatchObject({ kind: "connection", retryable: true });
    expect(seen.some((event) => event.type === "message")).toBe(true);

    fake.respondWith(() => ({
      chunks: [sseEvent({ type: "response.created", response: { id: "r" } }, "response.created")],
    }));
    const ended = await failureOf(collect(streamResponse(options())));
    expect(ended).toMatchObject({ kind: "stream_incomplete", retryable: true });
  });

  it("ignores event types it does not know and rejects malformed JSON clearly", async () => {
    fake.respondWith(() => ({
      chunks: [
        sseEvent({ type: "response.brand_new_thing", whatever: 1 }, "response.brand_new_thing"),
        sseEvent({ type: "response.created", response: { id: "r1" } }, "response.created"),
        "event: response.output_text.delta\ndata: {not json\n\n",
      ],
    }));
    const seen: ModelStreamEvent[] = [];
    const malformed = await failureOf(
      (async () => {
        for await (const event of streamResponse(options())) seen.push(event);
      })(),
    );
    expect(seen).toEqual([{ type: "created", response_id: "r1" }]);
    expect(malformed).toMatchObject({ kind: "protocol", retryable: false });
    expect(malformed.message).toContain("malformed JSON");

    fake.respondWith(() => ({
      chunks: [sseEvent({ type: "response.output_text.delta", delta: 5 })],
    }));
    const misshapen = await failureOf(collect(streamResponse(options())));
    expect(misshapen.message).toMatch(/response\.output_text\.delta.*item_id/);
  });

  it("stops at once when aborted mid-stream, closing the connection", async () => {
    fake.script([turn.hang([item.text("still going")])]);
    const controller = new AbortController();
    const seen: ModelStreamEvent[] = [];
    const started = Date.now();
    const aborted = await failureOf(
      (async () => {
        for await (const event of streamResponse(options({ signal: controller.signal }))) {
          seen.push(event);
          if (event.type === "message") setTimeout(() => controller.abort(), 10);
        }
      })(),
    );
    expect(aborted).toMatchObject({ kind: "aborted", code: "aborted", retryable: false });
    // The stream never ends by itself; the bound only has to be short of the test's deadline.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect((await fake.nextEarlyClose()).path).toBe("/v1/responses");
  });

  it("treats a silent stream as dropped after the idle timeout", async () => {
    fake.script([turn.hang()]);
    const idle = await failureOf(collect(streamResponse(options({ idleTimeoutMs: 50 }))));
    expect(idle).toMatchObject({ kind: "idle_timeout", retryable: true });
  });
});
