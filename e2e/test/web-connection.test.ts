// The browser UI across a server restart, in a real Chromium against its own `deckhand up`
// (stopped with SIGTERM and started again on the same address and data directory): one
// "unreachable / reconnecting" banner instead of raw fetch errors, lists that load again once
// the server is back, a message that is kept (not lost) when it cannot be sent, and a shutdown
// that closes the page's streams at once and refuses new messages rather than accepting them.
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

const ADMIN_TOKEN = "e2e-admin-token-connection-0123456789";

let up: DeckhandUp;
let browser: OpenedBrowser;
let page: Page;
let session: Session;

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

beforeAll(async () => {
  up = await startDeckhandUp({ adminToken: ADMIN_TOKEN });
  const project = await api<Project>("POST", ServerPath.projects, {
    repository_path: up.repository.path,
  });
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
  session = await api<Session>(
    "POST",
    serverPath(ServerPath.projectSessions, { project_id: project.id }),
    { title: "across restarts", agent: "scripted" },
  );
  // The browser logs the requests that fail while the server is down: they are the point here.
  browser = await openBrowser({
    token: ADMIN_TOKEN,
    allowConsoleErrors: /ERR_CONNECTION_REFUSED|WebSocket connection|status of 503/,
  });
  page = browser.page;
});

afterAll(async () => {
  await browser?.close();
  await up?.close();
});

const banner = () => page.getByRole("status").filter({ hasText: /server/i });

describe("the web UI across a server restart", () => {
  it("closes the page's stream at once on shutdown and refuses a message instead of taking it", async () => {
    await page.goto(`${up.server.url}/sessions/${session.id}?agent=scripted`);
    await page.getByRole("heading", { name: "across restarts" }).waitFor();
    await page.getByText("stream live").waitFor();
    // A turn still running when the server is told to stop.
    await page.getByRole("textbox", { name: "Message" }).fill("slow 60000");
    await page.getByRole("button", { name: "Send" }).click();
    const answer = page.getByRole("article", { name: "scripted answer" }).last();
    await answer.getByText(/tick 3\b/).waitFor();

    const started = Date.now();
    up.server.child.kill("SIGTERM");
    await vi.waitFor(
      () => {
        if (!up.server.output.some((line) => line.includes('"shutting down'))) {
          throw new Error("the server has not begun to shut down");
        }
      },
      { timeout: 60_000, interval: 20 },
    );
    // Sent once shutdown began: refused (or unreachable), never taken and left unanswered.
    await page.getByRole("textbox", { name: "Message" }).fill("sent during the shutdown");
    await page.getByRole("button", { name: "Send" }).click();
    await page
      .getByRole("alert")
      .filter({ hasText: /shutting down|cannot be reached/ })
      .waitFor();
    expect(
      await page
        .getByRole("article", { name: "Your message" })
        .filter({
          hasText: "sent during the shutdown",
        })
        .count(),
    ).toBe(0);
    expect(await page.getByRole("textbox", { name: "Message" }).inputValue()).toBe(
      "sent during the shutdown",
    );
    expect(await page.getByText("stream live").count()).toBe(0);
    await up.server.exited;
    recordBudgets({ graceful_shutdown_with_running_turn_ms: Date.now() - started });
  }, 90_000);

  it("keeps a message it cannot send, and says the server is unreachable rather than 'Failed to fetch'", async () => {
    await page.getByRole("textbox", { name: "Message" }).fill("written while the server is down");
    await page.getByRole("button", { name: "Send" }).click();
    await banner().waitFor();
    expect(await page.getByText("Failed to fetch").count()).toBe(0);
    expect(await page.getByRole("textbox", { name: "Message" }).inputValue()).toBe(
      "written while the server is down",
    );
    await capture(page, "session-unreachable");
  });

  it("loads the Sessions list again once the server is back, without a stale error", async () => {
    await page
      .getByRole("navigation", { name: "Main" })
      .getByRole("link", { name: /^Sessions/ })
      .click();
    await page.getByRole("heading", { name: "Sessions" }).waitFor();
    await banner().waitFor();
    expect(await page.getByText("Failed to fetch").count()).toBe(0);
    await up.start();
    // The list comes back on its own within a few seconds of the server, and the banner goes.
    await page.getByRole("link", { name: "across restarts" }).waitFor({ timeout: 60_000 });
    await banner().waitFor({ state: "detached", timeout: 60_000 });
    expect(await page.getByText("Failed to fetch").count()).toBe(0);
  }, 90_000);

  it("raised no error in the page on the way", () => {
    expectNoPageErrors(browser, up.server);
  });
});
