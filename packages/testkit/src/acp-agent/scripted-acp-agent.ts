#!/usr/bin/env node
// A scripted ACP agent for tests, written with the ACP SDK's agent side. Run it with
// `node --conditions=source scripted-acp-agent.ts --mode <mode>`; `scriptedAcpAgentCommand()`
// builds that command. It speaks ACP over stdio, so tests exercise the same path as a real
// agent CLI: process spawn, NDJSON framing, the SDK's validation on both sides.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { parseScriptedAgentArguments, type ScriptedAgentOptions } from "./scripted-acp-options.ts";
import { scriptedAgentScript } from "./scripted-acp-script.ts";

function run(options: ScriptedAgentOptions): void {
  const script = scriptedAgentScript(options);
  if (options.mode === "garbage") {
    // Before any JSON-RPC, as a CLI that logs to stdout would.
    process.stdout.write("scripted agent: this line is not JSON\n");
  }
  const sessions = new Set<string>();
  let nextSession = 1;
  const app = acp
    .agent({ name: "scripted-acp-agent" })
    .onRequest(acp.methods.agent.initialize, async () => {
      if (options.mode === "hang") {
        process.stderr.write("scripted agent: hanging in initialize as asked\n");
        return new Promise<never>(() => {});
      }
      if (options.mode === "crash") {
        process.stderr.write("scripted agent: crashing in initialize as asked\n");
        process.exit(3);
      }
      return {
        protocolVersion: acp.PROTOCOL_VERSION,
        agentCapabilities: {
          loadSession: false,
          sessionCapabilities: { close: {} },
        },
        authMethods: script.authMethods,
        agentInfo: { name: "scripted-acp-agent", version: options.version },
      };
    })
    .onRequest(acp.methods.agent.authenticate, async () => {
      throw acp.RequestError.authRequired(undefined, "the scripted agent accepts no login");
    })
    .onRequest(acp.methods.agent.session.new, async ({ client }) => {
      if (options.mode === "auth-required") {
        throw acp.RequestError.authRequired(
          undefined,
          "scripted agent: log in first (scripted auth-required mode)",
        );
      }
      const sessionId = `scripted-session-${nextSession++}`;
      sessions.add(sessionId);
      const announce = () =>
        client
          .notify(acp.methods.client.session.update, {
            sessionId,
            update: {
              sessionUpdate: "available_commands_update",
              availableCommands: script.commands,
            },
          })
          .catch(() => {});
      // Like real agents, the commands arrive after the session/new answer, not inside it.
      setTimeout(announce, options.commandsDelayMs);
      return {
        sessionId,
        modes: script.modes,
        configOptions: script.configOptions,
      };
    })
    .onRequest(acp.methods.agent.session.close, async ({ params }) => {
      sessions.delete(params.sessionId);
      return {};
    })
    .onRequest(acp.methods.agent.session.setMode, async () => ({}))
    .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
      if (!sessions.has(params.sessionId)) throw acp.RequestError.sessionNotFound(params.sessionId);
      await client.notify(acp.methods.client.session.update, {
        sessionId: params.sessionId,
        update: {
          sessionUpdate: "agent_message_chunk",
          content: { type: "text", text: script.reply },
        },
      });
      return { stopReason: "end_turn" };
    })
    .onNotification(acp.methods.agent.session.cancel, () => {});

  const stream = acp.ndJsonStream(
    Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
    Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
  );
  const connection = app.connect(stream);
  // The client closing stdin ends the agent, as it does for real agent CLIs.
  void connection.closed.then(() => process.exit(0));
}

const parsed = parseScriptedAgentArguments(process.argv.slice(2));
if (parsed.kind === "version") {
  process.stdout.write(`scripted-acp-agent ${parsed.version}\n`);
} else if (parsed.kind === "error") {
  process.stderr.write(`scripted-acp-agent: ${parsed.message}\n`);
  process.exitCode = 2;
} else {
  run(parsed.options);
}
