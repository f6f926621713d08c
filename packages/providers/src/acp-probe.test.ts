import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ScriptedAcpAgentCommandOptions,
  type ScriptedAgentMode,
  scriptedAcpAgentCommand,
  scriptedAgentCommands,
  scriptedAgentModels,
  scriptedAgentModes,
} from "@deckhand/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ANSWERING_AGENT_START_MS } from "../test/support.ts";
import { commandKind, probeAcpAgent, versionOutput } from "./acp-probe.ts";

function probe(
  mode: ScriptedAgentMode,
  overrides: {
    /** initialize's bound, and session/new's unless `sessionTimeoutMs` says otherwise. */
    timeoutMs?: number;
    sessionTimeoutMs?: number;
    commandsWaitMs?: number;
    signal?: AbortSignal;
    command?: ScriptedAcpAgentCommandOptions;
  } = {},
) {
  const [executable, ...args] = scriptedAcpAgentCommand(mode, overrides.command);
  return probeAcpAgent({
    executable: executable!,
    args,
    env: { ...process.env },
    initializeTimeoutMs: overrides.timeoutMs ?? ANSWERING_AGENT_START_MS,
    sessionTimeoutMs: overrides.sessionTimeoutMs ?? overrides.timeoutMs ?? ANSWERING_AGENT_START_MS,
    commandsWaitMs: overrides.commandsWaitMs ?? 1_000,
    ...(overrides.signal ? { signal: overrides.signal } : {}),
  });
}

// Probes make their directories under the temporary directory. Other test files (and other
// checkouts on the machine) probe at the same time, so this file's probes get one of their own,
// where a directory left behind is this file's.
const sharedTemporaryDirectory = process.env.TMPDIR;
let ownTemporaryDirectory = "";
beforeAll(() => {
  ownTemporaryDirectory = mkdtempSync(join(tmpdir(), "deckhand-probe-test-"));
  process.env.TMPDIR = ownTemporaryDirectory;
});
afterAll(() => {
  if (sharedTemporaryDirectory === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = sharedTemporaryDirectory;
  rmSync(ownTemporaryDirectory, { recursive: true, force: true });
});

function probeDirectories(): string[] {
  return readdirSync(tmpdir()).filter((name) => name.startsWith("deckhand-probe-"));
}

describe("probeAcpAgent against the scripted agent", () => {
  it("collects version, models, modes and commands (one a skill) from a normal agent", async () => {
    const outcome = await probe("normal");
    expect(outcome.status).toBe("ready");
    expect(outcome.result).toEqual({
      agentName: "scripted-acp-agent",
      version: "1.2.3",
      models: scriptedAgentModels.map((model) => ({
        id: model.value,
        name: model.name,
        description: model.description ?? null,
      })),
      currentModel: "scripted-large",
      modes: scriptedAgentModes.map((mode) => ({
        id: mode.id,
        name: mode.name,
        description: mode.description ?? null,
      })),
      currentMode: "ask",
      commands: scriptedAgentCommands.map((command) => ({
        name: command.name,
        description: command.description,
        kind: command.name === "release-notes" ? "skill" : "command",
        input_hint: command.input?.hint ?? null,
      })),
      commandsComplete: true,
      stderrTail: "",
    });
  });

  it("waits for late commands up to the bound, and no longer", async () => {
    const [executable, ...args] = scriptedAcpAgentCommand("slow-commands", {
      commandsDelayMs: 300,
    });
    const late = await probeAcpAgent({
      executable: executable!,
      args,
      env: { ...process.env },
      initializeTimeoutMs: ANSWERING_AGENT_START_MS,
      sessionTimeoutMs: ANSWERING_AGENT_START_MS,
      commandsWaitMs: 2_000,
    });
    expect(late.status).toBe("ready");
    expect(late.result.commands).toHaveLength(3);

    // Commands 5 s after the session, a 300 ms bound: the probe ends before they come (none
    // collected), however long the agent took to start on a busy machine.
    const tooLate = await probe("slow-commands", {
      commandsWaitMs: 300,
      command: { commandsDelayMs: 5_000 },
    });
    expect(tooLate.status).toBe("ready");
    expect(tooLate.result).toMatchObject({
      commands: [],
      commandsComplete: false,
      version: "1.2.3",
    });
  });

  it("ends a hanging agent as an error after the timeout, with its stderr", async () => {
    // Long enough for the agent to start and say so on a loaded machine; the error names the
    // bound that ended it.
    const outcome = await probe("hang", { timeoutMs: 8_000 });
    expect(outcome).toMatchObject({
      status: "error",
      error: "no answer to initialize within 8000 ms; the agent looks stuck",
    });
    expect(outcome.result.stderrTail).toContain("hanging in initialize");
  });

  it("bounds initialize and session/new each on its own", async () => {
    // Together the two steps take longer than session/new's bound, which only counts from the
    // initialize answer; the agent's start gets a bound of its own, as long as a busy machine
    // needs.
    const slow = { initializeDelayMs: 3_000, sessionDelayMs: 1_500 };
    expect(
      await probe("normal", {
        timeoutMs: ANSWERING_AGENT_START_MS,
        sessionTimeoutMs: 4_000,
        command: slow,
      }),
    ).toMatchObject({ status: "ready", result: { version: "1.2.3" } });
    expect(
      await probe("normal", {
        timeoutMs: ANSWERING_AGENT_START_MS,
        sessionTimeoutMs: 400,
        command: slow,
      }),
    ).toMatchObject({
      status: "error",
      error: "no answer to session/new within 400 ms; the agent looks stuck",
    });
  });

  it("reports a crash with its exit code and stderr", async () => {
    const outcome = await probe("crash");
    expect(outcome).toMatchObject({
      status: "error",
      error: "the agent exited (code 3) during initialize",
    });
    expect(outcome.result.stderrTail).toContain("crashing in initialize");
  });

  it("refuses an agent that writes something other than ACP to stdout", async () => {
    const outcome = await probe("garbage");
    expect(outcome).toMatchObject({
      status: "error",
      error:
        'the agent wrote something that is not ACP JSON to stdout: "scripted agent: this line is not JSON"',
    });
  });

  it("explains an agent that needs a login, keeping what initialize said", async () => {
    const outcome = await probe("auth-required");
    expect(outcome.status).toBe("error");
    if (outcome.status === "ready") return;
    expect(outcome.error).toMatch(
      /^the agent needs a login before it can open a session \(it offers: Scripted login \(an interactive login\)\)/,
    );
    expect(outcome.result.version).toBe("1.2.3");
  });

  it("logs an agent in with an auth method its environment serves, as Qwen Code's OpenAI key", async () => {
    const [executable, ...args] = scriptedAcpAgentCommand("env-auth");
    const withKey = await probeAcpAgent({
      executable: executable!,
      args,
      env: { ...process.env, OPENAI_API_KEY: "sk-the-users-own-key" },
      initializeTimeoutMs: ANSWERING_AGENT_START_MS,
      sessionTimeoutMs: ANSWERING_AGENT_START_MS,
      commandsWaitMs: 1_000,
    });
    expect(withKey).toMatchObject({ status: "ready", result: { version: "1.2.3" } });

    const { OPENAI_API_KEY: _withheld, ...withoutKey } = process.env;
    const without = await probeAcpAgent({
      executable: executable!,
      args,
      env: withoutKey,
      initializeTimeoutMs: ANSWERING_AGENT_START_MS,
      sessionTimeoutMs: ANSWERING_AGENT_START_MS,
      commandsWaitMs: 1_000,
    });
    expect(without).toMatchObject({
      status: "error",
      error:
        "the agent needs a login before it can open a session (it offers: Use OpenAI API key (needs OPENAI_API_KEY; not set: OPENAI_API_KEY)): Authentication required: scripted agent: log in first (scripted env-auth mode); set OPENAI_API_KEY in the provider's env in providers.json (Deckhand then logs the agent in with it), or log in with the agent's own CLI, or configure its credentials in the provider's env",
    });
  });

  it("calls a command that does not exist not installed", async () => {
    const outcome = await probeAcpAgent({
      executable: "/nonexistent/agent",
      args: [],
      env: {},
      initializeTimeoutMs: 2_000,
      sessionTimeoutMs: 2_000,
      commandsWaitMs: 100,
    });
    expect(outcome).toMatchObject({
      status: "not_installed",
      error: "cannot start /nonexistent/agent: ENOENT",
    });
  });

  it("stops at once when cancelled, and leaves no temporary directory behind", async () => {
    const before = new Set(probeDirectories());
    const controller = new AbortController();
    // The bound is far off: the error says the cancel ended the probe, not the bound.
    const running = probe("hang", { signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    expect(await running).toMatchObject({ status: "error", error: "the probe was cancelled" });
    expect(probeDirectories().filter((name) => !before.has(name))).toEqual([]);
  });

  it("gives a version command that takes seconds, as a Node wrapper on a busy machine, its time", async () => {
    const directory = mkdtempSync(join(ownTemporaryDirectory, "slow-version-"));
    const executable = join(directory, "slow-version-agent");
    writeFileSync(executable, "#!/bin/sh\nsleep 4\necho 'slow-version-agent 2.0.0'\n", {
      mode: 0o755,
    });
    expect(await versionOutput(executable, ["--version"], { PATH: process.env.PATH })).toEqual({
      output: "slow-version-agent 2.0.0\n",
      exitCode: 0,
      timedOut: false,
    });
  });

  it("runs the version arguments it is given for the diagnostic", async () => {
    const [executable, ...args] = scriptedAcpAgentCommand("hang", { agentVersion: "9.9.9" });
    expect(await versionOutput(executable!, [...args, "--version"], { ...process.env })).toEqual({
      output: "scripted-acp-agent 9.9.9\n",
      exitCode: 0,
      timedOut: false,
    });
  });
});

describe("commandKind", () => {
  it("is a skill only when _meta.kind says so", () => {
    expect(commandKind({ kind: "skill" })).toBe("skill");
    expect(commandKind({ kind: "other" })).toBe("command");
    expect(commandKind(null)).toBe("command");
    expect(commandKind(undefined)).toBe("command");
  });
});

describe("probeAcpAgent with arguments spawn cannot pass", () => {
  it("ends as an error instead of throwing", async () => {
    const outcome = await probeAcpAgent({
      executable: process.execPath,
      args: ["bad\u0000argument"],
      env: {},
      initializeTimeoutMs: 1_000,
      sessionTimeoutMs: 1_000,
      commandsWaitMs: 100,
    });
    expect(outcome.status).toBe("error");
    if (outcome.status !== "ready") expect(outcome.error).toContain("cannot start");
  });
});
