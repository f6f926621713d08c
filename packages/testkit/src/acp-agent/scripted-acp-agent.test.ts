import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { scriptedAcpAgentCommand } from "./scripted-acp-command.ts";
import { parseScriptedAgentArguments } from "./scripted-acp-options.ts";
import { scriptedAgentCommands } from "./scripted-acp-script.ts";

/** Starts the agent, runs `op` with an ACP client connection, and always stops the agent. */
async function withAgent<T>(
  command: string[],
  op: (agent: acp.ClientContext, updates: acp.SessionNotification[]) => Promise<T>,
): Promise<T> {
  const [executable, ...args] = command;
  const child = spawn(executable!, args, { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const updates: acp.SessionNotification[] = [];
  const app = acp
    .client({ name: "test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params);
    });
  const stream = acp.ndJsonStream(
    Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
  );
  try {
    return await app.connectWith(stream, (agent) => op(agent, updates));
  } finally {
    child.kill("SIGKILL");
    await exited;
  }
}

const initialize: acp.InitializeRequest = {
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: {},
};

describe("the scripted ACP agent", () => {
  it("answers initialize and session/new, announces its commands, and answers a prompt", async () => {
    await withAgent(scriptedAcpAgentCommand("normal"), async (agent, updates) => {
      const initialized = await agent.request(acp.methods.agent.initialize, initialize);
      expect(initialized.agentInfo).toMatchObject({ name: "scripted-acp-agent", version: "1.2.3" });
      const session = await agent.request(acp.methods.agent.session.new, {
        cwd: "/",
        mcpServers: [],
      });
      expect(session.modes?.currentModeId).toBe("ask");
      expect(session.configOptions?.[0]).toMatchObject({
        category: "model",
        currentValue: "scripted-large",
      });
      const reply = await agent.request(acp.methods.agent.session.prompt, {
        sessionId: session.sessionId,
        prompt: [{ type: "text", text: "hi" }],
      });
      expect(reply.stopReason).toBe("end_turn");
      const deadline = Date.now() + 2_000;
      while (
        !updates.some((update) => update.update.sessionUpdate === "available_commands_update")
      ) {
        if (Date.now() > deadline) throw new Error("no commands");
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const commands = updates.find(
        (update) => update.update.sessionUpdate === "available_commands_update",
      )!;
      expect(commands.update).toMatchObject({ availableCommands: scriptedAgentCommands });
    });
  });

  it("with --resume, advertises session resume and continues a session without replaying it", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), "scripted-resume-"));
    try {
      const sessionId = await withAgent(
        scriptedAcpAgentCommand("normal", { stateDir }),
        async (agent) => {
          const initialized = await agent.request(acp.methods.agent.initialize, initialize);
          expect(initialized.agentCapabilities?.sessionCapabilities?.resume).toBeUndefined();
          const session = await agent.request(acp.methods.agent.session.new, {
            cwd: "/",
            mcpServers: [],
          });
          await agent.request(acp.methods.agent.session.prompt, {
            sessionId: session.sessionId,
            prompt: [{ type: "text", text: "remember me" }],
          });
          await expect(
            agent.request(acp.methods.agent.session.resume, {
              sessionId: session.sessionId,
              cwd: "/",
            }),
          ).rejects.toMatchObject({ code: acp.RequestError.methodNotFound("").code });
          return session.sessionId;
        },
      );
      await withAgent(
        scriptedAcpAgentCommand("normal", { stateDir, resume: true, noLoad: true }),
        async (agent, updates) => {
          const initialized = await agent.request(acp.methods.agent.initialize, initialize);
          expect(initialized.agentCapabilities).toMatchObject({
            loadSession: false,
            sessionCapabilities: { resume: {} },
          });
          const resumed = await agent.request(acp.methods.agent.session.resume, {
            sessionId,
            cwd: "/",
          });
          expect(resumed.modes?.currentModeId).toBe("ask");
          await agent.request(acp.methods.agent.session.prompt, {
            sessionId,
            prompt: [{ type: "text", text: "history" }],
          });
          const texts = updates.flatMap((update) =>
            update.update.sessionUpdate === "agent_message_chunk" &&
            update.update.content.type === "text"
              ? [update.update.content.text]
              : [],
          );
          expect(texts).toEqual(["history 1\nremember me"]);
          expect(updates.some((u) => u.update.sessionUpdate === "user_message_chunk")).toBe(false);
          await expect(
            agent.request(acp.methods.agent.session.resume, { sessionId: "gone", cwd: "/" }),
          ).rejects.toMatchObject({ code: acp.RequestError.resourceNotFound().code });
        },
      );
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it("refuses session/new with auth_required in auth-required mode", async () => {
    await withAgent(scriptedAcpAgentCommand("auth-required"), async (agent) => {
      const initialized = await agent.request(acp.methods.agent.initialize, initialize);
      expect(initialized.authMethods).toHaveLength(1);
      await expect(
        agent.request(acp.methods.agent.session.new, { cwd: "/", mcpServers: [] }),
      ).rejects.toMatchObject({ code: acp.RequestError.authRequired().code });
    });
  });
});

describe("parseScriptedAgentArguments", () => {
  it("defaults to normal mode and a short commands delay", () => {
    expect(parseScriptedAgentArguments([])).toEqual({
      kind: "run",
      options: {
        mode: "normal",
        commandsDelayMs: 20,
        version: "1.2.3",
        stateDir: null,
        loadSession: true,
        resumeSession: false,
        configOverrides: [],
        initializeDelayMs: 0,
        sessionDelayMs: 0,
      },
    });
    expect(
      parseScriptedAgentArguments(["--initialize-delay-ms", "1200", "--session-delay-ms", "800"]),
    ).toMatchObject({ options: { initializeDelayMs: 1_200, sessionDelayMs: 800 } });
    expect(parseScriptedAgentArguments(["--resume", "--no-load"])).toMatchObject({
      options: { loadSession: false, resumeSession: true },
    });
    expect(parseScriptedAgentArguments(["--mode", "slow-commands"])).toMatchObject({
      options: { commandsDelayMs: 1_500 },
    });
    expect(
      parseScriptedAgentArguments(["--mode", "hang", "--version", "--agent-version", "2"]),
    ).toEqual({
      kind: "version",
      version: "2",
    });
  });

  it("takes codex's -c overrides, and refuses --version with --no-version as codex-acp does", () => {
    expect(
      parseScriptedAgentArguments(["-c", 'model_provider="deckhand"', "-c", "a.b=1"]),
    ).toMatchObject({ options: { configOverrides: ['model_provider="deckhand"', "a.b=1"] } });
    expect(parseScriptedAgentArguments(["--no-version", "--version"])).toEqual({
      kind: "version-refused",
    });
  });

  it("rejects unknown modes and options", () => {
    expect(parseScriptedAgentArguments(["--mode", "sleepy"])).toMatchObject({ kind: "error" });
    expect(parseScriptedAgentArguments(["--commands-delay-ms", "soon"])).toMatchObject({
      kind: "error",
    });
    expect(parseScriptedAgentArguments(["--nope"])).toMatchObject({ kind: "error" });
    expect(parseScriptedAgentArguments(["--session-delay-ms", "-1"])).toMatchObject({
      kind: "error",
    });
  });
});
