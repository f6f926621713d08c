import { performance } from "node:perf_hooks";
import {
  type FakeCodeHost,
  type FakeCodeHostType,
  fakeRateLimit,
  startFakeCodeHost,
} from "@deckhand/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { CodeHostConnection } from "./connection.ts";
import { createCodeHostClient } from "./create-client.ts";
import { publishPullRequest } from "./publish-pull-request.ts";
import type { Clock, RequestWaitEvent } from "./request-policy.ts";

const TOKEN_ENV = "FAKE_HOST_TOKEN";
const TYPES: FakeCodeHostType[] = ["github", "gitlab", "bitbucket-cloud", "gitea"];
const CREATE = /\/pulls$|\/pullrequests$|\/merge_requests$/;

/** Sleeps return at once and move the clock on: waits are asserted, not lived through. */
function virtualClock() {
  let offset = 0;
  const sleeps: number[] = [];
  const clock: Clock = {
    now: () => Date.now() + offset,
    sleep: async (ms) => {
      sleeps.push(ms);
      offset += ms;
    },
  };
  return { clock, sleeps };
}

const fakes: FakeCodeHost[] = [];

async function fakeHost(type: FakeCodeHostType) {
  const fake = await startFakeCodeHost({ type });
  fakes.push(fake);
  const repository = type === "gitlab" ? "acme/platform/api" : "acme/api";
  fake.createRepository(repository);
  const connection: CodeHostConnection = {
    type,
    url: fake.url,
    ...(type === "bitbucket-cloud" ? { apiUrl: fake.apiUrl } : {}),
    tokenEnv: TOKEN_ENV,
  };
  return { fake, repository, connection, environment: { [TOKEN_ENV]: fake.token } };
}

afterEach(async () => {
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

describe.each(TYPES)("publishing to %s under rate limits", (type) => {
  it("waits out a 429 with Retry-After and creates the pull request once", async () => {
    const { fake, repository, connection, environment } = await fakeHost(type);
    fake.commitToBranch(repository, "batch/limited", { "a.txt": "a\n" });
    const { clock, sleeps } = virtualClock();
    const events: RequestWaitEvent[] = [];
    const client = createCodeHostClient(connection, {
      environment,
      policyOptions: { clock, onWait: (event) => events.push(event) },
    });
    fake.failNext(fakeRateLimit.retryAfter(2), {
      when: (request) => request.method === "POST" && CREATE.test(request.path),
    });
    const published = await publishPullRequest(client, {
      repository,
      head: "batch/limited",
      base: "main",
      title: "Limited",
      body: "",
      draft: false,
    });
    expect(published.action).toBe("created");
    expect(sleeps).toContain(2_000);
    expect(events).toEqual([expect.objectContaining({ reason: "rate_limited", status: 429 })]);
    const creates = fake.requestsTo("POST", CREATE);
    expect(creates.map((request) => request.status)).toEqual([429, 201]);
    expect(fake.pullRequests(repository)).toHaveLength(1);
  });
});

describe("host rate-limit answers", () => {
  it("waits out GitHub's 403 secondary limit and its Retry-After", async () => {
    const { fake, repository, connection, environment } = await fakeHost("github");
    fake.commitToBranch(repository, "batch/secondary", { "a.txt": "a\n" });
    const { clock, sleeps } = virtualClock();
    const client = createCodeHostClient(connection, { environment, policyOptions: { clock } });
    fake.failNext(fakeRateLimit.githubSecondary(30), {
      when: (request) => request.method === "POST",
    });
    await client.createPullRequest(repository, {
      head: "batch/secondary",
      base: "main",
      title: "t",
      body: "",
    });
    expect(sleeps).toContain(30_000);
    expect(fake.requestsTo("POST", CREATE).map((request) => request.status)).toEqual([403, 201]);
  });

  it("waits for X-RateLimit-Reset when GitHub says none remain", async () => {
    const { fake, repository, connection, environment } = await fakeHost("github");
    const { clock, sleeps } = virtualClock();
    const client = createCodeHostClient(connection, { environment, policyOptions: { clock } });
    const reset = Math.ceil(clock.now() / 1000) + 120;
    fake.failNext(fakeRateLimit.exhausted(reset, "x-ratelimit"));
    expect(await client.findPullRequest(repository, { head: "x", base: "main" })).toBeUndefined();
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThan(118_000);
    expect(sleeps[0]).toBeLessThanOrEqual(121_000);
    expect(fake.requests.map((request) => request.status)).toEqual([403, 200]);
  });

  it("waits for GitLab's RateLimit-Reset after its 429", async () => {
    const { fake, repository, connection, environment } = await fakeHost("gitlab");
    const { clock, sleeps } = virtualClock();
    const client = createCodeHostClient(connection, { environment, policyOptions: { clock } });
    const reset = Math.ceil(clock.now() / 1000) + 60;
    fake.failNext(fakeRateLimit.exhausted(reset, "ratelimit"));
    expect(await client.findPullRequest(repository, { head: "x", base: "main" })).toBeUndefined();
    expect(sleeps[0]).toBeGreaterThan(58_000);
    expect(fake.requests.map((request) => request.status)).toEqual([429, 200]);
  });

  it("spaces 20 creates at the connection's publication rate", async () => {
    const { fake, repository, connection, environment } = await fakeHost("github");
    const branches = Array.from({ length: 20 }, (_, index) => `batch/spaced-${index}`);
    for (const branch of branches) fake.commitToBranch(repository, branch, { "a.txt": branch });
    // 1,200 a minute: one mutation every 50 ms. The sends are timed where they leave (the fake
    // runs in this process and its git work delays arrivals by a varying few milliseconds).
    const sent: number[] = [];
    const client = createCodeHostClient(
      { ...connection, publishRate: { perMinute: 1_200 } },
      {
        environment,
        fetch: (input, init) => {
          if (init?.method === "POST") sent.push(performance.now());
          return fetch(input, init);
        },
      },
    );
    await Promise.all(
      branches.map((head) =>
        client.createPullRequest(repository, { head, base: "main", title: head, body: "" }),
      ),
    );
    expect(fake.requestsTo("POST", CREATE)).toHaveLength(20);
    expect(fake.pullRequests(repository)).toHaveLength(20);
    const gaps = sent.slice(1).map((at, index) => at - sent[index]!);
    // The limiter reads Date.now() and timers may fire a little early: allow a few milliseconds.
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(45);
    const creates = fake.requestsTo("POST", CREATE);
    expect(creates.at(-1)!.at - creates[0]!.at).toBeGreaterThanOrEqual(19 * 45);
  });
});
