// Batch changes in the browser, end to end: `deckhand up` with a directory code
// host of generated repositories and a fake GitHub (its API and git remotes), and a real
// Chromium (Debian's, through playwright-core) that writes a spec, previews its workspaces, runs
// a preview, watches it finish, reads and applies its changeset, publishes pull requests and
// operates on them in bulk.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { type FakeCodeHost, startFakeCodeHost } from "@deckhand/testkit";
import { ServerPath, serverPath } from "@deckhand/wire";
import type { Page, WebSocketRoute } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capture, type OpenedBrowser, openBrowser } from "./browser.ts";
import { type DeckhandUp, startDeckhandUp } from "./deckhand-up.ts";

const ADMIN_TOKEN = "e2e-admin-token-batches-0123456789";
/** The budget for the JavaScript a first visit loads, gzipped. */
const INITIAL_JS_BUDGET = 300 * 1024;

const SPEC = `version: 3
name: e2e-readme
description: A note in every README
on:
  - repositoriesMatchingQuery: file:README.md
steps:
  - run: echo "noting \${{ repository.name }}" && printf 'Maintained by the platform team.\\n' >> README.md
    image: alpine:3
changesetTemplate:
  title: Note the maintainers
  body: The **platform team** maintains \${{ repository.name }}.
  branch: batch/e2e-readme
  commit:
    message: Note the maintainers
`;

const GITHUB_TOKEN_ENV = "E2E_WEB_GITHUB_TOKEN";
/** On the fake GitHub; no README, so the directory host's specs never reach them. */
const FLEET = ["fleet/svc-0", "fleet/svc-1", "fleet/svc-2"];

const PUBLISH_SPEC = `version: 3
name: e2e-publish-ui
description: Pull requests from the web UI
on:
  - repositoriesMatchingQuery: repo:svc-
steps:
  - run: echo "$GREETING from \${{ repository.name }}" > HELLO.md
    container: alpine:3
    env:
      GREETING: hello
      SERVICE_TOKEN: e2e-step-secret-0123456789
changesetTemplate:
  title: Say hello
  body: Adds **HELLO.md** to \${{ repository.name }}.
  branch: e2e/hello
  commit:
    message: Add HELLO.md
  published: true
`;

let up: DeckhandUp;
let github: FakeCodeHost;
let codeHost: string;
let browser: OpenedBrowser;
let page: Page;

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** A repository named `name` under the code host directory, with `files` committed on main. */
function makeRepository(name: string, files: Record<string, string>): void {
  const path = join(codeHost, name);
  mkdirSync(path, { recursive: true });
  git(path, "init", "--quiet", "--initial-branch=main");
  for (const [file, content] of Object.entries(files)) writeFileSync(join(path, file), content);
  git(path, "add", "--all");
  git(
    path,
    "-c",
    "user.name=e2e",
    "-c",
    "user.email=e2e@example.com",
    "commit",
    "--quiet",
    "-m",
    "initial",
  );
}

function branchExists(repository: string, branch: string): boolean {
  try {
    git(join(codeHost, repository), "rev-parse", "--verify", "--quiet", `refs/heads/${branch}`);
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  codeHost = mkdtempSync(join(tmpdir(), "deckhand-code-host-"));
  makeRepository("acme/api", { "README.md": "# api\n" });
  makeRepository("acme/web", { "README.md": "# web\n" });
  // No README: the spec's query does not reach it.
  makeRepository("acme/tools", { "package.json": '{"name": "tools"}\n' });
  github = await startFakeCodeHost({ type: "github" });
  for (const path of FLEET)
    github.createRepository(path, { files: { "main.go": "package main\n" } });
  // The server reads the connection's token from its environment (the spawned server inherits it).
  process.env[GITHUB_TOKEN_ENV] = github.token;
  up = await startDeckhandUp({
    adminToken: ADMIN_TOKEN,
    config: {
      codeHosts: [
        { type: "directory", path: codeHost },
        ...FLEET.map((path) => ({ type: "git", url: github.cloneUrl(path) })),
      ],
      codeHostConnections: [
        { type: "github", url: github.url, apiUrl: github.apiUrl, tokenEnv: GITHUB_TOKEN_ENV },
      ],
    },
  });
  // Signed in from the start: the token prompt is web-ui.test.ts's subject.
  browser = await openBrowser({ token: ADMIN_TOKEN });
  page = browser.page;
});

afterAll(async () => {
  await browser?.close();
  await up?.close();
  await github?.close();
  delete process.env[GITHUB_TOKEN_ENV];
  if (codeHost) rmSync(codeHost, { recursive: true, force: true });
});

/** A workspace's row in the run's table. */
function workspaceRow(title: string | RegExp) {
  return page.getByRole("row", {
    name: typeof title === "string" ? `Workspace ${title}` : title,
  });
}

/** Opens a workspace's row (if closed) and answers its detail: steps, error, timeline. */
async function openWorkspace(title: string) {
  const toggle = workspaceRow(title).getByRole("button", { name: title, exact: true });
  if ((await toggle.getAttribute("aria-expanded")) !== "true") await toggle.click();
  return page
    .locator("tr.detail-row")
    .filter({ has: page.getByRole("list", { name: `Steps of ${title}` }) });
}

/** Replaces the spec editor's text, as a paste would. */
async function typeSpec(text: string): Promise<void> {
  const editor = page.locator(".cm-content");
  await editor.click();
  await page.keyboard.press("ControlOrMeta+a");
  await page.keyboard.insertText(text);
}

describe("batch changes in the web UI", () => {
  it("keeps the first visit's JavaScript in budget and loads the spec editor only on its screen", async () => {
    const html = await (await fetch(`${up.server.url}/`)).text();
    const scripts = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+\.js)"/g)].map(
      (match) => match[1]!,
    );
    expect(scripts.length).toBeGreaterThan(0);
    let gzipped = 0;
    for (const script of scripts) {
      const body = Buffer.from(await (await fetch(`${up.server.url}${script}`)).arrayBuffer());
      gzipped += gzipSync(body, { level: 9 }).length;
    }
    console.log(`initial JavaScript: ${(gzipped / 1024).toFixed(1)} KB gzipped`);
    expect(gzipped).toBeLessThanOrEqual(INITIAL_JS_BUDGET);

    const requested: string[] = [];
    const onRequest = (request: { url(): string }) => requested.push(request.url());
    page.on("request", onRequest);
    await page.goto(`${up.server.url}/batches`);
    await page.getByRole("heading", { name: "Batch changes" }).waitFor();
    await page.getByText("No batch runs yet.").waitFor();
    expect(requested.filter((url) => url.includes("spec-editor"))).toEqual([]);
    await page.getByRole("link", { name: "New batch change" }).click();
    await page.locator(".cm-content").waitFor();
    expect(requested.filter((url) => url.includes("spec-editor"))).toHaveLength(1);
    page.off("request", onRequest);
  });

  it("offers example specs, each of them valid", async () => {
    const examples = page.getByLabel("Start from an example");
    const values: string[] = [];
    for (const option of await examples.locator("option").all()) {
      const value = await option.getAttribute("value");
      if (value) values.push(value);
    }
    expect(values.length).toBeGreaterThanOrEqual(2);
    for (const value of values) {
      await examples.selectOption(value);
      await expect
        .poll(() => page.locator(".cm-content").textContent())
        .toContain(`name: ${value}`);
      await page.getByText("The spec is valid.").waitFor();
    }
  });

  it("shows the spec's problems at their line as you type, then previews its workspaces", async () => {
    await page
      .getByRole("navigation", { name: "Main" })
      .getByRole("link", { name: "Batch changes" })
      .waitFor();
    expect(
      await page
        .getByRole("navigation", { name: "Main" })
        .getByRole("link", { name: "Batch changes" })
        .getAttribute("aria-current"),
    ).toBe("page");
    // A misspelt field: the library's located diagnostic, in the list and at its line.
    await typeSpec(SPEC.replace("\nsteps:", "\nstepz:"));
    const problems = page.getByRole("region", { name: "Problems in the spec" });
    await problems.getByText(/stepz/).first().waitFor();
    expect(await problems.locator("li").first().textContent()).toMatch(/^6:1 /);
    await page.locator(".cm-lintRange-error").first().waitFor();
    await expect
      .poll(() => page.locator(".cm-gutter-lint .cm-lint-marker-error").count())
      .toBeGreaterThan(0);
    await expect
      .poll(() => page.getByRole("button", { name: "Preview", exact: true }).isDisabled())
      .toBe(true);
    await capture(page, "batch-new-problems");

    await typeSpec(SPEC);
    await page.getByText("The spec is valid.").waitFor();
    await page.getByLabel("Runtime").selectOption("local");
    await page.getByRole("button", { name: "Preview workspaces" }).click();
    await page.getByLabel("Include acme/api").waitFor();
    await page.getByLabel("Include acme/web").waitFor();
    expect(await page.getByLabel("Include acme/tools").count()).toBe(0);
    await page.getByText("2 of 2 workspaces will run.").waitFor();

    // Editing the spec marks the preview stale until it is resolved again.
    await page.locator(".cm-content").click();
    await page.keyboard.press("ControlOrMeta+End");
    await page.keyboard.insertText("# reviewed\n");
    await page.getByText("Stale: the spec changed").waitFor();
    await page.getByText("The spec is valid.").waitFor();
    await page.getByRole("button", { name: "Refresh workspaces" }).click();
    await page.getByText("Stale: the spec changed").waitFor({ state: "detached" });

    await page.getByLabel("Include acme/web").uncheck();
    await page.getByText("1 of 2 workspaces will run.").waitFor();
    await capture(page, "batch-new");
  });

  let runUrl: string;

  it("runs a preview and shows each workspace's steps, logs, diff and timeline live", async () => {
    await page.getByRole("button", { name: "Preview", exact: true }).click();
    await page.waitForURL(/\/batches\/runs\/[0-9a-f-]+$/);
    runUrl = page.url();
    await page.getByRole("heading", { name: "e2e-readme" }).waitFor();
    const started = Date.now();
    await expect
      .poll(() => page.getByTestId("run-status").textContent(), { timeout: 90_000 })
      .toBe("completed");
    console.log(`the preview run finished in ${Date.now() - started} ms`);
    const stats = page.getByRole("definition").filter({ hasText: /^\d+$/ });
    expect(await stats.count()).toBeGreaterThan(0);
    expect(await page.locator('.stats-bar [data-field="workspaces"] dd').textContent()).toBe("1");
    await expect
      .poll(() => page.locator('.stats-bar [data-field="changesets"] dd').textContent())
      .toBe("1");
    // acme/web was left out.
    const row = workspaceRow("acme/api");
    await row.waitFor();
    expect(await workspaceRow("acme/web").count()).toBe(0);
    // The row names the step by its number (as the API numbers them) and what it runs.
    expect(await row.locator(".step-cell").textContent()).toMatch(/^Step 0 · echo "noting/);
    const workspace = await openWorkspace("acme/api");
    await expect
      .poll(() => workspace.locator(".step-row .badge").first().textContent())
      .toBe("run");
    expect(await workspace.locator(".step-row").first().textContent()).toContain("local");
    // The shell that ran the step: bash where this machine has it.
    expect(await workspace.locator(".step-row").first().textContent()).toMatch(/\/bash/);

    await workspace.getByRole("button", { name: "Details of step 0 in acme/api" }).click();
    const panel = workspace.getByRole("tabpanel");
    await panel.getByText("noting acme/api").waitFor();
    await workspace.getByRole("tab", { name: "Diff" }).click();
    await expect
      .poll(() => panel.locator(".diff-code-insert").allTextContents())
      .toEqual(["Maintained by the platform team."]);
    // The diff says which file it is.
    await panel.getByRole("region", { name: "Diff of README.md" }).waitFor();
    await workspace.getByText(/^Timeline \(\d+\)$/).click();
    await workspace.getByText(/step 0 run \(exit 0\)/).waitFor();
    await workspace.getByText("finished: completed").waitFor();
    await capture(page, "batch-run");
  }, 150_000);

  it("takes a workspace over: the session opens on what the workspace ran and changed", async () => {
    await workspaceRow("acme/api").getByRole("button", { name: "Take over acme/api" }).click();
    await page.waitForURL(/\/sessions\/[0-9a-f-]{36}$/);
    const context = page.getByRole("article", { name: "Context from Deckhand" });
    await context.getByText(/Taken over from the batch change/).waitFor();
    expect(await context.textContent()).toContain("Step 0: echo");
    expect(await context.textContent()).toContain("+Maintained by the platform team.");
    await capture(page, "batch-takeover-session");
    await page.goto(runUrl);
    await (await openWorkspace("acme/api")).getByRole("link", { name: "open session" }).waitFor();
  });

  it("resumes the run stream from the last event id after a dropped connection", async () => {
    const connections: string[] = [];
    let current: WebSocketRoute | null = null;
    await page.routeWebSocket(/\/api\/batch-runs\/[^/]+\/stream/, (socket) => {
      connections.push(socket.url());
      current = socket;
      socket.connectToServer();
    });
    await page.reload();
    const workspace = await openWorkspace("acme/api");
    await workspace.getByText(/^Timeline \(\d+\)$/).waitFor();
    const timeline = await workspace.locator(".timeline summary").textContent();
    await expect.poll(() => connections.length).toBe(1);
    expect(new URL(connections[0]!).searchParams.get("after")).toBe("0");
    await (current as WebSocketRoute | null)?.close({ code: 1011, reason: "dropped by the test" });
    await expect.poll(() => connections.length, { timeout: 60_000 }).toBe(2);
    expect(Number(new URL(connections[1]!).searchParams.get("after"))).toBeGreaterThan(0);
    await page.getByText("live", { exact: true }).waitFor();
    // Nothing shown twice.
    expect(await workspace.locator(".timeline summary").textContent()).toBe(timeline);
    await page.unrouteAll();
  });

  it("shows the changeset's rendered title, body and diff, and applies it as a branch", async () => {
    await page.getByRole("tab", { name: /^Changesets \(1\)$/ }).click();
    const changeset = page.getByRole("listitem", { name: "Changeset acme/api" });
    await changeset.getByRole("heading", { name: "Note the maintainers" }).waitFor();
    await changeset.locator(".markdown strong", { hasText: "platform team" }).waitFor();
    expect(await changeset.locator(".markdown").textContent()).toContain("maintains acme/api");
    expect(await changeset.locator(".facts").textContent()).toContain("batch/e2e-readme");
    await changeset.getByText("Diff of acme/api").click();
    await expect
      .poll(() => changeset.locator(".diff-code-insert").allTextContents())
      .toEqual(["Maintained by the platform team."]);
    await changeset.getByRole("region", { name: "Diff of README.md" }).waitFor();
    expect(branchExists("acme/api", "batch/e2e-readme")).toBe(false);
    await capture(page, "batch-changesets");

    await page.getByRole("button", { name: "Apply changesets" }).click();
    await expect
      .poll(() => changeset.locator('[data-field="applied"]').textContent(), { timeout: 60_000 })
      .toMatch(/^created at [0-9a-f]{10}/);
    expect(branchExists("acme/api", "batch/e2e-readme")).toBe(true);
    expect(git(join(codeHost, "acme/api"), "show", "batch/e2e-readme:README.md")).toBe(
      "# api\nMaintained by the platform team.\n",
    );
    expect(branchExists("acme/web", "batch/e2e-readme")).toBe(false);
    await page.getByRole("button", { name: "Apply changesets" }).waitFor({ state: "detached" });
  });

  it("says what publishing a directory host's applied changeset lacks, after asking with the count", async () => {
    await page.goto(`${up.server.url}/batches/changes/e2e-readme`);
    await page.getByRole("heading", { name: "e2e-readme", level: 1 }).waitFor();
    await page.getByRole("button", { name: "Select all 1 matching" }).click();
    await page.getByRole("button", { name: "Publish selected" }).click();
    const dialog = page.getByRole("dialog", { name: "Publish 1 changeset?" });
    await dialog.getByRole("button", { name: "Publish 1 changeset" }).click();
    const result = page.getByRole("status").filter({ hasText: "publish: 0 of 1 succeeded" });
    await result.waitFor();
    const reason = (await result.textContent()) ?? "";
    // It is applied (as a local branch): what is missing is a remote a connection matches.
    expect(reason).toContain("is applied as the local branch batch/e2e-readme");
    expect(reason).toContain("no remote URL a code host connection can match");
    expect(reason).not.toContain("is not applied");
  });

  it("lists the run with its action, status and stats", async () => {
    await page
      .getByRole("navigation", { name: "Main" })
      .getByRole("link", { name: "Batch changes" })
      .click();
    const run = page.getByRole("table", { name: "Batch runs" }).getByRole("row", {
      name: "Run e2e-readme",
    });
    await run.first().waitFor();
    await expect.poll(() => run.first().locator(".badge").allTextContents()).toContain("completed");
    expect(await run.first().locator(".run-progress").textContent()).toContain("1 changesets");
    // By name: the batch change, its latest run and its changesets by state.
    const change = page.getByRole("table", { name: "Batch changes" }).getByRole("row", {
      name: /e2e-readme/,
    });
    await change.getByRole("link", { name: "e2e-readme", exact: true }).waitFor();
    expect(await change.textContent()).toContain("1 unpublished");
    await capture(page, "batches");
  });

  it("offers the JSON Schema's fields as completions in the spec editor", async () => {
    await page.goto(`${up.server.url}/batches/new`);
    await page.locator(".cm-content").waitFor();
    await typeSpec("version: 3\nname: completing\nchangesetTem");
    await page.keyboard.press("Control+Space");
    const completions = page.locator(".cm-tooltip-autocomplete");
    await completions.getByText("changesetTemplate").first().waitFor();
    await page.keyboard.press("Escape");
  });

  it("retries the failed workspaces of a run, and cancels a running one", async () => {
    await typeSpec(
      SPEC.replace("name: e2e-readme", "name: e2e-failing")
        .replace("branch: batch/e2e-readme", "branch: batch/e2e-failing")
        .replace(
          /- run: .*/,
          () => `- run: test "\${{ repository.name }}" != "acme/web" && echo ok >> README.md`,
        ),
    );
    await page.getByText("The spec is valid.").waitFor();
    await page.getByLabel("Runtime").selectOption("local");
    await page.getByRole("button", { name: "Preview", exact: true }).click();
    await page.getByRole("heading", { name: "e2e-failing" }).waitFor();
    await expect
      .poll(() => page.getByTestId("run-status").textContent(), { timeout: 60_000 })
      .toBe("failed");
    const web = workspaceRow("acme/web");
    await expect.poll(() => web.locator(".badge").first().textContent()).toBe("failed");
    // Failed first; and Retry only where it applies.
    expect(
      await page
        .getByRole("table", { name: "Workspaces" })
        .locator("tbody tr")
        .first()
        .getAttribute("aria-label"),
    ).toBe("Workspace acme/web");
    expect(
      await workspaceRow("acme/api")
        .getByRole("button", { name: /^Retry/ })
        .count(),
    ).toBe(0);
    // The failure sits with the step that failed, named as the API numbers it.
    const detail = await openWorkspace("acme/web");
    const failedStep = detail.locator('li[data-outcome="failed"]');
    expect(await failedStep.locator(".step-name").textContent()).toMatch(/^Step 0 · test /);
    expect(await failedStep.locator(".error-output").textContent()).toMatch(
      /step [01] failed|exit code 1/,
    );
    await page.getByRole("radio", { name: /^Failed \(1\)/ }).check();
    expect(
      await page
        .getByRole("table", { name: "Workspaces" })
        .locator("tbody > tr[aria-label]")
        .count(),
    ).toBe(1);
    await capture(page, "batch-run-failed");
    await page.getByRole("radio", { name: /^All/ }).check();
    await page.getByRole("button", { name: "Retry all failed (1)" }).click();
    await (await openWorkspace("acme/web")).getByText(/attempt 2/).waitFor({ timeout: 60_000 });
    await expect
      .poll(() => page.getByTestId("run-status").textContent(), { timeout: 60_000 })
      .toBe("failed");

    // The one that succeeded is applied anyway, on request; the failed one is left out.
    await page.getByRole("button", { name: "Apply the 1 that succeeded" }).click();
    await expect
      .poll(() => page.getByTestId("run-status").textContent(), { timeout: 60_000 })
      .toBe("completed");
    expect(branchExists("acme/api", "batch/e2e-failing")).toBe(true);
    expect(branchExists("acme/web", "batch/e2e-failing")).toBe(false);

    await page.goto(`${up.server.url}/batches/new`);
    await page.locator(".cm-content").waitFor();
    await typeSpec(
      SPEC.replace("name: e2e-readme", "name: e2e-slow").replace(/- run: .*/, "- run: sleep 30"),
    );
    await page.getByText("The spec is valid.").waitFor();
    await page.getByLabel("Runtime").selectOption("local");
    // The run's options: fail fast, and how many workspaces at once.
    await page.getByLabel(/^Fail fast/).check();
    await page.getByLabel("Parallelism (workspaces at once)").fill("2");
    await page.getByRole("button", { name: "Preview", exact: true }).click();
    await page.getByRole("heading", { name: "e2e-slow" }).waitFor();
    const slowRun = (await (
      await fetch(
        `${up.server.url}${serverPath(ServerPath.batchRun, { batch_run_id: /runs\/([0-9a-f-]+)/.exec(page.url())![1]! })}`,
        { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
      )
    ).json()) as { options: Record<string, unknown> };
    expect(slowRun.options).toMatchObject({ runtime: "local", fail_fast: true, parallelism: 2 });
    const step = page
      .getByRole("table", { name: "Workspaces" })
      .locator(".badge", { hasText: "running" })
      .first();
    await step.waitFor({ timeout: 30_000 });
    await page.getByRole("button", { name: "Cancel run" }).click();
    await expect
      .poll(() => page.getByTestId("run-status").textContent(), { timeout: 30_000 })
      .toBe("cancelled");
    await page.getByRole("button", { name: "Cancel run" }).waitFor({ state: "detached" });
  }, 150_000);

  it("says what apply will do, publishes pull requests, and operates on them in bulk", async () => {
    await page.goto(`${up.server.url}/batches/new`);
    await page.locator(".cm-content").waitFor();
    await typeSpec(PUBLISH_SPEC);
    await page.getByText("The spec is valid.").waitFor();
    await page.getByLabel("Runtime").selectOption("local");
    await page.getByRole("button", { name: "Preview", exact: true }).click();
    await page.getByRole("heading", { name: "e2e-publish-ui" }).waitFor();
    await expect
      .poll(() => page.getByTestId("run-status").textContent(), { timeout: 90_000 })
      .toBe("completed");

    // The step's environment, its secret redacted by the server, and its command.
    const svc0 = (await workspaceRow(/^Workspace .*fleet\/svc-0$/).getAttribute(
      "aria-label",
    ))!.replace(/^Workspace /, "");
    const workspace = await openWorkspace(svc0);
    await workspace.getByRole("button", { name: /^Details of step 0 in / }).click();
    await workspace.getByRole("tab", { name: "Environment" }).click();
    const environment = workspace.locator(".env-table");
    await environment.getByText("GREETING").waitFor();
    expect(await environment.locator("tr", { hasText: "GREETING" }).textContent()).toContain(
      "hello",
    );
    expect(await environment.locator("tr", { hasText: "SERVICE_TOKEN" }).textContent()).toContain(
      "[REDACTED]",
    );
    expect(await page.content()).not.toContain("e2e-step-secret-0123456789");
    await workspace.getByText("Command").click();
    await workspace.locator(".step-command pre", { hasText: "HELLO.md" }).waitFor();

    // Before applying: each changeset says what apply will do with it.
    await page.getByRole("tab", { name: /^Changesets \(3\)$/ }).click();
    const operations = page.locator('.changeset-card [data-field="operation"]');
    await expect
      .poll(() => operations.allTextContents(), { timeout: 30_000 })
      .toEqual([
        "push branch, create pull request",
        "push branch, create pull request",
        "push branch, create pull request",
      ]);
    expect(github.pullRequests()).toHaveLength(0);

    await page.getByRole("button", { name: "Apply changesets" }).click();
    const states = page.locator('.changeset-card [data-field="state"]');
    await expect
      .poll(() => states.allTextContents(), { timeout: 90_000 })
      .toEqual(["open", "open", "open"]);
    expect(await operations.count()).toBe(0);
    expect(github.pullRequests()).toHaveLength(3);
    for (const pullRequest of github.pullRequests()) {
      expect(pullRequest).toMatchObject({ title: "Say hello", head: "e2e/hello", state: "open" });
    }

    // The host reports checks; the batch change screen reads them back on refresh.
    github.setChecks("fleet/svc-0", github.pullRequests("fleet/svc-0")[0]!.number, "passing");
    github.setChecks("fleet/svc-1", github.pullRequests("fleet/svc-1")[0]!.number, "failing");
    github.setChecks("fleet/svc-2", github.pullRequests("fleet/svc-2")[0]!.number, "pending");
    await page.getByRole("link", { name: "Open the batch change e2e-publish-ui" }).click();
    await page.getByRole("heading", { name: "e2e-publish-ui", level: 1 }).waitFor();
    await page.getByRole("button", { name: "Refresh from code hosts" }).click();
    const card = (path: string) => page.getByRole("listitem", { name: new RegExp(`${path}$`) });
    await expect
      .poll(() => card("fleet/svc-0").locator('[data-field="checks"]').textContent(), {
        timeout: 30_000,
      })
      .toBe("checks passed");
    expect(await card("fleet/svc-1").locator('[data-field="checks"]').textContent()).toBe(
      "checks failed",
    );
    expect(await card("fleet/svc-2").locator('[data-field="checks"]').textContent()).toBe(
      "checks pending",
    );
    expect(
      await card("fleet/svc-0")
        .getByRole("link", { name: /^#\d+ of / })
        .getAttribute("href"),
    ).toBe(`${github.url}/fleet/svc-0/pull/${github.pullRequests("fleet/svc-0")[0]!.number}`);

    // The burndown: three open pull requests, named for screen readers.
    const chart = page.getByRole("img", { name: /^Burndown: pull requests per state/ });
    await chart.waitFor();
    expect(await page.locator('.burndown-legend [data-series="open"]').textContent()).toBe("3");
    // Its axis numbers keep their shape however wide the chart is drawn.
    const tick = await page.locator(".burndown .burndown-tick").first().boundingBox();
    expect(tick!.width / tick!.height).toBeLessThan(0.8);

    // A filter narrows the list; select all matching picks every match.
    const selection = page.getByTestId("selection");
    await page.getByLabel("Repository", { exact: true }).fill("svc-1");
    await expect.poll(() => page.locator(".changeset-card").count(), { timeout: 30_000 }).toBe(1);
    expect(await selection.textContent()).toContain("1 of 3 changesets match");
    await page.getByLabel("Repository", { exact: true }).fill("");
    await page.getByLabel("State", { exact: true }).selectOption("open");
    await page.getByRole("button", { name: "Select all 3 matching" }).click();
    await expect.poll(() => selection.textContent(), { timeout: 30_000 }).toContain("3 selected");
    // Filtered down, the selection is what the filter shows: a bulk action reaches only that,
    // and says how many before it does anything.
    await page.getByLabel("Repository", { exact: true }).fill("svc-1");
    await expect
      .poll(() => selection.textContent())
      .toContain("1 of 3 changesets match · 1 selected");
    await page.getByRole("button", { name: "Close selected" }).click();
    const closing = page.getByRole("dialog", { name: "Close 1 changeset?" });
    await closing.getByText(/fleet\/svc-1$/).waitFor();
    await capture(page, "batch-change-confirm");
    await page.keyboard.press("Escape");
    await closing.waitFor({ state: "hidden" });
    expect(github.pullRequests().map((pullRequest) => pullRequest.state)).toEqual([
      "open",
      "open",
      "open",
    ]);
    await page.getByLabel("Repository", { exact: true }).fill("");
    await page.getByRole("button", { name: "Select all 3 matching" }).click();
    await page.getByLabel("Comment", { exact: true }).fill("Merging this on Friday.");
    await page.getByRole("button", { name: "Comment on selected" }).click();
    await page
      .getByRole("dialog", { name: "Comment on 3 changesets?" })
      .getByRole("button", { name: "Comment on 3 changesets" })
      .click();
    await page.getByRole("status").getByText("comment: 3 of 3 succeeded").waitFor();
    for (const path of FLEET) {
      expect(github.pullRequests(path)[0]!.comments.map((comment) => comment.body)).toEqual([
        "Merging this on Friday.",
      ]);
    }

    // Bulk close of one: its state, the host and the burndown follow.
    await page.getByRole("button", { name: "Clear selection" }).click();
    await card("fleet/svc-2")
      .getByRole("checkbox", { name: /^Select / })
      .check();
    await page.getByRole("button", { name: "Close selected" }).click();
    await page
      .getByRole("dialog", { name: "Close 1 changeset?" })
      .getByRole("button", { name: "Close 1 changeset" })
      .click();
    await page.getByRole("status").getByText("close: 1 of 1 succeeded").waitFor();
    expect(github.pullRequests("fleet/svc-2")[0]!.state).toBe("closed");
    await page.getByLabel("State", { exact: true }).selectOption("");
    await expect
      .poll(() => card("fleet/svc-2").locator('[data-field="state"]').textContent(), {
        timeout: 30_000,
      })
      .toBe("closed");
    await expect
      .poll(() => page.locator('.burndown-legend [data-series="closed"]').textContent(), {
        timeout: 30_000,
      })
      .toBe("1");
    await card("fleet/svc-2")
      .getByText(/^Events of /)
      .click();
    await card("fleet/svc-2")
      .getByText(/pull request created #\d+/)
      .waitFor();
    await capture(page, "batch-change");
  }, 240_000);

  it("takes over a workspace of a git URL host: the session clones with the connection's credentials", async () => {
    await page.goto(`${up.server.url}/batches`);
    await page
      .getByRole("table", { name: "Batch runs" })
      .getByRole("link", { name: "e2e-publish-ui" })
      .first()
      .click();
    await page.getByRole("heading", { name: "e2e-publish-ui" }).waitFor();
    const title = (await workspaceRow(/^Workspace .*fleet\/svc-0$/).getAttribute(
      "aria-label",
    ))!.replace(/^Workspace /, "");
    await workspaceRow(title)
      .getByRole("button", { name: `Take over ${title}` })
      .click();
    await page.waitForURL(/\/sessions\/[0-9a-f-]{36}$/, { timeout: 60_000 });
    const context = page.getByRole("article", { name: "Context from Deckhand" });
    await context.getByText(/Taken over from the batch change/).waitFor();
    expect(await context.textContent()).toMatch(/\+hello from \S*fleet\/svc-0/);
  }, 90_000);

  it("raised no error in the page on the way", () => {
    expect(browser.pageErrors).toEqual([]);
  });
});
