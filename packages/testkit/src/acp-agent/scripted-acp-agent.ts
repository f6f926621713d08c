#!/usr/bin/env node

// A scripted ACP agent for tests, written with the ACP SDK's agent side. Run it with
// `node --conditions=source scripted-acp-agent.ts --mode <mode>`; `scriptedAcpAgentCommand()`
// builds that command. It speaks ACP over stdio, so tests exercise the same path as a real
// agent CLI: process spawn, NDJSON framing, the SDK's validation on both sides.
//
// The argv mode decides how it starts (see scripted-acp-options.ts); each prompt's text decides
// what the turn does: write or read files through the client's fs methods, run commands in the
// client's terminals, ask permission before an edit, stream until cancelled, crash mid-turn,
// or show one of each update (see scripted-acp-prompts.ts for the directives). Sessions keep
// their history (user prompts and replies); `session/load` replays it as notifications,
// `session/resume` (with `--resume`) continues it without a replay, and `--state-dir` keeps it
// on disk so a new agent process can load or resume a session an old one started.
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { errorMessage } from "@deckhand/errors";
import { parseScriptedAgentArguments, type ScriptedAgentOptions } from "./scripted-acp-options.ts";
import { parseScriptedPrompt, type ScriptedPrompt } from "./scripted-acp-prompts.ts";
import { type ScriptedAgentScript, scriptedAgentScript } from "./scripted-acp-script.ts";
import { readAsGemini } from "./scripted-gemini-write.ts";

interface HistoryEntry {
  role: "user" | "agent";
  text: string;
}

interface SessionState {
  id: string;
  cwd: string;
  history: HistoryEntry[];
  /** Set by `session/cancel`, cleared when the next prompt starts. */
  cancelled: boolean;
  /** What `session/set_mode` and the model option last chose; the script's defaults before. */
  modeId?: string;
  modelId?: string;
}

/** What a prompt turn answers: a stop reason and, for `showcase`, token usage. */
type TurnOutcome = { stopReason: acp.StopReason; usage?: Record<string, number> };

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** What the client advertised in `initialize` (one client per agent process). */
let clientCapabilities: acp.ClientCapabilities = {};

/** One prompt turn: sends updates for its session and collects the reply text for history. */
class Turn {
  reply = "";
  readonly #client: acp.AgentContext;
  readonly session: SessionState;
  static #nextToolCall = 1;

  constructor(client: acp.AgentContext, session: SessionState) {
    this.#client = client;
    this.session = session;
  }

  update(update: acp.SessionUpdate): Promise<void> {
    return this.#client.notify(acp.methods.client.session.update, {
      sessionId: this.session.id,
      update,
    });
  }

  async say(text: string): Promise<void> {
    this.reply += text;
    await this.update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
  }

  toolCallId(prefix: string): string {
    return `${prefix}-${Turn.#nextToolCall++}`;
  }

  path(path: string): string {
    return isAbsolute(path) ? path : resolve(this.session.cwd, path);
  }

  get client(): acp.AgentContext {
    return this.#client;
  }
}

async function runTerminal(
  turn: Turn,
  command: string,
  options: { limit: number | null; killAfterMs?: number },
): Promise<void> {
  const toolCallId = turn.toolCallId("run");
  await turn.update({
    sessionUpdate: "tool_call",
    toolCallId,
    title: `Run ${command}`,
    kind: "execute",
    status: "pending",
    rawInput: { command },
  });
  let terminal: acp.TerminalHandle;
  try {
    terminal = await turn.client.createTerminal({
      sessionId: turn.session.id,
      command: "sh",
      args: ["-c", command],
      cwd: turn.session.cwd,
      ...(options.limit === null ? {} : { outputByteLimit: options.limit }),
    });
  } catch (error) {
    await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
    await turn.say(`error: ${errorMessage(error)}`);
    return;
  }
  await turn.update({
    sessionUpdate: "tool_call_update",
    toolCallId,
    status: "in_progress",
    content: [{ type: "terminal", terminalId: terminal.id }],
  });
  if (options.killAfterMs !== undefined) {
    await sleep(options.killAfterMs);
    await terminal.kill();
  }
  const exit = await terminal.waitForExit();
  const output = await terminal.currentOutput();
  await terminal.release();
  await turn.update({
    sessionUpdate: "tool_call_update",
    toolCallId,
    status: exit.exitCode === 0 ? "completed" : "failed",
    rawOutput: { exit, output: output.output },
  });
  const status = exit.signal ? `signal ${exit.signal}` : `exit ${exit.exitCode}`;
  await turn.say(`${status} truncated ${output.truncated}\n${output.output}`);
}

/**
 * When the edit's tool call is announced: `before` asking (claude-agent-acp), `after` the answer
 * (codex-acp does so for commands), or `never`, the permission request being its only
 * announcement before `tool_call_update`s (Gemini CLI). The request carries the call's fields
 * (kind, input, locations), as all three agents send them.
 */
type Announcement = "before" | "after" | "never";

async function runEdit(
  turn: Turn,
  path: string,
  text: string,
  announce: Announcement = "before",
): Promise<TurnOutcome> {
  const toolCallId = turn.toolCallId("edit");
  const absolute = turn.path(path);
  const toolCall: acp.ToolCall = {
    toolCallId,
    title: `Edit ${path}`,
    kind: "edit",
    status: "pending",
    locations: [{ path: absolute }],
    rawInput: { path, text },
  };
  if (announce === "before") await turn.update({ sessionUpdate: "tool_call", ...toolCall });
  const answer = await turn.client.request(acp.methods.client.session.requestPermission, {
    sessionId: turn.session.id,
    toolCall,
    options: [
      { optionId: "yes", name: "Allow", kind: "allow_once" },
      { optionId: "always", name: "Always allow edits", kind: "allow_always" },
      { optionId: "no", name: "Reject", kind: "reject_once" },
      { optionId: "never", name: "Never allow edits", kind: "reject_always" },
    ],
  });
  if (announce === "after") await turn.update({ sessionUpdate: "tool_call", ...toolCall });
  if (answer.outcome.outcome === "cancelled") {
    await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
    return { stopReason: "cancelled" };
  }
  if (answer.outcome.optionId === "no" || answer.outcome.optionId === "never") {
    await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
    await turn.say("rejected");
    return { stopReason: "end_turn" };
  }
  await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "in_progress" });
  try {
    await turn.client.request(acp.methods.client.fs.writeTextFile, {
      sessionId: turn.session.id,
      path: absolute,
      content: text,
    });
  } catch (error) {
    await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
    await turn.say(`error: ${errorMessage(error)}`);
    return { stopReason: "end_turn" };
  }
  await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "completed" });
  await turn.say(`edited ${path}`);
  return { stopReason: "end_turn" };
}

async function runStream(turn: Turn, ms: number, honourCancel: boolean): Promise<TurnOutcome> {
  const deadline = Date.now() + ms;
  for (let tick = 1; Date.now() < deadline; tick += 1) {
    if (honourCancel && turn.session.cancelled) return { stopReason: "cancelled" };
    await turn.say(`tick ${tick}\n`);
    await sleep(50);
  }
  return { stopReason: turn.session.cancelled && honourCancel ? "cancelled" : "end_turn" };
}

async function runShowcase(turn: Turn): Promise<TurnOutcome> {
  const toolCallId = turn.toolCallId("look");
  const path = turn.path("README.md");
  await turn.update({
    sessionUpdate: "agent_thought_chunk",
    content: { type: "text", text: "thinking about it" },
  });
  await turn.update({
    sessionUpdate: "plan",
    entries: [
      { content: "look around", priority: "high", status: "in_progress" },
      { content: "answer", priority: "medium", status: "pending" },
    ],
  });
  await turn.update({
    sessionUpdate: "tool_call",
    toolCallId,
    title: "Look at README.md",
    kind: "read",
    status: "pending",
    locations: [{ path }],
    rawInput: { path },
  });
  await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "in_progress" });
  await turn.update({
    sessionUpdate: "tool_call_update",
    toolCallId,
    status: "completed",
    content: [{ type: "content", content: { type: "text", text: "looked" } }],
  });
  await turn.update({ sessionUpdate: "current_mode_update", currentModeId: "code" });
  await turn.say("showcase done");
  return {
    stopReason: "end_turn",
    // Token usage rides on the prompt response (an unstable ACP field; the SDK passes it on).
    usage: { inputTokens: 11, outputTokens: 7, totalTokens: 18 },
  };
}

async function runPrompt(
  turn: Turn,
  prompt: ScriptedPrompt,
  script: ScriptedAgentScript,
): Promise<TurnOutcome> {
  const done: TurnOutcome = { stopReason: "end_turn" };
  switch (prompt.kind) {
    case "write": {
      const toolCallId = turn.toolCallId("write");
      await turn.update({
        sessionUpdate: "tool_call",
        toolCallId,
        title: `Write ${prompt.path}`,
        kind: "edit",
        status: "in_progress",
        locations: [{ path: turn.path(prompt.path) }],
      });
      try {
        await turn.client.request(acp.methods.client.fs.writeTextFile, {
          sessionId: turn.session.id,
          path: turn.path(prompt.path),
          content: prompt.text,
        });
        await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "completed" });
        await turn.say(`wrote ${prompt.path}`);
      } catch (error) {
        await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
        await turn.say(`error: ${errorMessage(error)}`);
      }
      return done;
    }
    case "write-as-gemini": {
      const toolCallId = turn.toolCallId("write_file");
      const path = turn.path(prompt.path);
      await turn.update({
        sessionUpdate: "tool_call",
        toolCallId,
        title: `WriteFile ${prompt.path}`,
        kind: "edit",
        status: "in_progress",
        locations: [{ path }],
        rawInput: { file_path: path, content: prompt.text },
      });
      const before = await readAsGemini(turn.client, turn.session.id, clientCapabilities, path);
      try {
        if ("failed" in before) throw new Error(before.failed);
        await turn.client.request(acp.methods.client.fs.writeTextFile, {
          sessionId: turn.session.id,
          path,
          content: prompt.text,
        });
      } catch (error) {
        await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
        await turn.say(`error: ${errorMessage(error)}`);
        return done;
      }
      await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "completed" });
      await turn.say(`wrote ${prompt.path} (${before.exists ? "changed" : "new file"})`);
      return done;
    }
    case "read":
      try {
        const read = await turn.client.request(acp.methods.client.fs.readTextFile, {
          sessionId: turn.session.id,
          path: turn.path(prompt.path),
          ...(prompt.line === null ? {} : { line: prompt.line }),
          ...(prompt.limit === null ? {} : { limit: prompt.limit }),
        });
        await turn.say(read.content);
      } catch (error) {
        await turn.say(`error: ${errorMessage(error)}`);
      }
      return done;
    case "run":
      await runTerminal(turn, prompt.command, { limit: prompt.limit });
      return done;
    case "run-kill":
      await runTerminal(turn, prompt.command, { limit: null, killAfterMs: 200 });
      return done;
    case "run-release": {
      const terminal = await turn.client.createTerminal({
        sessionId: turn.session.id,
        command: prompt.command,
        cwd: turn.session.cwd,
      });
      await terminal.release();
      await turn.say(terminal.id);
      return done;
    }
    case "edit":
      return runEdit(turn, prompt.path, prompt.text);
    case "edit-ask-first":
      return runEdit(turn, prompt.path, prompt.text, "after");
    case "edit-ask-only":
      return runEdit(turn, prompt.path, prompt.text, "never");
    case "slow":
      return runStream(turn, prompt.ms, true);
    case "stubborn":
      return runStream(turn, prompt.ms, false);
    case "crash":
      await turn.say("about to crash");
      process.stderr.write("scripted agent: something went badly wrong\n");
      process.stderr.write("scripted agent: crashing mid-turn as asked\n");
      // Let the chunk and the stderr lines reach the client before the process goes.
      await sleep(50);
      return process.exit(7);
    case "showcase":
      return runShowcase(turn);
    case "history": {
      const prompts = turn.session.history.filter((entry) => entry.role === "user");
      await turn.say(
        [`history ${prompts.length}`, ...prompts.map((entry) => entry.text)].join("\n"),
      );
      return done;
    }
    case "exec": {
      const ran = spawnSync("sh", ["-c", prompt.command], {
        cwd: turn.session.cwd,
        encoding: "utf8",
        timeout: 60_000,
      });
      await turn.say(`exit ${ran.status ?? ran.signal}\n${ran.stdout}${ran.stderr}`);
      return done;
    }
    case "env":
      await turn.say(
        Object.entries(process.env)
          .map(([name, value]) => `${name}=${value}`)
          .join("\n"),
      );
      return done;
    case "settings": {
      const model = script.configOptions.find((option) => option.category === "model");
      await turn.say(
        `mode ${turn.session.modeId ?? script.modes.currentModeId} model ${turn.session.modelId ?? String(model?.currentValue ?? "none")}`,
      );
      return done;
    }
    case "reply":
      await turn.say(script.reply);
      return done;
  }
}

/** Which of the model proxy's settings are absent; the token must be a scoped model token. */
async function missingProxySettings(
  overrides: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<string[]> {
  // Loaded only here: the wire package costs every other mode's startup half a second.
  const { MODEL_TOKEN_PREFIX, WireEnv } = await import("@deckhand/wire");
  const missing: string[] = [];
  if (!overrides.some((override) => /^model_providers\.[^.]+\.base_url="http/.test(override))) {
    missing.push("a model provider base_url");
  }
  if (!env[WireEnv.modelProviderToken]?.startsWith(MODEL_TOKEN_PREFIX)) {
    missing.push(WireEnv.modelProviderToken);
  }
  if (!env[WireEnv.jobId]) missing.push(WireEnv.jobId);
  return missing;
}

function run(options: ScriptedAgentOptions): void {
  const script = scriptedAgentScript(options);
  if (options.mode === "garbage") {
    // Before any JSON-RPC, as a CLI that logs to stdout would.
    process.stdout.write("scripted agent: this line is not JSON\n");
  }
  const sessions = new Map<string, SessionState>();
  /** Whether `authenticate` succeeded (env-auth mode). */
  let authenticated = false;
  const stateFile = (sessionId: string) =>
    options.stateDir === null
      ? null
      : join(options.stateDir, `${encodeURIComponent(sessionId)}.json`);
  const persist = (session: SessionState) => {
    const file = stateFile(session.id);
    if (file === null) return;
    mkdirSync(options.stateDir!, { recursive: true });
    writeFileSync(file, JSON.stringify({ cwd: session.cwd, history: session.history }));
  };
  const restore = (sessionId: string): SessionState | null => {
    const known = sessions.get(sessionId);
    if (known) return known;
    const file = stateFile(sessionId);
    if (file === null) return null;
    try {
      const saved = JSON.parse(readFileSync(file, "utf8")) as {
        cwd: string;
        history: HistoryEntry[];
      };
      return { id: sessionId, cwd: saved.cwd, history: saved.history, cancelled: false };
    } catch {
      return null;
    }
  };
  const announceCommands = (client: acp.AgentContext, sessionId: string) => {
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
    // Like real agents, the commands arrive after the session answer, not inside it.
    setTimeout(announce, options.commandsDelayMs);
  };

  let app = acp
    .agent({ name: "scripted-acp-agent" })
    .onRequest(acp.methods.agent.initialize, async ({ params }) => {
      clientCapabilities = params.clientCapabilities ?? {};
      if (options.mode === "hang") {
        process.stderr.write("scripted agent: hanging in initialize as asked\n");
        return new Promise<never>(() => {});
      }
      if (options.mode === "crash") {
        process.stderr.write("scripted agent: crashing in initialize as asked\n");
        process.exit(3);
      }
      await sleep(options.initializeDelayMs);
      return {
        protocolVersion: acp.PROTOCOL_VERSION,
        agentCapabilities: {
          loadSession: options.loadSession,
          sessionCapabilities: { close: {}, ...(options.resumeSession ? { resume: {} } : {}) },
        },
        authMethods: script.authMethods,
        agentInfo: { name: "scripted-acp-agent", version: options.version },
      };
    })
    .onRequest(acp.methods.agent.authenticate, async ({ params }) => {
      if (options.mode === "env-auth" && params.methodId === "openai") {
        // As Qwen Code's refreshAuth: the key must be in the environment.
        if (!process.env.OPENAI_API_KEY) {
          throw acp.RequestError.internalError(
            undefined,
            "OPENAI_API_KEY environment variable not found",
          );
        }
        authenticated = true;
        return {};
      }
      throw acp.RequestError.authRequired(undefined, "the scripted agent accepts no login");
    })
    .onRequest(acp.methods.agent.session.new, async ({ params, client }) => {
      await sleep(options.sessionDelayMs);
      if (options.mode === "auth-required" || (options.mode === "env-auth" && !authenticated)) {
        throw acp.RequestError.authRequired(
          undefined,
          `scripted agent: log in first (scripted ${options.mode} mode)`,
        );
      }
      if (options.mode === "proxy-required") {
        const missing = await missingProxySettings(options.configOverrides, process.env);
        if (missing.length > 0) {
          throw acp.RequestError.authRequired(
            undefined,
            `scripted agent: no model provider (missing ${missing.join(", ")}); log in first`,
          );
        }
      }
      // Unique across agent processes, so a state directory can hold many sessions.
      const sessionId = `scripted-session-${randomUUID()}`;
      const session = { id: sessionId, cwd: params.cwd, history: [], cancelled: false };
      sessions.set(sessionId, session);
      persist(session);
      announceCommands(client, sessionId);
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
    .onRequest(acp.methods.agent.session.setMode, async ({ params }) => {
      const session = sessions.get(params.sessionId);
      if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
      if (!script.modes.availableModes.some((mode) => mode.id === params.modeId)) {
        throw acp.RequestError.invalidParams(undefined, `no mode ${params.modeId}`);
      }
      session.modeId = params.modeId;
      return {};
    })
    .onRequest(acp.methods.agent.session.setConfigOption, async ({ params }) => {
      const session = sessions.get(params.sessionId);
      if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
      const option = script.configOptions.find((candidate) => candidate.id === params.configId);
      const value = "value" in params ? String(params.value) : "";
      if (
        option?.type !== "select" ||
        !option.options.some((entry) => "value" in entry && entry.value === value)
      ) {
        throw acp.RequestError.invalidParams(undefined, `no ${params.configId} ${value}`);
      }
      session.modelId = value;
      return {
        configOptions: script.configOptions.map(
          (candidate): acp.SessionConfigOption =>
            candidate.id === option.id && candidate.type === "select"
              ? { ...candidate, currentValue: value }
              : candidate,
        ),
      };
    })
    .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
      const session = sessions.get(params.sessionId);
      if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
      session.cancelled = false;
      const text = params.prompt
        .flatMap((block) => (block.type === "text" ? [block.text] : []))
        .join("");
      const turn = new Turn(client, session);
      const outcome = await runPrompt(turn, parseScriptedPrompt(text), script);
      session.history.push({ role: "user", text }, { role: "agent", text: turn.reply });
      persist(session);
      return outcome as acp.PromptResponse;
    })
    .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
      const session = sessions.get(params.sessionId);
      if (session) session.cancelled = true;
    });
  if (options.loadSession) {
    app = app.onRequest(acp.methods.agent.session.load, async ({ params, client }) => {
      const session = restore(params.sessionId);
      if (!session) throw acp.RequestError.resourceNotFound(params.sessionId);
      session.cwd = params.cwd;
      sessions.set(session.id, session);
      // ACP: the whole conversation is replayed as notifications before the load is answered.
      for (const entry of session.history) {
        await client.notify(acp.methods.client.session.update, {
          sessionId: session.id,
          update: {
            sessionUpdate: entry.role === "user" ? "user_message_chunk" : "agent_message_chunk",
            content: { type: "text", text: entry.text },
          },
        });
      }
      announceCommands(client, session.id);
      return { modes: script.modes, configOptions: script.configOptions };
    });
  }

  if (options.resumeSession) {
    app = app.onRequest(acp.methods.agent.session.resume, async ({ params, client }) => {
      const session = restore(params.sessionId);
      if (!session) throw acp.RequestError.resourceNotFound(params.sessionId);
      session.cwd = params.cwd;
      sessions.set(session.id, session);
      // Unlike session/load, nothing is replayed: the client already showed the conversation.
      announceCommands(client, session.id);
      return { modes: script.modes, configOptions: script.configOptions };
    });
  }

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
} else if (parsed.kind === "version-refused") {
  // What codex-acp answers: it has no version flag.
  process.stderr.write("error: `--version` is not supported\n");
  process.exitCode = 2;
} else if (parsed.kind === "error") {
  process.stderr.write(`scripted-acp-agent: ${parsed.message}\n`);
  process.exitCode = 2;
} else {
  run(parsed.options);
}
