import { describe, expect, it } from "vitest";
import { CodeHostError } from "./code-host-error.ts";
import {
  type Clock,
  RequestPolicy,
  type RequestPolicyOptions,
  type RequestWaitEvent,
  rateLimitResetAt,
} from "./request-policy.ts";

/** A clock whose sleeps return at once and move its time on, recording each wait. */
function virtualClock(start = 1_700_000_000_000) {
  let now = start;
  const sleeps: number[] = [];
  const clock: Clock = {
    now: () => now,
    sleep: async (ms) => {
      sleeps.push(ms);
      now += ms;
    },
  };
  return { clock, sleeps, now: () => now };
}

function answer(status: number, headers: Record<string, string> = {}, body = "{}") {
  return new Response(status === 204 ? null : body, { status, headers });
}

/** A policy over scripted answers; records each attempt's time. */
function scripted(answers: (Response | Error)[], options: RequestPolicyOptions = {}) {
  const { clock, sleeps, now } = virtualClock();
  const events: RequestWaitEvent[] = [];
  const attempts: number[] = [];
  const policy = new RequestPolicy({
    clock,
    random: () => 0.5,
    onWait: (event) => events.push(event),
    ...options,
  });
  const send = (method = "GET") =>
    policy.send({ method, url: "https://api.example.com/repos/acme/api/pulls" }, async () => {
      attempts.push(now());
      const next = answers.shift();
      if (next === undefined) throw new Error("no more scripted answers");
      if (next instanceof Error) throw next;
      return next;
    });
  return { send, sleeps, events, attempts, now };
}

describe("RequestPolicy", () => {
  it("takes fetch's answers when another server replaced the global Response (as @hono/node-server does)", async () => {
    const native = answer(200, {}, '{"ok":true}');
    const original = globalThis.Response;
    // A stand-in global class, as the server's HTTP layer installs: native answers are no
    // instances of it.
    globalThis.Response = class StandIn {} as unknown as typeof Response;
    try {
      const policy = new RequestPolicy({ clock: virtualClock().clock });
      const response = await policy.send(
        { method: "GET", url: "https://host/x" },
        async () => native,
      );
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ ok: true });
    } finally {
      globalThis.Response = original;
    }
  });

  it("waits out a 429's Retry-After and sends again", async () => {
    const run = scripted([answer(429, { "retry-after": "7" }), answer(200)]);
    const response = await run.send("POST");
    expect(response.status).toBe(200);
    expect(run.sleeps).toContain(7_000);
    expect(run.attempts[1]! - run.attempts[0]!).toBeGreaterThanOrEqual(7_000);
    expect(run.events[0]).toMatchObject({
      reason: "rate_limited",
      status: 429,
      attempt: 1,
      waitMs: 7_000,
      path: "/repos/acme/api/pulls",
    });
  });

  it("reads Retry-After as an HTTP date too", () => {
    const now = Date.parse("2030-01-01T00:00:00Z");
    const headers = new Headers({ "retry-after": "Tue, 01 Jan 2030 00:00:30 GMT" });
    expect(rateLimitResetAt(headers, now)).toBe(now + 30_000);
  });

  it("waits for X-RateLimit-Reset after GitHub's 403 with no requests remaining", async () => {
    const run = scripted([]);
    const reset = Math.ceil((run.now() + 42_000) / 1000);
    const answers = [
      answer(403, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(reset) }),
      answer(200),
    ];
    const retried = scripted(answers);
    await retried.send();
    expect(retried.sleeps[0]).toBe(reset * 1000 - (retried.attempts[0] ?? 0));
    expect(retried.events[0]?.reason).toBe("rate_limited");
  });

  it("waits for GitLab's RateLimit-Reset after a 429", async () => {
    const run = scripted([]);
    const reset = Math.ceil((run.now() + 5_000) / 1000);
    const retried = scripted([
      answer(429, { "ratelimit-remaining": "0", "ratelimit-reset": String(reset) }),
      answer(200),
    ]);
    await retried.send();
    expect(retried.sleeps[0]).toBe(reset * 1000 - (retried.attempts[0] ?? 0));
  });

  it("treats GitHub's secondary limit (403 naming it, no headers) as a rate limit and waits a minute", async () => {
    const run = scripted([
      answer(403, {}, JSON.stringify({ message: "You have exceeded a secondary rate limit." })),
      answer(200),
    ]);
    expect((await run.send("POST")).status).toBe(200);
    expect(run.sleeps).toEqual([60_000]);
  });

  it("passes a 403 that is no rate limit through to the client", async () => {
    const run = scripted([answer(403, {}, JSON.stringify({ message: "Resource not accessible" }))]);
    expect((await run.send()).status).toBe(403);
    expect(run.sleeps).toEqual([]);
  });

  it("holds later requests back while the host said to wait, even one that gave up", async () => {
    const run = scripted([answer(429, { "retry-after": "3" }), answer(200)], { maxAttempts: 1 });
    const first = await run.send().catch((caught: unknown) => caught);
    expect(CodeHostError.isInstance(first) && first.code).toBe("rate_limited");
    expect((await run.send()).status).toBe(200);
    expect(run.attempts[1]! - run.attempts[0]!).toBeGreaterThanOrEqual(3_000);
  });

  it("after a success with nothing remaining, the next request waits for the reset", async () => {
    const run = scripted([]);
    const reset = Math.ceil((run.now() + 9_000) / 1000);
    const paced = scripted([
      answer(200, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(reset) }),
      answer(200),
    ]);
    await paced.send();
    await paced.send();
    expect(paced.attempts[1]).toBeGreaterThanOrEqual(reset * 1000);
  });

  it("retries a 5xx on a GET with growing, jittered backoff", async () => {
    const run = scripted([answer(502), answer(503), answer(200)], { baseDelayMs: 100 });
    expect((await run.send()).status).toBe(200);
    // random() = 0.5: half of each step fixed, a quarter from jitter.
    expect(run.sleeps).toEqual([75, 150]);
    expect(run.events.map((event) => event.reason)).toEqual(["server_error", "server_error"]);
  });

  it("does not repeat a POST after a 5xx, since the host may have acted on it", async () => {
    const run = scripted([answer(502), answer(200)]);
    expect((await run.send("POST")).status).toBe(502);
    expect(run.attempts).toHaveLength(1);
  });

  it("retries a lost connection on a GET but not on a POST", async () => {
    const get = scripted([new TypeError("fetch failed"), answer(200)], { baseDelayMs: 10 });
    expect((await get.send()).status).toBe(200);
    expect(get.events[0]?.reason).toBe("network_error");

    const post = scripted([new TypeError("fetch failed")]);
    const error = await post.send("POST").catch((caught: unknown) => caught);
    expect(CodeHostError.isInstance(error) && error.code).toBe("host_unavailable");
  });

  it("gives up after maxAttempts with rate_limited and the time the limit lifts", async () => {
    const run = scripted(
      [answer(429, { "retry-after": "1" }), answer(429, { "retry-after": "1" })],
      { maxAttempts: 2 },
    );
    const error = await run.send().catch((caught: unknown) => caught);
    expect(CodeHostError.isInstance(error) && error.code).toBe("rate_limited");
    expect((error as CodeHostError).retryAt).toBe(run.attempts[1]! + 1_000);
    expect(run.attempts).toHaveLength(2);
  });

  it("fails at once when the host asks for a longer wait than maxWaitMs", async () => {
    const run = scripted([answer(429, { "retry-after": "3600" })], { maxWaitMs: 60_000 });
    const error = await run.send().catch((caught: unknown) => caught);
    expect(CodeHostError.isInstance(error) && error.code).toBe("rate_limited");
    expect(error).toMatchObject({ status: 429 });
    expect(run.sleeps).toEqual([]);
  });

  it("spaces mutations at the publication rate and leaves reads unpaced", async () => {
    const run = scripted(
      Array.from({ length: 6 }, () => answer(201)),
      {
        publishRate: { perMinute: 60 },
      },
    );
    for (let index = 0; index < 3; index += 1) await run.send("POST");
    for (let index = 0; index < 3; index += 1) await run.send("GET");
    const [first, second, third, ...reads] = run.attempts;
    expect(second! - first!).toBe(1_000);
    expect(third! - second!).toBe(1_000);
    expect(new Set(reads).size).toBe(1);
  });
});
