// The settings screen in a real Chromium against its own `deckhand up`, configured with a model
// upstream (the fake model) and a code host connection whose token is a canary: providers are
// disabled, refreshed, diagnosed and added through the form (the file on disk is checked), the
// read-only upstream and code host views show variable names and never a secret, and a native
// agent turn's model usage is shown for its session.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SessionStreamClient, scriptedAcpAgentCommand, turn } from "@deckhand/testkit";
import {
  type Chat,
  type Project,
  ServerPath,
  type Session,
  type SessionUsageResponse,
  serverPath,
} from "@deckhand/wire";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capture, type OpenedBrowser, openBrowser } from "./browser.ts";
import { type DeckhandUp, runTurnAndWait, startDeckhandUp, UPSTREAM_KEY } from "./deckhand-up.ts";

const ADMIN_TOKEN = "e2e-admin-token-settings-0123456789";
const CODE_HOST_TOKEN_ENV = "E2E_SETTINGS_GITHUB_TOKEN";
const CODE_HOST_TOKEN = "ghp_e2eSettingsCanaryToken0123456789abcd";

let up: DeckhandUp;
let browser: OpenedBrowser;
let page: Page;

async function api<Body>(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Body }> {
  const response = await fetch(`${up.server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as Body };
}

function providersFile(): { providers: Record<string, Record<string, unknown>> } {
  return JSON.parse(readFileSync(join(up.dataDir, "providers.json"), "utf8"));
}

beforeAll(async () => {
  up = await startDeckhandUp({
    adminToken: ADMIN_TOKEN,
    config: {
      codeHostConnections: [
        { type: "github", url: "https://github.com", tokenEnv: CODE_HOST_TOKEN_ENV },
        {
          type: "gitlab",
          url: "https://gitlab.example.com",
          tokenEnv: "E2E_SETTINGS_UNSET_TOKEN",
          publishRate: { perMinute: 12 },
        },
      ],
    },
    env: { [CODE_HOST_TOKEN_ENV]: CODE_HOST_TOKEN },
  });
  // The 412 test provokes a failed request on purpose; the browser logs it.
  browser = await openBrowser({ token: ADMIN_TOKEN, allowConsoleErrors: /status of 412/ });
  page = browser.page;
  await page.goto(`${up.server.url}/settings`);
  await page.getByRole("heading", { name: "Settings" }).waitFor();
});

afterAll(async () => {
  await browser?.close();
  await up?.close();
});

describe("the settings screen", () => {
  it("disables a provider in settings, and says so plainly when the file changed meanwhile", async () => {
    const scripted = page.getByRole("listitem", { name: "Provider Scripted ACP agent" });
    await scripted.waitFor();
    await scripted.getByRole("button", { name: "Disable Scripted ACP agent" }).click();
    await page.getByRole("status").getByText("Scripted ACP agent is disabled.").waitFor();
    await expect.poll(() => scripted.locator(".badge").textContent()).toBe("Disabled");
    const config = providersFile();
    expect(config.providers.scripted!.enabled).toBe(false);

    await page.getByLabel("Of").selectOption("job");
    await page.getByLabel("Job id").fill("no-such-job");
    await page.getByRole("button", { name: "Show usage" }).click();
    await page.getByText(/^0 requests/).waitFor();
    await capture(page, "settings");

    // Someone else edits providers.json: the page's ETag is stale, the server answers 412.
    config.providers.scripted!.label = "Scripted ACP agent";
    config.providers.scripted!.env = { EDITED_ELSEWHERE: "1" };
    writeFileSync(join(up.dataDir, "providers.json"), JSON.stringify(config, null, 2));
    await scripted.getByRole("button", { name: "Enable Scripted ACP agent" }).click();
    await page
      .getByRole("alert")
      .getByText(/Someone else changed providers\.json/)
      .waitFor();
    // The page reloaded the file's version: trying again works.
    await scripted.getByRole("button", { name: "Enable Scripted ACP agent" }).click();
    await page.getByRole("status").getByText("Scripted ACP agent is enabled.").waitFor();
    expect(providersFile().providers.scripted).toMatchObject({
      enabled: true,
      env: { EDITED_ELSEWHERE: "1" },
    });
  });

  it("gives a provider that is not installed its install command once, to copy", async () => {
    const codex = page.getByRole("listitem", { name: "Provider Codex" });
    await codex.locator(".badge", { hasText: "Not installed" }).waitFor();
    const text = (await codex.textContent()) ?? "";
    expect(text.split("npm install -g @zed-industries/codex-acp").length - 1).toBe(1);
    await codex.getByRole("button", { name: "Copy Codex's install command" }).waitFor();
  });

  it("refreshes one provider, and shows its diagnostic when opened", async () => {
    const scripted = page.getByRole("listitem", { name: "Provider Scripted ACP agent" });
    await scripted.getByRole("button", { name: "Refresh Scripted ACP agent" }).click();
    await page.getByRole("status").getByText("Scripted ACP agent checked again.").waitFor();
    await expect.poll(() => scripted.locator(".badge").textContent()).toBe("Ready");

    // A <summary>, reached by keyboard like a button.
    await scripted.locator("summary", { hasText: "Diagnostic" }).focus();
    await page.keyboard.press("Enter");
    const diagnostic = scripted.locator(".diagnostic-output");
    await diagnostic.waitFor();
    const text = (await diagnostic.textContent()) ?? "";
    expect(text).toContain("resolved:");
    // Variable names only, never values.
    expect(text).toContain("EDITED_ELSEWHERE");
    expect(text).not.toContain('EDITED_ELSEWHERE="1"');
  });

  it("adds a custom ACP agent through the form: it is listed and written to providers.json", async () => {
    const [executable, ...args] = scriptedAcpAgentCommand();
    // A taken id is refused before anything is sent.
    await page.getByLabel("Id", { exact: true }).fill("scripted");
    await page.getByLabel("Command", { exact: true }).fill(executable!);
    await page.getByRole("button", { name: "Add agent" }).click();
    await page
      .getByRole("alert")
      .getByText(/exists already/)
      .waitFor();

    // The refusal is about what was typed: editing it clears the refusal.
    await page.getByLabel("Id", { exact: true }).fill("form-agent");
    await page
      .getByRole("alert")
      .filter({ hasText: /exists already/ })
      .waitFor({ state: "detached" });
    await page.getByLabel("Label (optional)").fill("Form agent");
    await page.getByLabel("Arguments, one per line").fill(args.join("\n"));
    await page.getByRole("button", { name: "Add variable" }).click();
    await page.getByLabel("Name of variable 1").fill("FORM_AGENT_MODE");
    await page.getByLabel("Value of variable 1").fill("quiet");
    await page.getByRole("button", { name: "Add agent" }).click();
    // Said beside the form, where the person is looking.
    await page
      .getByRole("form", { name: "Add an ACP agent" })
      .getByRole("status")
      .getByText("form-agent is added to providers.json.")
      .waitFor();
    const added = page.getByRole("listitem", { name: "Provider Form agent" });
    await added.waitFor();
    expect(providersFile().providers["form-agent"]).toEqual({
      extends: "acp",
      label: "Form agent",
      command: [executable, ...args],
      env: { FORM_AGENT_MODE: "quiet" },
      enabled: true,
    });
    await added.getByRole("button", { name: "Refresh Form agent" }).click();
    await expect.poll(() => added.locator(".badge").textContent()).toBe("Ready");
  });

  it("lists the model upstreams and code host connections by variable name, never a secret", async () => {
    const upstreams = page.getByRole("table", { name: "Model upstreams" });
    await upstreams.getByRole("rowheader", { name: "deckhand" }).waitFor();
    const upstreamText = (await upstreams.textContent()) ?? "";
    expect(upstreamText).toContain("OpenAI-compatible");
    expect(upstreamText).toContain(`${up.model.url}/v1`);
    expect(upstreamText).toContain("E2E_FAKE_UPSTREAM_KEY");

    const hosts = page.getByRole("table", { name: "Code host connections" });
    await hosts.getByRole("rowheader", { name: "github.com" }).waitFor();
    const github = hosts.getByRole("row", { name: /github\.com/ });
    expect(await github.textContent()).toContain(CODE_HOST_TOKEN_ENV);
    expect(await github.locator(".badge").textContent()).toBe("set");
    const gitlab = hosts.getByRole("row", { name: /gitlab\.example\.com/ });
    expect(await gitlab.locator(".badge").textContent()).toBe("not set");
    expect(await gitlab.textContent()).toContain("12 changes a minute");

    const html = await page.content();
    expect(html).not.toContain(UPSTREAM_KEY);
    expect(html).not.toContain(CODE_HOST_TOKEN);
    await page.getByRole("heading", { name: "Model upstreams" }).scrollIntoViewIfNeeded();
    await capture(page, "settings-upstreams");
  });

  it("shows a session's model usage, each agent under its own job", async () => {
    const project = await api<Project>("POST", ServerPath.projects, {
      repository_path: up.repository.path,
    });
    expect(project.status).toBe(201);
    const session = (
      await api<Session>(
        "POST",
        serverPath(ServerPath.projectSessions, { project_id: project.body.id }),
        { title: "usage" },
      )
    ).body;
    const chat = (
      await api<Chat>("POST", serverPath(ServerPath.sessionChats, { session_id: session.id }), {})
    ).body;
    const stream = new SessionStreamClient(
      up.server.url,
      serverPath(ServerPath.sessionStream, { session_id: session.id }),
      { token: ADMIN_TOKEN },
    );
    try {
      await stream.opened;
      up.model.script([turn.text("hello", { usage: { input: 21, output: 8 } })]);
      await runTurnAndWait(api, stream, chat.id, "deckhand", "say hello");
    } finally {
      await stream.close();
    }
    // Usage is recorded as the answer ends: wait for it before reading the page.
    await expect
      .poll(
        async () =>
          (
            await api<SessionUsageResponse>(
              "GET",
              serverPath(ServerPath.sessionUsage, { session_id: session.id }),
            )
          ).body.totals.requests,
      )
      .toBeGreaterThan(0);

    // The session is picked by its title, not by a pasted id.
    await page.reload();
    await page
      .getByRole("navigation", { name: "Settings sections" })
      .getByRole("link", { name: "Usage" })
      .click();
    expect(new URL(page.url()).hash).toBe("#usage-heading");
    await page.getByLabel("Of").selectOption("session");
    await page.getByLabel("Session", { exact: true }).selectOption({ label: "usage" });
    await page.getByRole("button", { name: "Show usage" }).click();
    const agents = page.getByRole("list", { name: "Agents of the session" });
    await agents.getByText("deckhand").waitFor();
    await page.getByText(/^1 requests · 21 input tokens · 8 output tokens/).waitFor();
    const table = page.getByRole("table", { name: `Requests of session ${session.id}` });
    expect(await table.locator("tbody tr").count()).toBe(1);

    // And from the session itself, a tab beside its review.
    await page.goto(`${up.server.url}/sessions/${session.id}`);
    await page.getByRole("tab", { name: "Usage" }).click();
    await page
      .getByRole("tabpanel", { name: "Usage" })
      .getByText(/^1 requests · 21 input tokens · 8 output tokens/)
      .waitFor();
    await capture(page, "session-usage");
  });
});
