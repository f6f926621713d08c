import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ProcessClient } from "@deckhand/process-manager";
import { WireEnv } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import { resolveAgentConfig } from "./config.ts";
import { type RunningAgent, startAgent } from "./start-agent.ts";

const TOKEN = "agent-token-for-the-environment-test";
const OPERATOR_KEY = "sk-operator-key-in-the-agent-env";
const CHAT = "7b0c5a52-1d54-4a43-9d9b-62b1cf3a1b11";

describe("what processes started by the workspace agent inherit", () => {
  const saved = { ...process.env };
  let agent: RunningAgent | null = null;
  let root = "";

  afterEach(async () => {
    await agent?.close();
    agent = null;
    rmSync(root, { recursive: true, force: true });
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  });

  async function environmentOfAProcess(
    options: Parameters<typeof startAgent>[1] = {},
  ): Promise<string> {
    root = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-agent-env-")));
    agent = await startAgent(
      resolveAgentConfig({ listen: "127.0.0.1:0", dir: root, logLevel: "silent" }, process.env),
      options,
    );
    const processes = new ProcessClient({ baseUrl: agent.url, token: TOKEN, chatId: CHAT });
    const { id } = await processes.start({ command: "env" });
    return (await processes.waitForExit(id)).output;
  }

  it("withholds the agent's own token, values holding it and well-known keys by default", async () => {
    // As `deckhand agent` is started on a remote machine: the token comes from the environment.
    process.env[WireEnv.agentToken] = TOKEN;
    process.env.TOKEN_COPY = `copied ${TOKEN}`;
    process.env.OPENAI_API_KEY = OPERATOR_KEY;
    process.env.ORDINARY_SETTING = "kept";
    const output = await environmentOfAProcess();
    expect(output).toContain("ORDINARY_SETTING=kept");
    expect(output).toContain(`${WireEnv.chatId}=${CHAT}`);
    expect(output).not.toContain(TOKEN);
    expect(output).not.toContain(OPERATOR_KEY);
  });

  it("gives processes exactly the environment its caller passes, plus the chat id", async () => {
    process.env[WireEnv.agentToken] = TOKEN;
    const output = await environmentOfAProcess({
      environment: { PATH: process.env.PATH ?? "/usr/bin:/bin", FROM_SERVER: "yes" },
    });
    expect(output).toContain("FROM_SERVER=yes");
    expect(output).not.toContain("ORDINARY_SETTING");
    expect(output).not.toContain(TOKEN);
  });
});
