// A web page must not be able to drive `deckhand up`. In a real Chromium, a page served from
// another 127.0.0.1 port tries what was observed to work before the Host and Origin guard: a
// no-cors text/plain POST that creates a batch run (whose step runs on the host), adds a project,
// creates an API token and makes an agent run a command; a CORS read and a JSON POST; a WebSocket
// to a session's stream. Then a DNS-rebinding page (a name of the attacker's that resolves to
// 127.0.0.1) reads the API and patches the providers config. Nothing acts and nothing is read,
// which the server's own state (through the API, as curl sees it) and its request log confirm;
// then the UI, on its own origin, still loads and starts a session.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTempRepository, gitIn, type TempRepository } from "@deckhand/testkit";
import {
  type ApiToken,
  type BatchRun,
  type Chat,
  type MessageList,
  type Project,
  type ProjectList,
  type ProvidersConfigResponse,
  ServerPath,
  type Session,
  serverPath,
  WireSubprotocol,
} from "@deckhand/wire";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OpenedBrowser, openBrowser } from "./browser.ts";
import { type DeckhandUp, startDeckhandUp } from "./deckhand-up.ts";

/** The attacker's name; Chromium resolves it to 127.0.0.1, as a rebinding DNS server would. */
const REBOUND_NAME = "attacker.test";

/**
 * The attack page. Its script runs every attack against `target` on load, records what it could
 * see in `window.results` and sets the title to "done". Plain ES5 string building: the page is
 * the attacker's, not Deckhand's.
 */
const ATTACK_PAGE = `<!doctype html>
<html><head><title>loading</title></head><body><script>
(async function () {
  var params = new URLSearchParams(location.search);
  var target = params.get("target");
  var results = {};
  async function simplePost(name, path, body) {
    try {
      var response = await fetch(target + path, { method: "POST", mode: "no-cors", body: JSON.stringify(body) });
      results[name] = { type: response.type, status: response.status };
    } catch (error) {
      results[name] = { error: String(error) };
    }
  }
  await simplePost("batchRun", "/api/batch-runs", { source: params.get("spec"), options: { runtime: "local" } });
  await simplePost("project", "/api/projects", { repository_path: params.get("repository"), name: "planted" });
  await simplePost("token", "/api/tokens", { name: "planted" });
  await simplePost("message", "/api/chats/" + params.get("chat") + "/messages", { agent: "deckhand", text: "run: touch " + params.get("marker") });
  try {
    var read = await fetch(target + "/api/projects");
    results.read = { status: read.status, text: await read.text() };
  } catch (error) {
    results.read = { error: String(error) };
  }
  try {
    var json = await fetch(target + "/api/tokens", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "planted-with-cors" }) });
    results.jsonPost = { status: json.status };
  } catch (error) {
    results.jsonPost = { error: String(error) };
  }
  results.socket = await new Promise(function (resolve) {
    var events = [];
    var frames = [];
    var socket = new WebSocket(target.replace(/^http/, "ws") + "/api/sessions/" + params.get("session") + "/stream", [params.get("protocol")]);
    socket.onopen = function () { events.push("open"); };
    socket.onmessage = function (message) { frames.push(String(message.data)); socket.close(); };
    socket.onerror = function () { events.push("error"); };
    socket.onclose = function (event) { events.push("close " + event.code); resolve({ events: events, frames: frames }); };
  });
  window.results = results;
  document.title = "done";
})();
</script></body></html>`;

interface AttackResults {
  batchRun: { type?: string; status?: number; error?: string };
  project: { type?: string; status?: number; error?: string };
  token: { type?: string; status?: number; error?: string };
  message: { type?: string; status?: number; error?: string };
  read: { status?: number; text?: string; error?: string };
  jsonPost: { status?: number; error?: string };
  socket: { events: string[]; frames: string[] };
}

let up: DeckhandUp;
let browser: OpenedBrowser;
let attackServer: Server;
let attackOrigin: string;
let hostsDir: string;
let hosted: TempRepository;
let marker: string;
let session: Session;
let chat: Chat;

/** The API as curl (or the CLI) calls it: no Origin, JSON. */
async function api<Body>(method: string, path: string, body?: unknown) {
  const response = await fetch(`${up.server.url}${path}`, {
    method,
    headers: body !== undefined ? { "content-type": "application/json" } : {},
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json()) as Body };
}

/** The server's request log lines for `method path` from line `since` on, as `deckhand up` writes them. */
function logged(method: string, path: string, since: number): { status: number }[] {
  return up.server.output.slice(since).flatMap((line) => {
    try {
      const entry = JSON.parse(line) as {
        msg?: string;
        method?: string;
        path?: string;
        status: number;
      };
      return entry.msg === "request" && entry.method === method && entry.path === path
        ? [entry]
        : [];
    } catch {
      return [];
    }
  });
}

function batchSpec(): string {
  return [
    "name: planted",
    "on:",
    "  - repository: acme/api",
    "steps:",
    `  - run: touch ${marker}`,
    "    container: alpine:3",
    "changesetTemplate:",
    "  title: planted",
    "  body: planted",
    "  branch: batch/planted",
    "  commit:",
    "    message: planted",
  ].join("\n");
}

beforeAll(async () => {
  hostsDir = mkdtempSync(join(tmpdir(), "deckhand-e2e-origin-hosts-"));
  hosted = createTempRepository({ "README.md": "# api\n" });
  gitIn(hosted.path, "clone", "--quiet", hosted.path, join(hostsDir, "acme", "api"));
  marker = join(hostsDir, "pwned");
  // No admin token: a loopback server with an open API, the case a web page could drive.
  up = await startDeckhandUp({ config: { codeHosts: [{ type: "directory", path: hostsDir }] } });
  attackServer = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    response.end(ATTACK_PAGE);
  });
  await new Promise<void>((resolveListen) => attackServer.listen(0, "127.0.0.1", resolveListen));
  attackOrigin = `http://127.0.0.1:${(attackServer.address() as AddressInfo).port}`;
  browser = await openBrowser({ args: [`--host-resolver-rules=MAP ${REBOUND_NAME} 127.0.0.1`] });

  // What a person sets up with curl: it works as before.
  const project = await api<Project>("POST", ServerPath.projects, {
    repository_path: up.repository.path,
  });
  expect(project.status).toBe(201);
  const created = await api<Session>(
    "POST",
    serverPath(ServerPath.projectSessions, { project_id: project.body.id }),
    { title: "guarded" },
  );
  expect(created.status).toBe(201);
  session = created.body;
  const opened = await api<Chat>(
    "POST",
    serverPath(ServerPath.sessionChats, { session_id: session.id }),
    {},
  );
  expect(opened.status).toBe(201);
  chat = opened.body;
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolveClose) => attackServer?.close(resolveClose));
  await up?.close();
  hosted?.remove();
  if (hostsDir) rmSync(hostsDir, { recursive: true, force: true });
});

describe("a page on another origin against deckhand up, in Chromium", () => {
  it("acts on nothing and reads nothing: no run, project, token or message; no stream frame", async () => {
    const attacker: Page = await browser.context.newPage();
    const query = new URLSearchParams({
      target: up.server.url,
      spec: batchSpec(),
      repository: up.repository.path,
      chat: chat.id,
      session: session.id,
      marker,
      protocol: WireSubprotocol.sessionStream,
    });
    const since = up.server.output.length;
    await attacker.goto(`${attackOrigin}/?${query}`);
    await attacker.waitForFunction("document.title === 'done'", undefined, { timeout: 30_000 });
    const results = (await attacker.evaluate("window.results")) as AttackResults;
    await attacker.close();

    // What the page saw of its simple POSTs: nothing, an opaque answer at most (the answers'
    // Cross-Origin-Resource-Policy makes Chromium fail them outright); nothing of its reads.
    for (const name of ["batchRun", "project", "token", "message"] as const) {
      expect(results[name].error ?? results[name].type, name).toMatch(
        /^(TypeError: Failed to fetch|opaque)$/,
      );
      expect(results[name].status ?? 0, name).toBe(0);
    }
    expect(results.read.error).toMatch(/Failed to fetch/);
    expect(results.jsonPost.error).toMatch(/Failed to fetch/);
    expect(results.socket.events).not.toContain("open");
    expect(results.socket.frames).toEqual([]);

    // The server was reached, and refused each request.
    for (const path of [
      ServerPath.batchRuns,
      ServerPath.projects,
      ServerPath.apiTokens,
      serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
    ]) {
      expect(
        logged("POST", path, since).map((entry) => entry.status),
        path,
      ).toEqual([403]);
    }
    expect(logged("GET", ServerPath.projects, since).map((entry) => entry.status)).toEqual([403]);

    // And nothing changed, as curl sees it.
    const runs = await api<{ batch_runs: BatchRun[] }>("GET", ServerPath.batchRuns);
    expect(runs.body.batch_runs).toEqual([]);
    const projects = await api<ProjectList>("GET", ServerPath.projects);
    expect(projects.body.projects.map((project) => project.name)).not.toContain("planted");
    const tokens = await api<{ api_tokens: ApiToken[] }>("GET", ServerPath.apiTokens);
    expect(tokens.body.api_tokens).toEqual([]);
    const messages = await api<MessageList>(
      "GET",
      serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
    );
    expect(messages.body.messages).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });

  it("answers a rebinding page nothing: no UI, no projects, no providers patch", async () => {
    const port = new URL(up.server.url).port;
    const rebound: Page = await browser.context.newPage();
    const before = await api<ProvidersConfigResponse>("GET", ServerPath.providersConfig);
    // The attacker's name now resolves to 127.0.0.1: its page talks to the server as to itself.
    const landing = await rebound.goto(`http://${REBOUND_NAME}:${port}/`);
    expect(landing?.status()).toBe(403);
    const seen = (await rebound.evaluate(`(async () => {
      const read = await fetch("/api/projects");
      const patch = await fetch("/api/providers/config", {
        method: "PATCH",
        headers: { "content-type": "application/merge-patch+json" },
        body: JSON.stringify({ providers: { planted: { extends: "acp", command: "touch ${marker}" } } }),
      });
      const refresh = await fetch("/api/providers/refresh", { method: "POST" });
      return { read: read.status, text: await read.text(), patch: patch.status, refresh: refresh.status };
    })()`)) as { read: number; text: string; patch: number; refresh: number };
    await rebound.close();
    expect(seen).toMatchObject({ read: 403, patch: 403, refresh: 403 });
    expect(JSON.parse(seen.text).error.code).toBe("host_not_allowed");
    expect(seen.text).not.toContain(up.repository.path);
    const after = await api<ProvidersConfigResponse>("GET", ServerPath.providersConfig);
    expect(after.body.etag).toBe(before.body.etag);
    expect(JSON.stringify(after.body.config)).not.toContain("planted");
    expect(existsSync(marker)).toBe(false);
  });

  it("still serves the UI on its own origin, under its Content Security Policy, and it works", async () => {
    const page = browser.page;
    const response = await page.goto(up.server.url);
    expect(response?.headers()["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(response?.headers()["x-content-type-options"]).toBe("nosniff");
    await page.getByRole("heading", { name: "Projects" }).waitFor();
    const newSession = page.getByRole("link", { name: /^New session in / }).first();
    await newSession.click();
    await page.getByRole("heading", { name: /^New session in / }).waitFor();
    await expect
      .poll(() => page.getByLabel("Agent").locator("option").allTextContents(), {
        timeout: 60_000,
      })
      .not.toEqual([]);
    await page.getByLabel("Title").fill("from the UI's own origin");
    await page.getByLabel("Agent").selectOption("deckhand");
    await page.getByRole("button", { name: "Start session" }).click();
    await page.getByRole("heading", { name: "from the UI's own origin" }).waitFor();
    const sessions = await api<{ sessions: Session[] }>(
      "GET",
      serverPath(ServerPath.projectSessions, { project_id: session.project_id }),
    );
    expect(sessions.body.sessions.map((listed) => listed.title)).toContain(
      "from the UI's own origin",
    );
    // No page error: no Content Security Policy violation, no refused request or stream.
    expect(browser.pageErrors).toEqual([]);
  });
});
