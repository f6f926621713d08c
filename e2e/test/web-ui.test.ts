// The browser UI end to end: `deckhand up` serves apps/web's build at `/`, and a real Chromium
// (Debian's, driven by playwright-core) uses it as a person would: add a project, start a
// session, chat with the native agent (fake model) and the scripted ACP agent, answer a
// permission, review and apply the change, and survive a dropped stream mid-turn.
import { turn } from "@deckhand/testkit";
import { ServerPath, serverPath, WirePath } from "@deckhand/wire";
import type { Page, WebSocketRoute } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  capture,
  expectNoPageErrors,
  type OpenedBrowser,
  openBrowser,
  recordBudgets,
} from "./browser.ts";
import { type DeckhandUp, startDeckhandUp } from "./deckhand-up.ts";
import { waitFor } from "./wait-for.ts";

/** The server wants a token, as beyond loopback: every screen below runs with one. */
const ADMIN_TOKEN = "e2e-admin-token-0123456789abcdef";

let up: DeckhandUp;
let browser: OpenedBrowser;
let page: Page;

beforeAll(async () => {
  // A second model for the native agent, so a message can choose it.
  up = await startDeckhandUp({ adminToken: ADMIN_TOKEN, config: { nativeModels: ["gpt-5-mini"] } });
  // The browser logs each 401 the token test provokes on purpose. It also logs a 503 from the
  // health check that the dropped stream sets off, when that check finds the workspace agent
  // slower than the server's one-second probe (a loaded machine): the answer says the database
  // and queue are up, so the page rightly keeps the server reachable. Anything else counts.
  browser = await openBrowser({
    allowConsoleErrors: /status of 401|status of 503 .*\/api\/health\)$/,
  });
  page = browser.page;
});

afterAll(async () => {
  await browser?.close();
  await up?.close();
});

/** What the session's agents are doing, as the API says (`running` while a turn is in progress). */
async function sessionActivity(sessionId: string): Promise<string> {
  const answer = await fetch(
    `${up.server.url}${serverPath(ServerPath.session, { session_id: sessionId })}`,
    { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
  );
  expect(answer.status).toBe(200);
  return ((await answer.json()) as { activity: string }).activity;
}

/** Allows the permission the agent asks next (its `y` shortcut: allow once). */
async function allowNextPermission(): Promise<void> {
  const card = page.getByRole("region", { name: /^Permission requested/ });
  await card.waitFor();
  await page.locator("body").click({ position: { x: 1, y: 1 } });
  await page.keyboard.press("y");
  await card.waitFor({ state: "detached" });
}

describe("the web UI served by deckhand up", () => {
  it("serves the app at / with cache headers, falls back to index.html, and leaves /api alone", async () => {
    const index = await fetch(`${up.server.url}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get("content-type")).toContain("text/html");
    expect(index.headers.get("cache-control")).toBe("no-cache");
    const html = await index.text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${up.server.url}${script}`);
    expect(asset.headers.get("content-type")).toContain("javascript");
    expect(asset.headers.get("cache-control")).toContain("immutable");
    await asset.body?.cancel();

    const clientRoute = await fetch(`${up.server.url}/sessions/some-session`);
    expect(clientRoute.status).toBe(200);
    // The same page, with a nonce of its own (see the Content Security Policy).
    const withoutNonce = (text: string) => text.replaceAll(/nonce="[^"]+"/g, 'nonce=""');
    expect(withoutNonce(await clientRoute.text())).toBe(withoutNonce(html));
    const missingAsset = await fetch(`${up.server.url}/assets/missing-0000.js`);
    expect(missingAsset.status).toBe(404);
    await missingAsset.body?.cancel();
    const unknownApi = await fetch(`${up.server.url}${WirePath.serverApi}/no-such-route`);
    // The API's own answer (here its 401, as it wants a token), never the UI's index.html.
    expect(unknownApi.status).toBe(401);
    expect(unknownApi.headers.get("content-type")).toContain("application/json");
    await unknownApi.body?.cancel();
  });

  let sessionUrl: string;

  it("asks for the token when the API answers 401, and refuses a wrong one", async () => {
    await page.goto(up.server.url);
    await page.getByRole("heading", { name: "Token required" }).waitFor();
    await capture(page, "token");
    await page.getByLabel("Token").fill("not-the-token-at-all");
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByText("The server refused the token you gave.").waitFor();
    await page.getByLabel("Token").fill(ADMIN_TOKEN);
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByRole("heading", { name: "Projects" }).waitFor();
    // Kept for this tab only.
    expect(await page.evaluate("sessionStorage.getItem('deckhand.token')")).toBe(ADMIN_TOKEN);
  });

  it("adds a project from a local path and starts a session with a ready agent", async () => {
    await page.getByRole("heading", { name: "Projects" }).waitFor();
    await capture(page, "projects-empty");
    await page.getByLabel("Repository path on the server").fill(up.repository.path);
    await page.getByRole("button", { name: "Add project" }).click();
    const newSession = page.getByRole("link", { name: /^New session in / });
    await newSession.waitFor();
    await newSession.click();
    await page.getByRole("heading", { name: /^New session in / }).waitFor();
    // Both the native agent and the scripted ACP agent are ready (the latter once probed).
    await expect
      .poll(() => page.getByLabel("Agent").locator("option").allTextContents(), {
        timeout: 60_000,
      })
      .toEqual(expect.arrayContaining(["Scripted ACP agent"]));
    await capture(page, "new-session");
    await page.getByLabel("Title").fill("browser e2e");
    await page.getByLabel("Agent").selectOption("deckhand");
    await page.getByRole("button", { name: "Start session" }).click();
    await page.getByRole("heading", { name: "browser e2e" }).waitFor();
    sessionUrl = page.url();
    expect(sessionUrl).toMatch(/\/sessions\/[0-9a-f-]+\?agent=deckhand$/);
  });

  it("streams the native agent's markdown answer from the fake model", async () => {
    up.model.script([
      turn.text("Here is **bold** news.\n\n- first item\n- second item", { chunkDelayMs: 30 }),
    ]);
    await page.getByRole("textbox", { name: "Message" }).fill("tell me something");
    await page.getByRole("button", { name: "Send" }).click();
    const answer = page.getByRole("article", { name: "deckhand answer" }).last();
    await answer.locator("strong", { hasText: "bold" }).waitFor();
    await answer.getByRole("listitem").filter({ hasText: "second item" }).waitFor();
    await expect
      .poll(() => answer.getAttribute("data-status"), { timeout: 60_000 })
      .toBe("complete");
    await capture(page, "chat");
  });

  it("draws the native agent's command as a command card: the command, its exit code and output", async () => {
    up.model.script([
      turn.functionCall("execute", { command: "echo hello from execute" }),
      turn.text("I ran it."),
    ]);
    await page.getByLabel("Agent").selectOption("deckhand");
    await page.getByRole("textbox", { name: "Message" }).fill("run echo");
    await page.getByRole("button", { name: "Send" }).click();
    const answer = page.getByRole("article", { name: "deckhand answer" }).last();
    await answer.getByText("I ran it.").waitFor();
    const card = answer.getByRole("region", { name: /^Tool call: / });
    // One line until opened: the command, its exit code and time.
    const summary = card.locator("summary");
    expect(await summary.textContent()).toMatch(/echo hello from execute.*exit 0/);
    await summary.click();
    await card.locator(".command", { hasText: "echo hello from execute" }).waitFor();
    expect(await card.locator(".facts").textContent()).toContain("exit code0");
    expect(await card.locator(".output").textContent()).toBe("hello from execute\n");
  });

  it("shows the agent's background process with live output, and ends it with SIGTERM", async () => {
    up.model.script([
      turn.functionCall("execute", {
        command: "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done",
        run_in_background: true,
      }),
      turn.text("Started the ticker."),
    ]);
    await page.getByLabel("Agent").selectOption("deckhand");
    await page.getByRole("textbox", { name: "Message" }).fill("start a ticker");
    await page.getByRole("button", { name: "Send" }).click();
    // A loop is no command known to be safe: the session's on-request policy asks first.
    const permission = page.getByRole("region", { name: /^Permission requested/ });
    await permission.waitFor();
    await page.locator("body").click({ position: { x: 1, y: 1 } });
    await page.keyboard.press("y");
    await permission.waitFor({ state: "detached" });
    const answer = page.getByRole("article", { name: "deckhand answer" }).last();
    await answer.getByText("Started the ticker.").waitFor();
    // The processes are a tab of the side pane, beside the review.
    await page.getByRole("tab", { name: /^Processes/ }).click();
    const panel = page.getByRole("region", { name: /^Processes \(/ });
    const card = panel.getByRole("region", { name: /^Process i=0; while true/ });
    await card.locator(".badge", { hasText: "running" }).waitFor();
    const output = card.getByLabel(/^Output of /);
    // Live: ticks keep arriving while the page follows the output.
    await output.getByText(/tick 3\b/).waitFor();
    await output.getByText(/tick 6\b/).waitFor();
    await capture(page, "processes");
    await card.getByRole("button", { name: "Terminate (SIGTERM)" }).click();
    await card.locator(".badge", { hasText: "exited by SIGTERM" }).waitFor();
    // Nothing is left to signal, so the buttons go; the output ends where the process stopped.
    await expect.poll(() => card.getByRole("button").count(), { timeout: 60_000 }).toBe(0);
    const ticks = ((await output.textContent()) ?? "").match(/tick \d+/g) ?? [];
    expect(ticks.map((tick) => Number(tick.slice(5)))).toEqual(ticks.map((_, index) => index + 1));
    await page.getByRole("tab", { name: /^Review/ }).click();
  });

  it("draws the native agent's apply_patch edit as added and removed lines", async () => {
    up.model.script([
      turn.functionCall("apply_patch", {
        patch: [
          "*** Begin Patch",
          "*** Add File: native.txt",
          "+from the native agent",
          "*** End Patch",
        ].join("\n"),
      }),
      turn.text("Added native.txt."),
    ]);
    await page.getByLabel("Agent").selectOption("deckhand");
    await page.getByRole("textbox", { name: "Message" }).fill("add native.txt");
    await page.getByRole("button", { name: "Send" }).click();
    const answer = page.getByRole("article", { name: "deckhand answer" }).last();
    await answer.getByText("Added native.txt.").waitFor();
    const patch = answer.getByLabel("Patch");
    expect(await patch.locator(".patch-insert").allTextContents()).toEqual([
      "+from the native agent\n",
    ]);
  });

  it("answers the scripted ACP agent's permission with a key, applies its change and rejects another", async () => {
    await page.getByLabel("Agent").selectOption("scripted");
    await page
      .getByRole("textbox", { name: "Message" })
      .fill("edit web.txt written from the browser");
    await page.getByRole("button", { name: "Send" }).click();
    const card = page.getByRole("region", { name: /^Permission requested/ });
    await card.waitFor();
    // The agent's own options, each with its shortcut.
    await expect.poll(() => card.getByRole("button").count()).toBe(4);
    await capture(page, "permission");
    await page.locator("body").click({ position: { x: 1, y: 1 } });
    await page.keyboard.press("y");
    await card.waitFor({ state: "detached" });
    await page
      .getByRole("article", { name: "scripted answer" })
      .last()
      .getByText("edited web.txt")
      .waitFor();

    const change = page.getByRole("region", { name: "Change to web.txt" });
    await change.waitFor();
    await expect
      .poll(() => change.locator('.diff-row[data-kind="insert"] .diff-text').allTextContents())
      .toEqual(["written from the browser"]);
    await capture(page, "review");
    await change.getByRole("button", { name: "Apply web.txt" }).click();
    await change.waitFor({ state: "detached" });
    const session = /\/sessions\/([0-9a-f-]+)/.exec(sessionUrl)![1]!;
    const branch = up.repository.git(
      "for-each-ref",
      "--format=%(refname:short)",
      "refs/heads/deckhand/",
    );
    expect(branch).toContain(session.slice(0, 8));
    expect(up.repository.git("show", `${branch.trim()}:web.txt`)).toBe("written from the browser");

    // The native agent's native.txt (from the patch test above) is rejected instead.
    const rejected = page.getByRole("region", { name: "Change to native.txt" });
    await rejected.getByRole("button", { name: "Reject native.txt" }).click();
    await rejected.waitFor({ state: "detached" });
    await page.getByRole("heading", { name: "Pending changes (0)" }).waitFor();
    // Rejected, not applied: the session branch never gets it.
    expect(up.repository.git("ls-tree", "--name-only", branch.trim())).not.toContain("native.txt");
  });

  it("reviews a 50,000-line change in a virtualised diff, unified and split, and rejects all", async () => {
    up.model.script([
      turn.functionCall("execute", {
        command: "seq 1 50000 > big.txt && printf 'one\\ntwo\\n' > small.txt",
      }),
      turn.text("wrote big.txt"),
    ]);
    await page.getByLabel("Agent").selectOption("deckhand");
    await page.getByRole("textbox", { name: "Message" }).fill("write big.txt");
    await page.getByRole("button", { name: "Send" }).click();
    await allowNextPermission();
    await page
      .getByRole("article", { name: "deckhand answer" })
      .last()
      .getByText("wrote big.txt")
      .waitFor();
    const big = page.getByRole("region", { name: "Change to big.txt" });
    await big.waitFor();
    const tree = page.getByRole("navigation", { name: "Changed files" });
    expect(await tree.getByRole("button", { name: /^big\.txt/ }).textContent()).toContain("+50000");

    // First paint from navigation: the app marks when a file's first diff rows are on screen.
    await page.reload();
    await big.locator(".diff-row").first().waitFor();
    const firstRowMs = Number(
      await page.evaluate(
        `performance.getEntriesByName("deckhand:diff-first-row").find((mark) => mark.detail === "big.txt")?.startTime ?? -1`,
      ),
    );
    expect(firstRowMs).toBeGreaterThan(0);
    recordBudgets({ review_50000_line_diff_first_row_ms: Math.round(firstRowMs) });

    // Virtualised: a few dozen rows in the DOM, never the 50,000, wherever the scroll is.
    expect(await big.locator(".diff-row").count()).toBeLessThan(500);
    const viewport = big.getByRole("region", { name: /^Diff of big\.txt, 50000 added/ });
    // The diff scrolls by keyboard: End goes to its last line.
    await viewport.focus();
    await page.keyboard.press("End");
    await viewport
      .locator(".diff-text")
      .filter({ hasText: /^50000$/ })
      .waitFor();
    expect(await big.locator(".diff-row").count()).toBeLessThan(500);

    await page.getByRole("radio", { name: "Split" }).check();
    await page.getByRole("checkbox", { name: "Wrap lines" }).check();
    const small = page.getByRole("region", { name: "Change to small.txt" });
    await expect
      .poll(() => small.locator('.diff-half[data-side="right"] .diff-text').allTextContents())
      .toEqual(["one", "two"]);
    await capture(page, "review-split");
    await page.getByRole("radio", { name: "Unified" }).check();

    // A comment per line, queued in the page (and removable) until the next message is sent.
    await small.getByRole("button", { name: "Comment on small.txt line 2" }).click();
    await small.getByLabel("Comment on small.txt:2").fill("say three instead");
    await small.getByRole("button", { name: "Add comment" }).click();
    await big.getByRole("button", { name: "Comment on big.txt line 50000" }).click();
    await big.getByLabel("Comment on big.txt:50000").fill("drop the last line");
    await big.getByRole("button", { name: "Add comment" }).click();
    const queued = page.getByRole("region", { name: "Review comments for the next message" });
    await expect.poll(() => queued.getByRole("listitem").count()).toBe(2);
    await queued.getByRole("button", { name: "Remove comment on big.txt:50000" }).click();
    await expect.poll(() => queued.getByRole("listitem").count()).toBe(1);
    up.model.script([turn.text("noted")]);
    const before = up.model.requests.length;
    await page.getByRole("textbox", { name: "Message" }).fill("please look");
    await page.getByRole("button", { name: "Send" }).click();
    await queued.waitFor({ state: "detached" });
    const noted = page.getByRole("article", { name: "deckhand answer" }).last();
    await noted.getByText("noted").waitFor();
    // Changes cannot be resolved while the session's turn still runs (the server answers 409).
    await expect
      .poll(() => noted.getAttribute("data-status"), { timeout: 60_000 })
      .toBe("complete");
    const sent = up.model.requests
      .slice(before)
      .map((request) => request.body)
      .join("\n");
    expect(sent).toContain("> small.txt:2 — say three instead");
    expect(sent).toContain("please look");
    expect(sent).not.toContain("drop the last line");

    await page.getByRole("button", { name: "Reject all" }).click();
    await page.getByRole("heading", { name: "Pending changes (0)" }).waitFor();
    const branch = up.repository
      .git("for-each-ref", "--format=%(refname:short)", "refs/heads/deckhand/")
      .trim();
    expect(up.repository.git("ls-tree", "--name-only", branch)).not.toContain("big.txt");
  });

  it("applies every pending change at once, listed in a file tree by directory", async () => {
    up.model.script([
      turn.functionCall("execute", {
        command: "mkdir -p notes && printf 'a\\n' > one.txt && printf 'b\\n' > notes/two.txt",
      }),
      turn.text("wrote two files"),
    ]);
    await page.getByLabel("Agent").selectOption("deckhand");
    await page.getByRole("textbox", { name: "Message" }).fill("write two files");
    await page.getByRole("button", { name: "Send" }).click();
    await allowNextPermission();
    await page.getByRole("region", { name: "Change to notes/two.txt" }).waitFor();
    await page.getByRole("region", { name: "Change to one.txt" }).waitFor();
    const tree = page.getByRole("navigation", { name: "Changed files" });
    expect(await tree.textContent()).toContain("notes/");
    await tree.getByRole("button", { name: /^two\.txt/ }).click();
    await page.getByRole("button", { name: "Apply all" }).click();
    await page.getByRole("heading", { name: "Pending changes (0)" }).waitFor();
    const branch = up.repository
      .git("for-each-ref", "--format=%(refname:short)", "refs/heads/deckhand/")
      .trim();
    expect(up.repository.git("show", `${branch}:one.txt`)).toBe("a");
    expect(up.repository.git("show", `${branch}:notes/two.txt`)).toBe("b");
  });

  it("shows the scripted agent's reasoning collapsed, its plan and a card per tool call", async () => {
    await page.getByLabel("Agent").selectOption("scripted");
    await page.getByRole("textbox", { name: "Message" }).fill("showcase");
    await page.getByRole("button", { name: "Send" }).click();
    const answer = page.getByRole("article", { name: "scripted answer" }).last();
    await answer.getByText("showcase done").waitFor();
    const reasoning = answer.locator("details.reasoning");
    expect(await reasoning.getAttribute("open")).toBeNull();
    expect(await reasoning.locator("summary").textContent()).toBe("Reasoning");
    await answer.getByRole("region", { name: "Plan" }).getByText("look around").waitFor();
    const tool = answer.getByRole("region", { name: "Tool call: Look at README.md" });
    await tool.locator(".badge", { hasText: "completed" }).waitFor();
    await tool.locator("summary").click();
    await tool.getByText("looked").waitFor();
    await expect.poll(() => answer.getAttribute("data-status")).toBe("complete");
    await capture(page, "tools");
  });

  it("cancels a running turn from its Cancel button", async () => {
    await page.getByLabel("Agent").selectOption("scripted");
    await page.getByRole("textbox", { name: "Message" }).fill("slow 30000");
    await page.getByRole("button", { name: "Send" }).click();
    const answer = page.getByRole("article", { name: "scripted answer" }).last();
    await answer.getByText(/tick 2\b/).waitFor();
    await page.getByRole("button", { name: "Cancel scripted" }).click();
    // On a loaded machine the cancel takes more than the poll's default second to land.
    await expect
      .poll(() => answer.getAttribute("data-status"), { timeout: 60_000 })
      .toBe("cancelled");
    await page.getByRole("button", { name: "Cancel scripted" }).waitFor({ state: "detached" });
  });

  it("resumes a dropped stream from the last event id: no tick lost, none repeated", async () => {
    const connections: string[] = [];
    let current: WebSocketRoute | null = null;
    // Playwright keeps a page's WebSocket routes until the page closes (`unrouteAll` removes
    // HTTP routes only), so once this test ends its route passes connections through unseen.
    let recording = true;
    let releaseFirst = () => {};
    const firstHeld = new Promise<void>((resolveHeld) => {
      releaseFirst = resolveHeld;
    });
    await page.routeWebSocket(/\/api\/sessions\/[^/]+\/stream/, async (socket) => {
      if (recording) {
        connections.push(socket.url());
        current = socket;
        // The page's first connection reaches the server only once the message is sent, as on
        // a loaded machine: until then the chat shows its stored messages (the cancelled
        // answer above has ticks of its own) and the stream has delivered no event.
        if (connections.length === 1) await firstHeld;
      }
      socket.connectToServer();
    });
    const sessionId = /\/sessions\/([0-9a-f-]+)/.exec(sessionUrl)![1]!;
    try {
      await page.reload();
      await page.getByRole("heading", { name: "browser e2e" }).waitFor();
      await page.getByLabel("Agent").selectOption("scripted");
      await page.getByRole("textbox", { name: "Message" }).fill("slow 3000");
      await page.getByRole("button", { name: "Send" }).click();
      releaseFirst();
      // This turn's answer is the one right after this message: the last scripted answer may
      // still be an earlier turn's until this one's first event arrives.
      const answer = page
        .getByRole("article", { name: "Your message" })
        .filter({ has: page.getByText("slow 3000", { exact: true }) })
        .locator('xpath=following-sibling::article[@aria-label="scripted answer"][1]');
      await answer.getByText(/tick 5\b/).waitFor();
      const before = connections.length;
      await (current as WebSocketRoute | null)?.close({
        code: 1011,
        reason: "dropped by the test",
      });
      await expect.poll(() => connections.length, { timeout: 60_000 }).toBeGreaterThan(before);
      const resumedAfter = Number(new URL(connections[before]!).searchParams.get("after"));
      expect(resumedAfter).toBeGreaterThan(0);
      // While the turn still streams (the live view, rebuilt from events), the ticks run on.
      await answer.getByText(/tick 20\b/).waitFor();
      const ticks = ((await answer.textContent()) ?? "").match(/tick \d+/g) ?? [];
      const numbers = ticks.map((tick) => Number(tick.slice(5)));
      expect(numbers).toEqual(numbers.map((_, index) => index + 1));
      await expect
        .poll(() => answer.getAttribute("data-status"), { timeout: 60_000 })
        .toBe("complete");
    } finally {
      recording = false;
      releaseFirst();
      // Pass or fail, the next test starts with this session idle: a turn left running would
      // finish during it (and notify, say).
      await waitFor(
        async () => (await sessionActivity(sessionId)) !== "running",
        "the resumed turn to end",
      );
    }
  });

  it("lists sessions with live status, unread markers, search and archive, and notifies when a session off screen finishes", async () => {
    // The page's Notification records what it is asked to show; the permission is granted.
    await browser.context.grantPermissions(["notifications"]);
    await browser.context.addInitScript(`
      window.shownNotifications = [];
      class RecordingNotification {
        static permission = "granted";
        static requestPermission = async () => "granted";
        onclick = null;
        constructor(title, options) {
          window.shownNotifications.push({ title, body: options?.body });
        }
      }
      Object.defineProperty(window, "Notification", { value: RecordingNotification });
    `);
    const shown = () => page.evaluate("window.shownNotifications");
    const nav = page.getByRole("navigation", { name: "Main" });
    const rows = page.getByRole("table", { name: "Sessions" }).locator("tbody").getByRole("row");
    const row = (title: string) => rows.filter({ has: page.getByRole("link", { name: title }) });

    await page.goto(`${up.server.url}/settings`);
    const desktop = page.getByLabel("Desktop notification");
    await desktop.check();
    await expect.poll(() => desktop.isChecked()).toBe(true);

    await nav.getByRole("link", { name: "Projects" }).click();
    await page.getByRole("link", { name: /^New session in / }).click();
    await page.getByLabel("Title").fill("second e2e");
    await page.getByLabel("Agent").selectOption("scripted");
    await page.getByRole("button", { name: "Start session" }).click();
    await page.getByRole("heading", { name: "second e2e" }).waitFor();
    const secondUrl = page.url();

    // The second session's turn runs on while the first one is on screen, and finishes there.
    await page.getByRole("textbox", { name: "Message" }).fill("slow 6000");
    await page.getByRole("button", { name: "Send" }).click();
    await page
      .getByRole("article", { name: "scripted answer" })
      .last()
      .getByText(/tick 1\b/)
      .waitFor();
    await nav.getByRole("link", { name: /^Sessions/ }).click();
    await row("second e2e").locator(".badge", { hasText: "Running" }).waitFor();
    await row("browser e2e").getByRole("link", { name: "browser e2e" }).click();
    await page.getByRole("heading", { name: "browser e2e" }).waitFor();
    await expect
      .poll(shown, { timeout: 60_000 })
      .toEqual([{ title: "second e2e", body: "The agent finished its turn." }]);
    await nav.getByText("1 unread").waitFor();
    await nav.getByRole("link", { name: /^Sessions/ }).click();
    await row("second e2e").getByText("Unread").waitFor();
    await row("second e2e").locator(".badge", { hasText: "Idle" }).waitFor();
    expect(await row("browser e2e").getByText("Unread").count()).toBe(0);
    await capture(page, "sessions");

    // Opening it marks it read.
    await row("second e2e").getByRole("link", { name: "second e2e" }).click();
    await page.getByRole("heading", { name: "second e2e" }).waitFor();
    expect(page.url()).toBe(secondUrl.replace(/\?.*$/, ""));
    await nav.getByText("1 unread").waitFor({ state: "detached" });

    // A permission waiting for an answer shows as "Needs input".
    await page.getByLabel("Agent").selectOption("scripted");
    await page.getByRole("textbox", { name: "Message" }).fill("edit list.txt from the list");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByRole("region", { name: /^Permission requested/ }).waitFor();
    await nav.getByRole("link", { name: /^Sessions/ }).click();
    await row("second e2e").locator(".badge", { hasText: "Needs input" }).waitFor();

    // Search runs on the server: title, branch or project name.
    await page.getByLabel("Search title, branch or project").fill("second");
    await expect.poll(() => rows.count()).toBe(1);
    await page.getByLabel("Search title, branch or project").fill("");
    await expect.poll(() => rows.count()).toBe(2);

    // Archived sessions hide until "Show archived".
    await page.getByRole("button", { name: "Archive browser e2e" }).click();
    await expect.poll(() => rows.count()).toBe(1);
    await page.getByLabel("Show archived").check();
    await row("browser e2e").getByText("Archived").waitFor();
    await page.getByRole("button", { name: "Unarchive browser e2e" }).click();
    await expect.poll(() => row("browser e2e").getByText("Archived").count()).toBe(0);

    // The waiting turn is answered, so the session ends idle.
    await row("second e2e").getByRole("link", { name: "second e2e" }).click();
    const card = page.getByRole("region", { name: /^Permission requested/ });
    await card.waitFor();
    await page.locator("body").click({ position: { x: 1, y: 1 } });
    await page.keyboard.press("n");
    await card.waitFor({ state: "detached" });
  });

  // Last but one: the events of a 5,000-delta answer make every later page load replay them.
  it("streams a 5,000-delta answer whole, rendering once per frame (long tasks and layout shift recorded)", async () => {
    const words = Array.from({ length: 5000 }, (_, index) =>
      index % 100 === 99 ? `word${index + 1}\n\n` : `word${index + 1}`,
    );
    up.model.script([turn.text(words.join(" "))]);
    await page.evaluate(`(() => {
      window.deckhandBudget = { longestTask: 0, layoutShift: 0 };
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries())
          window.deckhandBudget.longestTask = Math.max(window.deckhandBudget.longestTask, entry.duration);
      }).observe({ type: "longtask" });
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries())
          if (!entry.hadRecentInput) window.deckhandBudget.layoutShift += entry.value;
      }).observe({ type: "layout-shift" });
    })()`);
    await page.getByLabel("Agent").selectOption("deckhand");
    await page.getByRole("textbox", { name: "Message" }).fill("a long answer");
    await page.getByRole("button", { name: "Send" }).click();
    const answer = page.getByRole("article", { name: "deckhand answer" }).last();
    // The server takes tens of seconds to store and fan out 5,000 events on a shared machine,
    // and near two minutes at a load of 25 on two cores.
    await answer.getByText("word5000", { exact: false }).waitFor({ timeout: 240_000 });
    await expect
      .poll(() => answer.getAttribute("data-status"), { timeout: 60_000 })
      .toBe("complete");
    // Every delta arrived once, in order: no word lost or repeated.
    const shown = ((await answer.locator(".markdown").textContent()) ?? "").match(/word\d+/g);
    expect(shown).toEqual(words.map((word) => word.trim()));
    const budget = (await page.evaluate("window.deckhandBudget")) as {
      longestTask: number;
      layoutShift: number;
    };
    recordBudgets({
      chat_5000_delta_longest_task_ms: Math.round(budget.longestTask),
      chat_5000_delta_layout_shift: Number(budget.layoutShift.toFixed(4)),
    });
  }, 330_000);

  it("starts a session with the agent, model and mode chosen, and the agent's turns use them", async () => {
    await page.goto(up.server.url);
    await page
      .getByRole("link", { name: /^New session in / })
      .first()
      .click();
    await page.getByRole("heading", { name: /^New session in / }).waitFor();
    await expect
      .poll(() => page.getByLabel("Agent").locator("option").allTextContents(), {
        timeout: 60_000,
      })
      .toEqual(expect.arrayContaining(["Scripted ACP agent"]));
    await page.getByLabel("Title").fill("chosen settings");
    await page.getByLabel("Agent").selectOption({ label: "Scripted ACP agent" });
    // The chosen agent's own models and modes, from the providers snapshot.
    // A label's name runs on into its select's text: "Model" is matched as its start.
    const model = page.getByRole("combobox", { name: /^Model/ });
    await expect
      .poll(() => model.locator("option").allTextContents())
      .toEqual(["Default (Scripted Large)", "Scripted Large", "Scripted Small"]);
    await model.selectOption({ label: "Scripted Small" });
    await page.getByRole("combobox", { name: /^Mode(?!l)/ }).selectOption({ label: "Code" });
    await page.getByRole("button", { name: "Start session" }).click();
    await page.getByRole("heading", { name: "chosen settings" }).waitFor();
    expect(await page.locator(".session-settings").textContent()).toBe(
      " · scripted · model scripted-small · mode code",
    );
    await page.getByLabel("Agent").selectOption("scripted");
    await page.getByRole("textbox", { name: "Message" }).fill("settings");
    await page.getByRole("button", { name: "Send" }).click();
    // The scripted agent reports what session/set_mode and its model option last set.
    await page
      .getByRole("article", { name: "scripted answer" })
      .last()
      .getByText("mode code model scripted-small")
      .waitFor();

    // A message may choose its own model: the native agent asks the model proxy for it.
    const sessionId = /\/sessions\/([0-9a-f-]+)/.exec(page.url())![1]!;
    const call = (method: string, path: string, body?: unknown) =>
      fetch(`${up.server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const chats = (await (
      await call("GET", serverPath(ServerPath.sessionChats, { session_id: sessionId }))
    ).json()) as { chats: { id: string }[] };
    const messages = serverPath(ServerPath.chatMessages, { chat_id: chats.chats[0]!.id });
    const refused = await call("POST", messages, {
      agent: "deckhand",
      text: "hi",
      model: "gpt-nothing",
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(
      'model "gpt-nothing" is not one of deckhand\'s models: "gpt-5.1-codex", "gpt-5-mini"',
    );
    up.model.script([turn.text("answered by mini")]);
    const sent = await call("POST", messages, {
      agent: "deckhand",
      text: "hi",
      model: "gpt-5-mini",
    });
    expect(sent.status).toBe(202);
    await page
      .getByRole("article", { name: "deckhand answer" })
      .last()
      .getByText("answered by mini")
      .waitFor();
    expect((up.model.requests.at(-1)!.json as { model: string }).model).toBe("gpt-5-mini");
  });

  it("raised no error in the page on the way", () => {
    expectNoPageErrors(browser, up.server);
  });
});
