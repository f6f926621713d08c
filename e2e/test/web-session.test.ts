// The session screen as a workspace, in a real Chromium (Debian's, through playwright-core)
// against its own `deckhand up` with the fake model and the scripted ACP agent: the composer
// talks to the session's own agent, the chat follows its output and brings permission requests
// into view, the tab title says when a session needs input, the person's text is shown as
// written, and the chat, review and processes sit side by side on a wide screen.
import { turn } from "@deckhand/testkit";
import {
  type Project,
  type ProvidersSnapshot,
  ServerPath,
  type Session,
  serverPath,
} from "@deckhand/wire";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  capture,
  expectNoPageErrors,
  type OpenedBrowser,
  openBrowser,
  recordBudgets,
} from "./browser.ts";
import { type DeckhandUp, startDeckhandUp } from "./deckhand-up.ts";

const ADMIN_TOKEN = "e2e-admin-token-session-0123456789";

let up: DeckhandUp;
let browser: OpenedBrowser;
let page: Page;
let project: Project;

async function api<Body>(method: string, path: string, body?: unknown): Promise<Body> {
  const response = await fetch(`${up.server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return (text ? JSON.parse(text) : null) as Body;
}

/** A session made through the API, as another client (or a batch take-over) would. */
async function createSession(title: string, agent: string): Promise<Session> {
  return api<Session>("POST", serverPath(ServerPath.projectSessions, { project_id: project.id }), {
    title,
    agent,
  });
}

/** Whether the element's box lies inside the browser's viewport (what a person can see). */
async function inViewport(selector: ReturnType<Page["locator"]>): Promise<boolean> {
  const box = await selector.boundingBox();
  if (box === null) return false;
  const viewport = page.viewportSize()!;
  return box.y >= 0 && box.y + box.height <= viewport.height + 1;
}

/** The region the chat's messages are in. */
const chatLog = () => page.getByRole("log", { name: "Messages" });

beforeAll(async () => {
  up = await startDeckhandUp({ adminToken: ADMIN_TOKEN });
  project = await api<Project>("POST", ServerPath.projects, {
    repository_path: up.repository.path,
  });
  // A session for the scripted agent wants it ready: it is probed once after start-up.
  await vi.waitFor(
    async () => {
      const snapshot = await api<ProvidersSnapshot>(
        "GET",
        `${ServerPath.providersSnapshot}?project_id=${project.id}`,
      );
      const scripted = snapshot.providers.find((provider) => provider.id === "scripted");
      if (scripted?.status !== "ready") throw new Error(`scripted is ${scripted?.status}`);
    },
    { timeout: 30_000, interval: 250 },
  );
  browser = await openBrowser({ token: ADMIN_TOKEN });
  page = browser.page;
});

afterAll(async () => {
  await browser?.close();
  await up?.close();
});

describe("the session screen", () => {
  it("sends to the session's own agent when the session is opened from the Sessions list", async () => {
    await createSession("scripted from the list", "scripted");
    await page.goto(`${up.server.url}/sessions`);
    await page.getByRole("link", { name: "scripted from the list" }).click();
    await page.getByRole("heading", { name: "scripted from the list" }).waitFor();
    // The URL carries no ?agent=: the session's own agent is the composer's.
    expect(page.url()).not.toContain("agent=");
    await expect
      .poll(() => page.getByLabel("Agent", { exact: true }).inputValue())
      .toBe("scripted");
    await page.getByRole("textbox", { name: "Message" }).fill("hello there");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByRole("article", { name: "scripted answer" }).last().waitFor();
    expect(await page.getByRole("article", { name: "deckhand answer" }).count()).toBe(0);
  });

  it("shows the person's message as written, not as markdown", async () => {
    const text = "rename __name__ to *value*\nsecond line\n\n  indented third";
    await page.getByRole("textbox", { name: "Message" }).fill(text);
    await page.getByRole("button", { name: "Send" }).click();
    const mine = page.getByRole("article", { name: "Your message" }).last();
    await mine.getByText("second line", { exact: false }).waitFor();
    expect(await mine.locator("strong, em").count()).toBe(0);
    expect(await mine.locator(".user-text").textContent()).toBe(text);
    await page.getByRole("article", { name: "scripted answer" }).nth(1).waitFor();
  });

  it("keeps what the person types while their last message is still on its way", async () => {
    const box = page.getByRole("textbox", { name: "Message" });
    const send = page.getByRole("button", { name: "Send" });
    // The server's answer to the first message is held until the next one is typed, as on a
    // loaded machine (where the agent's answer may even arrive first, over the stream).
    let release = () => {};
    const held = new Promise<void>((resolveHeld) => {
      release = resolveHeld;
    });
    await page.route(/\/api\/chats\/[^/]+\/messages$/, async (route) => {
      if (route.request().method() !== "POST") return route.fallback();
      await held;
      return route.continue();
    });
    try {
      await box.fill("the first of two");
      await send.click();
      await expect.poll(() => send.isDisabled()).toBe(true);
      await box.fill("the second of two");
      release();
      // Sent, the first message goes from the box; the second, typed meanwhile, stays.
      await expect.poll(() => send.isEnabled(), { timeout: 60_000 }).toBe(true);
      expect(await box.inputValue()).toBe("the second of two");
      await page
        .getByRole("article", { name: "Your message" })
        .getByText("the first of two", { exact: true })
        .waitFor();
    } finally {
      release();
      await page.unrouteAll({ behavior: "wait" });
      await box.fill("");
    }
  });

  it("follows the chat's output, brings a permission request into view, and says so in the tab title", async () => {
    const session = await createSession("following", "deckhand");
    await page.goto(`${up.server.url}/sessions/${session.id}`);
    await page.getByRole("heading", { name: "following" }).waitFor();
    const paragraphs = Array.from({ length: 80 }, (_, index) => `paragraph ${index + 1}`);
    up.model.script([turn.text(paragraphs.join("\n\n"), { chunkDelayMs: 15 })]);
    await page.getByRole("textbox", { name: "Message" }).fill("write a long answer");
    await page.getByRole("button", { name: "Send" }).click();
    const answer = page.getByRole("article", { name: "deckhand answer" }).last();
    // While it streams, and once it is done, its newest line is in view.
    await answer.getByText("paragraph 40", { exact: true }).waitFor();
    await expect.poll(() => inViewport(answer.getByText(/^paragraph \d+$/).last())).toBe(true);
    await answer.getByText("paragraph 80", { exact: true }).waitFor();
    await expect
      .poll(() => inViewport(answer.getByText("paragraph 80", { exact: true })))
      .toBe(true);

    // A command the native agent asks about: the request comes into view, above the composer.
    up.model.script([
      turn.functionCall("execute", { command: "touch asked.txt && ls" }),
      turn.text("done asking"),
    ]);
    await page.getByRole("textbox", { name: "Message" }).fill("ask me first");
    await page.getByRole("button", { name: "Send" }).click();
    const permission = page.getByRole("region", { name: /^Permission requested/ });
    await permission.waitFor();
    await expect.poll(() => inViewport(permission)).toBe(true);
    const composer = await page.getByRole("form", { name: "Composer" }).boundingBox();
    const card = await permission.boundingBox();
    expect(card!.y + card!.height).toBeLessThanOrEqual(composer!.y + 1);
    // The tab says the session waits for the person.
    await expect.poll(() => page.title()).toMatch(/^\(Needs input\) /);
    expect(await page.locator('link[rel="icon"]').getAttribute("href")).toContain("attention");
    await permission.getByRole("button", { name: /Allow once/i }).click();
    await permission.waitFor({ state: "detached" });
    await page.getByText("done asking").waitFor();
    await expect.poll(() => page.title()).not.toMatch(/Needs input/);

    // Scrolled up, the chat stays put and offers a way back to the newest output.
    up.model.script([turn.text(paragraphs.join("\n\n"), { chunkDelayMs: 15 })]);
    await page.getByRole("textbox", { name: "Message" }).fill("once more");
    await page.getByRole("button", { name: "Send" }).click();
    await page
      .getByRole("article", { name: "deckhand answer" })
      .last()
      .getByText("paragraph 5", { exact: true })
      .waitFor();
    await chatLog().hover();
    await page.mouse.wheel(0, -4000);
    const jump = page.getByRole("button", { name: "Jump to latest" });
    await jump.waitFor();
    const last = page.getByRole("article", { name: "deckhand answer" }).last();
    await last.getByText("paragraph 80", { exact: true }).waitFor();
    expect(await inViewport(last.getByText("paragraph 80", { exact: true }))).toBe(false);
    await jump.click();
    await expect.poll(() => inViewport(last.getByText("paragraph 80", { exact: true }))).toBe(true);
    await jump.waitFor({ state: "detached" });
    await capture(page, "session-chat");
  });

  it("reviews like a code review: one number column per side when split, and comments sent as separate items", async () => {
    up.model.script([
      turn.functionCall("execute", { command: "printf 'one\\ntwo\\n' > pair.txt" }),
      turn.text("wrote pair.txt"),
    ]);
    await page.getByRole("textbox", { name: "Message" }).fill("write pair.txt");
    await page.getByRole("button", { name: "Send" }).click();
    const permission = page.getByRole("region", { name: /^Permission requested/ });
    await permission.getByRole("button", { name: /Allow once/i }).click();
    const change = page.getByRole("region", { name: "Change to pair.txt" });
    await change.waitFor({ timeout: 30_000 });

    // Side by side, each half has its own line numbers: the old file's left, the new file's right.
    await page.getByRole("radio", { name: "Split" }).check();
    const right = change.locator('.diff-half[data-side="right"]');
    await expect.poll(() => right.locator(".diff-text").allTextContents()).toEqual(["one", "two"]);
    for (const half of await right.all()) {
      expect(await half.locator(".diff-number").allTextContents()).toHaveLength(1);
    }
    expect(await right.first().locator(".diff-number").textContent()).toBe("1");
    await page.getByRole("radio", { name: "Unified" }).check();

    // Two comments go out as two quoted items, each on its own lines, in the chat as sent.
    await change.getByRole("button", { name: "Comment on pair.txt line 1" }).click();
    await change.getByLabel("Comment on pair.txt:1").fill("start at zero");
    await change.getByRole("button", { name: "Add comment" }).click();
    await change.getByRole("button", { name: "Comment on pair.txt line 2" }).click();
    await change.getByLabel("Comment on pair.txt:2").fill("say three");
    await change.getByRole("button", { name: "Add comment" }).click();
    up.model.script([turn.text("noted both")]);
    const before = up.model.requests.length;
    await page.getByRole("textbox", { name: "Message" }).fill("see my comments");
    await page.getByRole("button", { name: "Send" }).click();
    const mine = page.getByRole("article", { name: "Your message" }).last();
    await mine.getByText("see my comments", { exact: false }).waitFor();
    const shown = (await mine.locator(".user-text").textContent()) ?? "";
    expect(shown.split("\n")).toEqual(
      expect.arrayContaining(["> pair.txt:1 — start at zero", "> pair.txt:2 — say three"]),
    );
    await page.getByText("noted both").waitFor();
    const sent = up.model.requests
      .slice(before)
      .map((request) => request.body)
      .join("\n");
    expect(sent).toContain("> pair.txt:1 — start at zero\\n\\n> pair.txt:2 — say three");
    await capture(page, "session-review");
  });

  it("lists sessions densely by last activity, as a board by status, and asks before archiving one with changes to review", async () => {
    await page.goto(`${up.server.url}/sessions`);
    const table = page.getByRole("table", { name: "Sessions" });
    const following = table.getByRole("row").filter({
      has: page.getByRole("link", { name: "following", exact: true }),
    });
    await following.waitFor();
    // Its agent, the changes waiting for review, and when it last moved.
    expect(await following.textContent()).toContain("deckhand");
    await following.getByText("2 to review").waitFor();
    expect(await following.locator("time").textContent()).toMatch(/just now|min ago/);
    // The most recently active first.
    expect(await table.locator("tbody tr").first().getByRole("link").first().textContent()).toBe(
      "following",
    );
    await capture(page, "sessions-list");

    await page.getByRole("radio", { name: "Board" }).check();
    const idle = page.getByRole("region", { name: /^Idle/ });
    await idle.getByRole("link", { name: "following", exact: true }).waitFor();
    await page.getByRole("region", { name: /^Needs input/ }).waitFor();
    await capture(page, "sessions-board");
    await page.getByRole("radio", { name: "List" }).check();

    await following.getByRole("button", { name: "Archive following" }).click();
    const dialog = page.getByRole("dialog", { name: "Archive following?" });
    await dialog.getByText(/2 changes wait for review/).waitFor();
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "hidden" });
    expect(await following.count()).toBe(1);
  });

  it("works by keyboard: Escape leaves the composer, arrows move between tabs, and applying keeps the focus in the review", async () => {
    await page.getByRole("link", { name: "following", exact: true }).click();
    await page.getByRole("heading", { name: "following" }).waitFor();
    const activeLabel = () =>
      page.evaluate(
        "document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.getAttribute('role') ?? document.activeElement?.tagName",
      );
    await page.getByRole("textbox", { name: "Message" }).focus();
    await page.keyboard.type("draft");
    await page.keyboard.press("Escape");
    expect(await activeLabel()).toBe("Messages");
    // The draft stays where it was left.
    expect(await page.getByRole("textbox", { name: "Message" }).inputValue()).toBe("draft");

    await page.getByRole("tab", { name: /^Review/ }).focus();
    await page.keyboard.press("ArrowRight");
    expect(await page.getByRole("tab", { name: /^Processes/ }).getAttribute("aria-selected")).toBe(
      "true",
    );
    await page.keyboard.press("ArrowLeft");
    expect(await page.getByRole("tab", { name: /^Review/ }).getAttribute("aria-selected")).toBe(
      "true",
    );

    await page.getByRole("button", { name: "Apply asked.txt" }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("region", { name: "Change to asked.txt" }).waitFor({ state: "detached" });
    await expect.poll(activeLabel).toBe("Change to pair.txt");
    await page.getByRole("textbox", { name: "Message" }).fill("");
  });

  it("starts a session from a prompt: project, a branch of the repository, and the first message", async () => {
    up.repository.git("branch", "feature/prompt");
    const branchCommit = up.repository.git("rev-parse", "feature/prompt").trim();
    await page.goto(`${up.server.url}/sessions`);
    await page.getByRole("link", { name: "New session" }).click();
    await page.getByRole("heading", { name: "New session" }).waitFor();
    await page.getByLabel("What should the agent do?").fill("tidy the README\nand say so");
    const branch = page.getByLabel("Start from branch");
    await expect
      .poll(() => branch.locator("option").allTextContents())
      .toEqual(expect.arrayContaining(["feature/prompt"]));
    await branch.selectOption("feature/prompt");
    await page.getByLabel("Agent", { exact: true }).selectOption({ label: "Scripted ACP agent" });
    await capture(page, "session-new-prompt");
    await page.getByRole("button", { name: "Start session" }).click();
    await page.waitForURL(/\/sessions\/[0-9a-f-]{36}$/);
    await page.getByRole("heading", { name: "tidy the README" }).waitFor();
    await page.getByRole("article", { name: "Your message" }).getByText("and say so").waitFor();
    await page.getByRole("article", { name: "scripted answer" }).waitFor();
    const id = /\/sessions\/([0-9a-f-]{36})$/.exec(page.url())![1]!;
    const session = await api<Session>("GET", serverPath(ServerPath.session, { session_id: id }));
    expect(session).toMatchObject({ agent: "scripted", base_commit: branchCommit });
  });

  it("records the budgets: route to first content, and typing in the composer", async () => {
    /** Milliseconds from the latest route mark to the first-content mark of `screen`. */
    const routeToContent = async (screen: string): Promise<number> => {
      await expect
        .poll(() =>
          page.evaluate(
            `performance.getEntriesByName("deckhand:first-content").some((mark) => mark.detail === ${JSON.stringify(screen)})`,
          ),
        )
        .toBe(true);
      return Number(
        await page.evaluate(`(() => {
          const content = performance.getEntriesByName("deckhand:first-content").filter((mark) => mark.detail === ${JSON.stringify(screen)}).at(-1);
          const route = performance.getEntriesByName("deckhand:route").filter((mark) => mark.startTime <= content.startTime).at(-1);
          return Math.round(content.startTime - (route ? route.startTime : 0));
        })()`),
      );
    };
    // A full load of the Sessions list, then a link followed to a session.
    await page.goto(`${up.server.url}/sessions`);
    const sessionsLoad = Number(
      await page.evaluate(`new Promise((resolve) => {
        const found = () => performance.getEntriesByName("deckhand:first-content").find((mark) => mark.detail === "sessions");
        const check = () => (found() ? resolve(Math.round(found().startTime)) : setTimeout(check, 20));
        check();
      })`),
    );
    await page.getByRole("link", { name: "following", exact: true }).click();
    const sessionRoute = await routeToContent("session");
    await page
      .getByRole("navigation", { name: "Main" })
      .getByRole("link", { name: "Batch changes" })
      .click();
    const batchesRoute = await routeToContent("batches");

    // Typing: from each keystroke's input event to the end of its handling (React renders a
    // controlled text box's update within the event, before a listener on window runs last).
    await page
      .getByRole("navigation", { name: "Main" })
      .getByRole("link", { name: /^Sessions/ })
      .click();
    await page.getByRole("link", { name: "following", exact: true }).click();
    const box = page.getByRole("textbox", { name: "Message" });
    await box.click();
    await page.evaluate(`(() => {
      window.deckhandTyping = [];
      window.addEventListener("input", (event) => {
        window.deckhandTyping.push(performance.now() - event.timeStamp);
      });
    })()`);
    await page.keyboard.type("the quick brown fox jumps over the lazy dog ".repeat(3), {
      delay: 25,
    });
    await expect
      .poll(() => page.evaluate("window.deckhandTyping.length"))
      .toBeGreaterThanOrEqual(120);
    const typing = ((await page.evaluate("window.deckhandTyping")) as number[]).sort(
      (left, right) => left - right,
    );
    const p95 = typing[Math.floor(typing.length * 0.95)]!;
    await page.keyboard.press("ControlOrMeta+a");
    await page.keyboard.press("Delete");
    recordBudgets({
      route_sessions_full_load_first_content_ms: sessionsLoad,
      route_sessions_to_session_first_content_ms: sessionRoute,
      route_session_to_batches_first_content_ms: batchesRoute,
      composer_typing_p95_ms: Number(p95.toFixed(1)),
    });
  });

  it("raised no error in the page on the way", () => {
    expectNoPageErrors(browser, up.server);
  });
});
