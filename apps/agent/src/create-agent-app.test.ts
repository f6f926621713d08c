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
