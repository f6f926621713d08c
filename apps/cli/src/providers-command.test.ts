import { SERVER_DEFAULT_LISTEN } from "@deckhand/server-app";
import {
  type ProviderEntry,
  type ProvidersSnapshot,
  WireEnv,
  WireHeader,
  WirePath,
} from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { runProvidersCommand, SERVER_URL_ENV } from "./providers-command.ts";

interface Recorded {
  method: string;
  url: string;
  headers: Headers;
  body: string;
}

function entry(id: string, overrides: Partial<ProviderEntry> = {}): ProviderEntry {
  return {
    id,
    label: id,
    transport: "acp",
    builtin: true,
    enabled: true,
    status: "ready",
    command: [id],
    resolved_path: `/usr/bin/${id}`,
    install_hint: null,
    version: "1.0.0",
    models: [],
    current_model: null,
    modes: [],
    current_mode: null,
    commands: [],
    last_error: null,
    probed_at: null,
    ...overrides,
  };
}

/** A stand-in for the server's providers API that records what the CLI sends. */
function fakeServer(snapshot: ProvidersSnapshot, answers: Record<string, () => Response> = {}) {
  const requests: Recorded[] = [];
  let config: Record<string, unknown> = {};
  let version = 1;
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input);
    const method = init?.method ?? "GET";
    requests.push({
      method,
      url,
      headers: new Headers(init?.headers),
      body: String(init?.body ?? ""),
    });
    const path = new URL(url).pathname.slice(`${WirePath.serverApi}/providers`.length);
    const key = `${method} ${path}`;
    if (answers[key]) return answers[key]();
    const json = (body: unknown, status = 200) =>
      new Response(JSON.stringify(body), {
        status,
        headers: { "Content-Type": "application/json" },
      });
    if (key === "GET /snapshot" || key === "POST /refresh") return json(snapshot);
    if (key === "GET /config") return json({ config, etag: `"v${version}"`, diagnostics: [] });
    if (key === "PATCH /config") {
      config = { ...config, ...JSON.parse(String(init?.body)) };
      version += 1;
      return json({ config, etag: `"v${version}"`, diagnostics: [] });
    }
    return json({ error: { code: "not_found", message: "no route" } }, 404);
  }) as typeof globalThis.fetch;
  return { fetch, requests };
}

async function run(
  argv: string[],
  server: ReturnType<typeof fakeServer>,
  env: Record<string, string> = {},
) {
  let stdout = "";
  let stderr = "";
  const code = await runProvidersCommand(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env,
    fetch: server.fetch,
  });
  return { code, stdout, stderr };
}

const snapshot: ProvidersSnapshot = {
  providers: [
    entry("codex", {
      label: "Codex",
      models: [{ id: "gpt-5", name: "GPT-5", description: null }],
      modes: [{ id: "auto", name: "Auto", description: null }],
      commands: [
        { name: "review", description: "", kind: "command", input_hint: null },
        { name: "notes", description: "", kind: "skill", input_hint: null },
      ],
    }),
    entry("claude", {
      label: "Claude Code",
      status: "not_installed",
      version: null,
      last_error: "claude-agent-acp was not found on PATH",
    }),
  ],
  diagnostics: [{ file: "/data/providers.json", field: "providers.x", message: "entry ignored" }],
  sandbox: { kind: "bubblewrap", reason: null },
};

describe("deckhand providers", () => {
  it("lists providers from the default server, with the admin token as a bearer token", async () => {
    const server = fakeServer(snapshot);
    const result = await run(["list"], server, { [WireEnv.adminToken]: "t".repeat(32) });
    expect(result.code).toBe(0);
    expect(result.stdout.split("\n")).toEqual([
      "ID          STATUS        VERSION     LABEL",
      "codex       ready         1.0.0       Codex",
      "    models:   gpt-5",
      "    modes:    auto",
      "    commands: /review",
      "    skills:   /notes",
      "claude      not_installed -           Claude Code",
      "    claude-agent-acp was not found on PATH",
      "",
      "sandbox: bubblewrap",
      "",
    ]);
    expect(result.stderr).toBe("/data/providers.json: providers.x: entry ignored\n");
    expect(server.requests[0]!.url).toBe(
      `http://${SERVER_DEFAULT_LISTEN}${WirePath.serverApi}/providers/snapshot`,
    );
    expect(server.requests[0]!.headers.get(WireHeader.authorization)).toBe(
      `Bearer ${"t".repeat(32)}`,
    );
  });

  it("takes the server from --server, else from the environment, and can print JSON", async () => {
    const server = fakeServer(snapshot);
    await run(["list", "--server", "http://127.0.0.1:9999/"], server);
    await run(["list"], server, { [SERVER_URL_ENV]: "http://127.0.0.1:8888" });
    expect(server.requests.map((request) => new URL(request.url).host)).toEqual([
      "127.0.0.1:9999",
      "127.0.0.1:8888",
    ]);
    const json = await run(["list", "--json"], server);
    expect(JSON.parse(json.stdout)).toEqual(snapshot);
  });

  it("forces a refresh of the named providers", async () => {
    const server = fakeServer(snapshot);
    expect((await run(["refresh", "codex", "claude"], server)).code).toBe(0);
    expect(server.requests[0]).toMatchObject({ method: "POST" });
    expect(JSON.parse(server.requests[0]!.body)).toEqual({ ids: ["codex", "claude"], force: true });
    await run(["refresh"], server);
    expect(JSON.parse(server.requests[1]!.body)).toEqual({ force: true });
  });

  it("enables and disables with a merge patch", async () => {
    const server = fakeServer(snapshot);
    const disabled = await run(["disable", "codex"], server);
    expect(disabled).toMatchObject({ code: 0, stdout: "codex: ready\n" });
    expect(server.requests[0]!.headers.get("Content-Type")).toBe("application/merge-patch+json");
    expect(JSON.parse(server.requests[0]!.body)).toEqual({
      providers: { codex: { enabled: false } },
    });
    await run(["enable", "codex"], server);
    expect(JSON.parse(server.requests[2]!.body)).toEqual({
      providers: { codex: { enabled: null } },
    });
  });

  it("adds a custom ACP agent with If-Match, then probes it", async () => {
    const server = fakeServer(
      {
        providers: [entry("mine", { builtin: false })],
        diagnostics: [],
        sandbox: { kind: "bubblewrap", reason: null },
      },
      // Not there before the patch; the refresh after it shows it.
      {
        "GET /snapshot": () =>
          new Response(
            JSON.stringify({
              providers: [],
              diagnostics: [],
              sandbox: { kind: "bubblewrap", reason: null },
            }),
            { status: 200 },
          ),
      },
    );
    const result = await run(
      ["add", "mine", "--label", "Mine", "--env", "A=1=2", "--", "my-agent", "--acp"],
      server,
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("mine        ready");
    const [, , patch, refresh] = server.requests;
    expect(patch!.headers.get("If-Match")).toBe('"v1"');
    expect(JSON.parse(patch!.body)).toEqual({
      providers: {
        mine: { extends: "acp", command: ["my-agent", "--acp"], label: "Mine", env: { A: "1=2" } },
      },
    });
    expect(JSON.parse(refresh!.body)).toEqual({ ids: ["mine"], force: true });
  });

  it("explains usage mistakes with exit 2 and server refusals with exit 1", async () => {
    const server = fakeServer(snapshot, {
      "PATCH /config": () =>
        new Response(
          JSON.stringify({
            error: { code: "invalid_request", message: "providers.nope: no built-in" },
          }),
          {
            status: 400,
          },
        ),
      "GET /snapshot": () =>
        new Response(
          JSON.stringify({ error: { code: "unauthorized", message: "missing token" } }),
          { status: 401 },
        ),
    });
    expect((await run(["add", "mine"], server)).code).toBe(2);
    expect((await run(["enable"], server)).code).toBe(2);
    expect((await run(["list", "--server", "ftp://x"], server)).code).toBe(2);
    expect((await run(["add", "x", "--env", "1=2", "--", "a"], server)).code).toBe(2);
    expect((await run(["frobnicate"], server)).stderr).toContain('unknown command "frobnicate"');
    expect(await run(["disable", "nope"], server)).toEqual({
      code: 1,
      stdout: "",
      stderr: "deckhand providers disable: providers.nope: no built-in\n",
    });
    expect((await run(["list"], server)).stderr).toBe(
      `deckhand providers list: missing token; set ${WireEnv.adminToken} to the server's admin token\n`,
    );
  });

  it("says so when the server cannot be reached or is not a Deckhand server", async () => {
    const unreachable = await runProvidersCommand(["list"], {
      stdout: { write: () => {} },
      stderr: {
        write: (text: string) => expect(text).toContain("cannot reach the Deckhand server"),
      },
      env: {},
      fetch: (async () => {
        throw new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } });
      }) as typeof fetch,
    });
    expect(unreachable).toBe(1);
    const odd = fakeServer(snapshot, {
      "GET /snapshot": () => new Response("<html>", { status: 200 }),
    });
    expect((await run(["list"], odd)).stderr).toContain("not a Deckhand API answer");
  });
});
