import { mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { ProcessClient } from "@deckhand/process-manager";
import { type AgentHealthResponse, WireHeader, WirePath } from "@deckhand/wire";
import { FileClient } from "@deckhand/workspace-files";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveAgentConfig } from "./config.ts";
import { type RunningAgent, startAgent } from "./start-agent.ts";

const TOKEN = "test-token-7f3a9c";
const CHAT = "7b0c5a52-1d54-4a43-9d9b-62b1cf3a1b11";

describe("workspace agent app", () => {
  const logLines: string[] = [];
  let agent: RunningAgent;
  let root: string;

  beforeAll(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-agent-app-")));
    const logDestination = new Writable({
      write(chunk, _encoding, callback) {
        logLines.push(...String(chunk).split("\n").filter(Boolean));
        callback();
      },
    });
    agent = await startAgent(
      resolveAgentConfig({ listen: "127.0.0.1:0", dir: root, token: TOKEN, logLevel: "info" }),
      { logDestination },
    );
  });

  afterAll(async () => {
    await agent.close();
  });

  it("answers 401 without a token or with a wrong one, in the error shape", async () => {
    const attempts: Record<string, string>[] = [
      {},
      { [WireHeader.authorization]: "Bearer wrong" },
      { [WireHeader.authorization]: TOKEN },
    ];
    for (const headers of attempts) {
      const response = await fetch(`${agent.url}${WirePath.agentHealth}`, { headers });
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("unauthorized");
      expect(body.error.message).not.toContain(TOKEN);
    }
  });

  it("serves health with the right token", async () => {
    const response = await fetch(`${agent.url}${WirePath.agentHealth}`, {
      headers: { [WireHeader.authorization]: `Bearer ${TOKEN}` },
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as AgentHealthResponse;
    expect(body).toMatchObject({ status: "ok", root, running_processes: 0 });
  });

  it("serves the process and file APIs behind the token", async () => {
    const files = new FileClient({ baseUrl: agent.url, token: TOKEN });
    await files.write({ path: "hello.txt", content: "hello from the file API\n" });
    const processes = new ProcessClient({ baseUrl: agent.url, token: TOKEN, chatId: CHAT });
    const { id } = await processes.start({ command: "cat hello.txt" });
    const exited = await processes.waitForExit(id);
    expect(exited.output).toBe("hello from the file API\n");
    expect(exited.exit_code).toBe(0);
    const read = await files.read({ path: "hello.txt" });
    expect(read.content).toBe("hello from the file API\n");
  });

  it("refuses bad input on the process and file APIs with a 4xx naming what to fix", async () => {
    const headers = {
      [WireHeader.authorization]: `Bearer ${TOKEN}`,
      [WireHeader.chatId]: CHAT,
      "content-type": "application/json",
    };
    const post = async (path: string, body: string) => {
      const response = await fetch(`${agent.url}${path}`, { method: "POST", headers, body });
      return {
        status: response.status,
        error: ((await response.json()) as { error: { code: string; message: string } }).error,
      };
    };
    const nulContent = await post(
      `${WirePath.files}/write`,
      JSON.stringify({ path: "nul.txt", content: "a\u0000b" }),
    );
    expect(nulContent).toMatchObject({ status: 400, error: { code: "invalid_request" } });
    expect(nulContent.error.message).toMatch(/^content: contains a NUL character/);
    const nulEnv = await post(
      `${WirePath.processes}/start`,
      JSON.stringify({ command: "true", env: { NAME: "a\u0000b" } }),
    );
    expect(nulEnv.status).toBe(400);
    expect(nulEnv.error.message).toMatch(/^env\.NAME: contains a NUL character/);
    const deep = await post(`${WirePath.processes}/start`, "[".repeat(50_000));
    expect(deep).toMatchObject({ status: 400, error: { code: "invalid_json" } });
    const huge = await post(
      `${WirePath.files}/write`,
      JSON.stringify({ path: "huge.txt", content: "x".repeat(11 * 1024 * 1024) }),
    );
    expect(huge).toMatchObject({ status: 413, error: { code: "body_too_large" } });
    const longUrl = await fetch(
      `${agent.url}${WirePath.processes}/${"p".repeat(64 * 1024)}/output`,
      {
        headers,
      },
    );
    expect(longUrl.status).toBe(414);
    expect(logLines.filter((line) => line.includes('"level":50'))).toEqual([]);
  });

  it("answers unknown routes with 404 in the error shape", async () => {
    const response = await fetch(`${agent.url}${WirePath.agentApi}/nothing-here`, {
      headers: { [WireHeader.authorization]: `Bearer ${TOKEN}` },
    });
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("not_found");
  });

  it("logs one JSON line per request, tagged with the chat id, never with the token", async () => {
    await fetch(`${agent.url}${WirePath.processes}/list`, {
      headers: { [WireHeader.authorization]: `Bearer ${TOKEN}`, [WireHeader.chatId]: CHAT },
    });
    const requests = logLines
      .map((line) => JSON.parse(line))
      .filter((entry) => entry.msg === "request");
    expect(requests.length).toBeGreaterThan(0);
    const tagged = requests.find((entry) => entry.path === `${WirePath.processes}/list`);
    expect(tagged).toMatchObject({ method: "GET", status: 200, chat_id: CHAT });
    expect(logLines.join("\n")).not.toContain(TOKEN);
  });
});
