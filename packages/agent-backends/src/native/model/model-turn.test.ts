import { type FakeModel, item, startFakeModel, turn } from "@deckhand/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ModelClientError } from "./model-client-error.ts";
import {
  backoffDelay,
  collectModelTurn,
  DEFAULT_RETRY_POLICY,
  type ModelRetryEvent,
  type ModelTurnEvent,
  type ModelTurnOptions,
  runModelTurnWithRetry,
} from "./model-turn.ts";

let fake: FakeModel;
beforeEach(async () => {
  fake = await startFakeModel();
});
afterEach(async () => {
  await fake.close();
});

function options(overrides: Partial<ModelTurnOptions> = {}): ModelTurnOptions {
  return {
    baseUrl: `${fake.url}/v1`,
    token: "dmt_token",
    jobId: "job-1",
    model: "gpt-5-codex",
    input: "hi",
    retry: { baseDelayMs: 1, maxDelayMs: 20, jitter: 0 },
    ...overrides,
  };
}

async function collect(turnOptions: ModelTurnOptions): Promise<ModelTurnEvent[]> {
  const events: ModelTurnEvent[] = [];
  for await (const event of runModelTurnWithRetry(turnOptions)) events.push(event);
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

const retries = (events: ModelTurnEvent[]) =>
  events.filter((event): event is ModelRetryEvent => event.type === "retry");

describe("runModelTurnWithRetry", () => {
  it("restarts after a mid-stream drop and marks what the dropped attempt streamed", async () => {
    fake.script([turn.drop([item.text("half an")]), turn.text("the whole answer")]);
    const reported: ModelRetryEvent[] = [];
    const events = await collect(options({ onRetry: (event) => reported.push(event) }));
    const retryAt = events.findIndex((event) => event.type === "retry");
    const before = events.slice(0, retryAt);
    expect(before.map((event) => event.type)).toEqual([
      "created",
      "text_delta",
      "text_delta",
      "message",
    ]);
    expect(events[retryAt]).toEqual({
      type: "retry",
      attempt: 1,
      max_retries: DEFAULT_RETRY_POLICY.maxAttempts - 1,
      delay_ms: 1,
      reason: expect.stringContaining("connection"),
      kind: "connection",
      status: undefined,
      discarded_events: before.length,
    });
    expect(reported).toEqual([events[retryAt]]);
    expect(events.at(-1)?.type).toBe("completed");
    expect(fake.requests).toHaveLength(2);
    // A retry is the same request again, from scratch.
    expect(fake.requests[1]?.body).toBe(fake.requests[0]?.body);
  });

  it("retries after a 500 and a retryable response.failed, then gathers the turn", async () => {
    fake.script([
      turn.fail({ status: 500 }),
      turn.failed({ code: "server_error" }, [item.text("lost")]),
      turn.of([item.text("Listing."), item.functionCall("execute", { command: "ls" }, "c1")], {
        usage: { input: 5, output: 2 },
      }),
    ]);
    const seen: ModelTurnEvent[] = [];
    const result = await collectModelTurn(options(), (event) => seen.push(event));
    expect(retries(seen).map((event) => [event.kind, event.status, event.delay_ms])).toEqual([
      ["http_status", 500, 1],
      ["response_failed", undefined, 2],
    ]);
    expect(result).toMatchObject({
      text: "Listing.",
      function_calls: [{ call_id: "c1", name: "execute", arguments: '{"command":"ls"}' }],
      custom_tool_calls: [],
      usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 },
      retries: 2,
    });
    expect(result.output.map((output) => output.type)).toEqual(["message", "function_call"]);
  });

  it("waits as long as Retry-After (or retry-after-ms, or the failure text) asks", async () => {
    fake.script([
      turn.fail({ status: 429, headers: { "retry-after-ms": "150" } }),
      turn.failed({ code: "rate_limit_exceeded", message: "Please try again in 80ms." }),
      turn.text("ok"),
    ]);
    const started = Date.now();
    const events = await collect(options());
    expect(Date.now() - started).toBeGreaterThanOrEqual(220);
    expect(retries(events).map((event) => event.delay_ms)).toEqual([150, 80]);
    expect(events.at(-1)?.type).toBe("completed");
  });

  it("gives up on a wait longer than allowed, and does not retry what cannot succeed", async () => {
    fake.script([turn.fail({ status: 429, retryAfter: 120 })]);
    const tooLong = await failureOf(collect(options()));
    expect(tooLong).toMatchObject({ kind: "http_status", retryable: false, retryAfterMs: 120_000 });

    fake.script([turn.fail({ status: 400 }), turn.text("never")]);
    expect(await failureOf(collect(options()))).toMatchObject({ status: 400 });
    fake.script([turn.failed({ code: "context_length_exceeded" }), turn.text("never")]);
    expect(await failureOf(collect(options()))).toMatchObject({
      kind: "response_failed",
      providerCode: "context_length_exceeded",
    });
    expect(fake.requests).toHaveLength(3);
  });

  it("throws the last error once the attempts are used up", async () => {
    fake.script([
      turn.fail({ status: 502 }),
      turn.fail({ status: 502 }),
      turn.fail({ status: 503 }),
    ]);
    const seen: ModelTurnEvent[] = [];
    const error = await failureOf(
      (async () => {
        for await (const event of runModelTurnWithRetry(
          options({ retry: { maxAttempts: 3, baseDelayMs: 1, jitter: 0 } }),
        )) {
          seen.push(event);
        }
      })(),
    );
    expect(error).toMatchObject({ status: 503 });
    expect(retries(seen).map((event) => event.attempt)).toEqual([1, 2]);
  });

  it("stops at once when aborted during the wait before a retry", async () => {
    fake.script([turn.fail({ status: 500 }), turn.text("too late")]);
    const controller = new AbortController();
    const started = Date.now();
    const error = await failureOf(
      (async () => {
        for await (const event of runModelTurnWithRetry(
          options({ signal: controller.signal, retry: { baseDelayMs: 60_000, jitter: 0 } }),
        )) {
          if (event.type === "retry") setTimeout(() => controller.abort(), 10);
        }
      })(),
    );
    expect(error.kind).toBe("aborted");
    // Well short of the 60 s wait before the retry, however busy the machine.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(fake.requests).toHaveLength(1);
  });
});

describe("backoffDelay", () => {
  it("doubles from the base, stays under the cap, and spreads by the jitter", () => {
    const policy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxDelayMs: 1_000, jitter: 0 };
    expect([1, 2, 3, 4, 5].map((retry) => backoffDelay(retry, policy))).toEqual([
      100, 200, 400, 800, 1_000,
    ]);
    const jittered = { ...policy, jitter: 0.5 };
    expect(backoffDelay(2, jittered, () => 0)).toBe(150);
    expect(backoffDelay(2, jittered, () => 1)).toBe(250);
  });
});
