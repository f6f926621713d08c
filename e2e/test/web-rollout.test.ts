// A paced rollout in the browser: `deckhand up` with a fake GitHub, a spec whose `rollout:`
// opens one pull request an hour applied through the API, and a real Chromium reading the batch
// change screen's rollout (what waits, for what, and when) while the server's queue publishes.
import { type FakeCodeHost, startFakeCodeHost } from "@deckhand/testkit";
import { ServerPath, serverPath, WireHeader } from "@deckhand/wire";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectAccessible, type OpenedBrowser, openBrowser } from "./browser.ts";
import { type DeckhandUp, startDeckhandUp } from "./deckhand-up.ts";

const ADMIN_TOKEN = "e2e-admin-token-rollout-0123456789";
const GITHUB_TOKEN_ENV = "E2E_ROLLOUT_GITHUB_TOKEN";
const FLEET = ["paced/svc-0", "paced/svc-1", "paced/svc-2"];

const SPEC = `version: 3
name: e2e-paced
on:
  - repositoriesMatchingQuery: repo:svc-
steps:
  - run: echo paced > PACED.md
    container: alpine:3
changesetTemplate:
  title: Paced
  branch: e2e/paced
  commit:
    message: Add PACED.md
  published: true
rollout:
  hourlyLimit: 1
`;

let up: DeckhandUp;
let github: FakeCodeHost;
let browser: OpenedBrowser;
let page: Page;

async function api(method: string, path: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${up.server.url}${path}`, {
    method,
    headers: {
      [WireHeader.authorization]: `Bearer ${ADMIN_TOKEN}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(response.ok, `${method} ${path}: ${response.status}`).toBe(true);
  return response.json();
}

beforeAll(async () => {
  github = await startFakeCodeHost({ type: "github" });
  for (const path of FLEET)
    github.createRepository(path, { files: { "main.go": "package main\n" } });
  process.env[GITHUB_TOKEN_ENV] = github.token;
  up = await startDeckhandUp({
    adminToken: ADMIN_TOKEN,
    config: {
      codeHosts: FLEET.map((path) => ({ type: "git", url: github.cloneUrl(path) })),
      codeHostConnections: [
        { type: "github", url: github.url, apiUrl: github.apiUrl, tokenEnv: GITHUB_TOKEN_ENV },
      ],
    },
  });
  browser = await openBrowser({ token: ADMIN_TOKEN });
  page = browser.page;
});

afterAll(async () => {
  await browser?.close();
  await up?.close();
  await github?.close();
  delete process.env[GITHUB_TOKEN_ENV];
});

describe("a paced rollout in the web UI", () => {
  it("shows what waits to be opened, for what and when, while the queue publishes", async () => {
    const run = (await api("POST", ServerPath.batchRuns, {
      source: SPEC,
      action: "apply",
      options: { runtime: "local" },
    })) as { id: string };
    await expect
      .poll(
        async () =>
          (
            (await api("GET", serverPath(ServerPath.batchRun, { batch_run_id: run.id }))) as {
              status: string;
            }
          ).status,
        { timeout: 120_000 },
      )
      .toBe("completed");
    // The server's queue runs the rollout's first turn: one pull request now, the others later.
    await expect.poll(() => github.pullRequests().length, { timeout: 60_000 }).toBe(1);

    await page.goto(`${up.server.url}/batches/changes/e2e-paced`);
    const rollout = page.getByRole("region", { name: "Rollout" });
    await rollout.waitFor();
    await expect
      .poll(() => rollout.getByTestId("rollout-state").textContent(), { timeout: 30_000 })
      // An hour after the first went out: a little less by the time the page reads it.
      .toMatch(/^waiting 2 waiting; next in (?:1 h|5\d min)/);
    expect(await rollout.locator('[data-field="pace"]').textContent()).toBe("at most 1 per hour");
    expect(await rollout.locator('[data-field="published-last-hour"]').textContent()).toBe("1");
    const rows = rollout.getByRole("table", { name: "Pull requests waiting to be opened" });
    expect(await rows.locator("tbody tr").count()).toBe(2);
    expect(await rows.locator('tbody tr[data-waiting-for="hourly_limit"]').count()).toBe(2);
    expect(await rows.locator("tbody tr").first().locator("time").textContent()).toMatch(
      /^in (?:1 h|5\d min)$/,
    );
    await expectAccessible(page, "batch change rollout");
  }, 240_000);

  it("raised no error in the page on the way", () => {
    expect(browser.pageErrors).toEqual([]);
  });
});
