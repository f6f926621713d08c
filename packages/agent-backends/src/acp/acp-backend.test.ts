import { randomUUID } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { ProcessClient } from "@deckhand/process-manager";
import { chooseAuthMethod } from "@deckhand/providers";
import { REDACTED } from "@deckhand/secrets";
import {
  type ScriptedAcpAgentCommandOptions,
  scriptedAcpAgentCommand,
  scriptedAgentCommands,
} from "@deckhand/testkit";
import { type AgentEvent, AgentEventSchema, collectParts } from "@deckhand/wire";
import type { RunningAgent } from "@deckhand/workspace-agent";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startTestWorkspace, type TestWorkspace } from "../../test/test-workspace.ts";
import type { AgentBackend, AgentSessionContext, PromptResult } from "../backend.ts";
import { createInMemoryPermissionMemory } from "../permission-memory.ts";
import { type AcpBackendOptions, createAcpBackend } from "./acp-backend.ts";
import { agentEnvironment } from "./agent-process.ts";

const TOKEN = "acp-backend-test-token-7c2f";
const CHAT = "6b1f0e2d-3c4a-4b5c-8d9e-0f1a2b3c4d5e";
const SESSION = "0d9c8b7a-6e5f-4a3b-9c2d-1e0f9a8b7c6d";

let workspace: TestWorkspace;
let agent: RunningAgent;
let root: string;
let worktree: string;
const backends: AgentBackend[] = [];

beforeAll(async () => {
  workspace = await startTestWorkspace("deckhand-acp-backend-", { token: TOKEN });
  ({ agent, root, worktree } = workspace);
});

afterEach(async () => {
  await Promise.all(backends.splice(0).map((backend) => backend.dispose()));
});

afterAll(async () => {
  await workspace?.close();
});

function sessionContext(over: Partial<AgentSessionContext> = {}): AgentSessionContext {
  return {
    sessionId: SESSION,
    chatId: CHAT,
    worktreePath: worktree,
    workspaceAgent: { url: agent.url, token: TOKEN },
    modelProxy: null,
    resumeSessionId: null,
    ...over,
  };
}

function backendFor(
  command: ScriptedAcpAgentCommandOptions = {},
  over: Partial<AcpBackendOptions> = {},
): AgentBackend {
  const [executable, ...args] = scriptedAcpAgentCommand("normal", command);
  const backend = createAcpBackend({
    context: sessionContext(),
    launch: { executable: executable!, args, env: {}, unset: [] },
    agent: "scripted",
    timeouts: { initializeMs: 10_000, cancelMs: 2_000, stopGraceMs: 500 },
    ...over,
  });
  backends.push(backend);
  return backend;
}

interface Turn {
  events: AgentEvent[];
  result: Promise<PromptResult>;
  /** Resolves with the first event of `type` (already seen or still to come). */
  next<T extends AgentEvent["type"]>(type: T): Promise<Extract<AgentEvent, { type: T }>>;
}

function start(backend: AgentBackend, text: string, signal?: AbortSignal): Turn {
  const events: AgentEvent[] = [];
  const waiters: Array<() => void> = [];
  const result = backend.prompt({
    messageId: randomUUID(),
    text,
    onEvent(event) {
      // Every event must be one the wire can carry to the browser.
      events.push(AgentEventSchema.parse(event));
      for (const wake of waiters.splice(0)) wake();
    },
    ...(signal === undefined ? {} : { signal }),
  });
  return {
    events,
    result,
    async next(type) {
      for (;;) {
        const found = events.find((event) => event.type === type);
        if (found) return found as never;
        await Promise.race([
          new Promise<void>((resolve) => waiters.push(resolve)),
          result.then(() => {
            throw new Error(`the turn ended without a ${type} event`);
          }),
        ]);
      }
    },
  };
}

/** The turn's own event types, without the session-wide ones (commands, mode) a start sends. */
function turnTypes(events: AgentEvent[]): string[] {
  return events.flatMap((event) =>
    event.type === "commands" || event.type === "mode" ? [] : [event.type],
  );
}

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function run(backend: AgentBackend, text: string) {
  const turn = start(backend, text);
  const result = await turn.result;
  return { ...result, events: turn.events };
}

describe("the ACP backend with the scripted agent", () => {
  it("puts the agent in a turn's mode (session/set_mode) and model (its model option), and keeps them", async () => {
    const backend = backendFor();
    expect((await run(backend, "settings")).text).toBe("mode ask model scripted-large");
    const events: AgentEvent[] = [];
    const chosen = await backend.prompt({
      messageId: randomUUID(),
      text: "settings",
      model: "scripted-small",
      mode: "code",
      onEvent: (event) => {
        events.push(event);
      },
    });
    expect(chosen.text).toBe("mode code model scripted-small");
    // The browser learns the new mode as it learns a mode the agent changed itself.
    expect(events).toContainEqual({ type: "mode", agent: "scripted", mode_id: "code" });
    // A turn naming neither leaves them as they are.
    expect((await run(backend, "settings")).text).toBe("mode code model scripted-small");
  });

  it("fails the turn with the agent's refusal when it rejects a mode", async () => {
    const backend = backendFor();
    const events: AgentEvent[] = [];
    const refused = await backend.prompt({
      messageId: randomUUID(),
      text: "settings",
      mode: "yolo",
      onEvent: (event) => {
        events.push(event);
      },
    });
    expect(refused.stopReason).toBe("error");
    const error = events.find((event) => event.type === "error");
    expect(error).toMatchObject({
      message: expect.stringContaining("scripted refused the turn's settings"),
    });
  });

  it("keeps secrets from the agent: withheld from its environment, redacted in terminal output", async () => {
    const operatorKey = "sk-operator-key-in-the-server-env";
    const before = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = operatorKey;
    try {
      // No `inherit`: the default agent-environment policy applies to this process's own.
      const backend = backendFor();
      const environment = await run(backend, "env");
      expect(environment.text).toContain("PATH=");
      expect(environment.text).not.toContain(operatorKey);

      const printed = await run(backend, `run echo token=${TOKEN}`);
      expect(printed.text).toContain(`token=${REDACTED}`);
      expect(JSON.stringify(printed.events)).not.toContain(TOKEN);
      expect(printed.text).not.toContain(TOKEN);
    } finally {
      if (before === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = before;
    }
  });

  it("maps one of each update to events, in order, with tool calls and updates distinct", async () => {
    const idle: AgentEvent[] = [];
    const backend = backendFor({}, { onIdleEvent: (event) => idle.push(event) });
    const session = await backend.ensureSession();
    expect(session).toMatchObject({ resumed: false });
    expect(session.agentSessionId).toMatch(/^scripted-session-/);
    expect(backend.health()).toMatchObject({ status: "idle", lastError: null });
    expect(backend.health().pid).toBeGreaterThan(0);
    // The commands come between turns, shortly after session/new.
    await until(() => idle.some((event) => event.type === "commands"));

    const { stopReason, text, events } = await run(backend, "showcase");
    expect(stopReason).toBe("end_turn");
    expect(text).toBe("showcase done");
    expect(events.map((event) => event.type)).toEqual([
      "reasoning",
      "plan",
      "tool_call",
      "tool_update",
      "tool_update",
      "mode",
      "text",
      "usage",
      "turn_end",
    ]);
    const [, , call, started, done] = events;
    expect(call).toMatchObject({
      type: "tool_call",
      kind: "read",
      status: "pending",
      title: "Look at README.md",
      locations: ["README.md"],
    });
    expect(started).toMatchObject({
      tool_call_id: (call as { tool_call_id: string }).tool_call_id,
      status: "in_progress",
    });
    expect(done).toMatchObject({ status: "completed", content: "looked" });
    expect(events.at(-2)).toMatchObject({ input_tokens: 11, output_tokens: 7, total_tokens: 18 });
    expect(events.at(-1)).toMatchObject({ type: "turn_end", stop_reason: "end_turn" });
    expect(
      new Set(events.flatMap((event) => ("message_id" in event ? [event.message_id] : []))).size,
    ).toBe(1);

    expect(idle).toContainEqual({
      type: "commands",
      agent: "scripted",
      commands: scriptedAgentCommands.map((command) => ({
        name: command.name,
        description: command.description,
        kind: command.name === "release-notes" ? "skill" : "command",
      })),
    });
    expect(idle).toContainEqual({ type: "mode", agent: "scripted", mode_id: "ask" });
  });

  it("writes files inside the worktree and refuses paths outside it", async () => {
    const backend = backendFor();
    const inside = await run(backend, "write notes/hello.txt hello from the agent");
    expect(inside.text).toBe("wrote notes/hello.txt");
    expect(readFileSync(join(worktree, "notes/hello.txt"), "utf8")).toBe("hello from the agent");
    expect(inside.events.filter((event) => event.type.startsWith("tool"))).toMatchObject([
      { type: "tool_call", kind: "edit", locations: ["notes/hello.txt"] },
      { type: "tool_update", status: "completed" },
    ]);

    // Inside the workspace agent's root, but not the worktree: this backend's guard refuses it.
    const outsidePath = join(root, "escaped.txt");
    const outside = await run(backend, `write ${outsidePath} nope`);
    expect(outside.text).toMatch(/^error: .*outside the worktree/);
    expect(existsSync(outsidePath)).toBe(false);
    const dotted = await run(backend, "write ../escaped-too.txt nope");
    expect(dotted.text).toMatch(/^error: .*outside the worktree/);
    expect(existsSync(join(root, "escaped-too.txt"))).toBe(false);

    const read = await run(backend, "read notes/hello.txt");
    expect(read.text).toBe("hello from the agent");
    await run(backend, "write lines.txt one\ntwo\nthree\nfour\n");
    expect((await run(backend, "read lines.txt 2 2")).text).toBe("two\nthree\n");
    expect((await run(backend, "read missing.txt")).text).toMatch(/^error: .*not found/i);
  });

  it("refuses a symlink in the worktree to a sibling directory under the agent's root", async () => {
    // Lexically inside the worktree, and inside the agent's root once resolved: only the
    // worktree as the file API's root for the request catches it.
    mkdirSync(join(root, "sibling"), { recursive: true });
    writeFileSync(join(root, "sibling", "secret.txt"), "sibling secret\n");
    symlinkSync(join(root, "sibling"), join(worktree, "acp-sib"));
    const backend = backendFor();
    const read = await run(backend, "read acp-sib/secret.txt");
    expect(read.text).toMatch(/^error: .*outside the workspace root/);
    expect(read.text).not.toContain("sibling secret");
    const write = await run(backend, "write acp-sib/new.txt pwned");
    expect(write.text).toMatch(/^error: .*outside the workspace root/);
    const overwrite = await run(backend, "write acp-sib/secret.txt pwned");
    expect(overwrite.text).toMatch(/^error: /);
    expect(readdirSync(join(root, "sibling"))).toEqual(["secret.txt"]);
    expect(readFileSync(join(root, "sibling", "secret.txt"), "utf8")).toBe("sibling secret\n");
  });

  it("runs terminal commands through the process API: output, exit, byte limit, kill, release", async () => {
    const backend = backendFor();
    const ran = await run(backend, "run echo out; echo err >&2; pwd; exit 3");
    expect(ran.text).toBe(`exit 3 truncated false\nout\nerr\n${worktree}\n`);
    expect(ran.events.filter((event) => event.type.startsWith("tool"))).toMatchObject([
      { type: "tool_call", kind: "execute", status: "pending" },
      { type: "tool_update", status: "in_progress", content: expect.stringMatching(/^terminal: /) },
      { type: "tool_update", status: "failed" },
    ]);

    const limited = await run(backend, "run --limit 6 printf 'abcdefghij€xyz'");
    expect(limited.text).toBe("exit 0 truncated true\n€xyz");

    const killed = await run(backend, "run-kill sleep 30");
    expect(killed.text).toBe("signal SIGKILL truncated false\n");

    const processes = new ProcessClient({ baseUrl: agent.url, token: TOKEN, chatId: CHAT });
    const released = await run(backend, "run-release sleep 30");
    const processId = released.text.replace(/^term-\d+-/, "");
    // Released while running: the backend killed it (the exit is recorded a moment later).
    const find = async () =>
      (await processes.list({ limit: 100 })).processes.find(
        (candidate) => candidate.id === processId,
      );
    const deadline = Date.now() + 5_000;
    while ((await find())?.running !== false && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const info = await find();
    expect(info).toMatchObject({ running: false, signal: "SIGKILL" });
  });

  it("asks permission before an edit and obeys allow and reject", async () => {
    const backend = backendFor();
    const allowed = start(backend, "edit allowed.txt yes please");
    const request = await allowed.next("permission_request");
    expect(request.options.map((option) => option.kind)).toEqual([
      "allow_once",
      "allow_always",
      "reject_once",
      "reject_always",
    ]);
    expect(request.tool_call_id).toBe(
      allowed.events.find((event) => event.type === "tool_call")?.tool_call_id,
    );
    await backend.respondToPermission({ requestId: request.request_id, outcome: "allow_once" });
    expect(await allowed.result).toMatchObject({
      stopReason: "end_turn",
      text: "edited allowed.txt",
    });
    expect(readFileSync(join(worktree, "allowed.txt"), "utf8")).toBe("yes please");
    expect(turnTypes(allowed.events)).toEqual([
      "tool_call",
      "permission_request",
      "permission_resolved",
      "tool_update",
      "tool_update",
      "text",
      "turn_end",
    ]);
    expect(allowed.events.find((event) => event.type === "permission_resolved")).toMatchObject({
      request_id: request.request_id,
      outcome: "allow_once",
    });

    const rejected = start(backend, "edit rejected.txt no thanks");
    const second = await rejected.next("permission_request");
    await backend.respondToPermission({ requestId: second.request_id, outcome: "reject_once" });
    expect(await rejected.result).toMatchObject({ stopReason: "end_turn", text: "rejected" });
    expect(existsSync(join(worktree, "rejected.txt"))).toBe(false);
    await expect(
      backend.respondToPermission({ requestId: second.request_id, outcome: "allow_once" }),
    ).rejects.toMatchObject({ code: "unknown_permission_request" });
  });

  it("announces a tool call a permission request names first with all the request's fields", async () => {
    const backend = backendFor();
    for (const directive of ["edit-ask-only", "edit-ask-first"]) {
      const turn = start(backend, `${directive} asked.txt from the request`);
      const request = await turn.next("permission_request");
      // Before anyone answers, the call is known with what the request said of it.
      const announced = turn.events.find((event) => event.type === "tool_call");
      expect(announced).toMatchObject({
        tool_call_id: request.tool_call_id,
        title: "Edit asked.txt",
        kind: "edit",
        status: "pending",
        input: { path: "asked.txt", text: "from the request" },
        locations: ["asked.txt"],
      });
      expect(turn.events.indexOf(announced!)).toBeLessThan(turn.events.indexOf(request));
      await backend.respondToPermission({ requestId: request.request_id, outcome: "allow_once" });
      expect(await turn.result).toMatchObject({ stopReason: "end_turn" });
      const parts = collectParts(turn.events);
      expect(parts.filter((part) => part.kind === "tool_call")).toEqual([
        expect.objectContaining({
          content: expect.objectContaining({
            tool_call_id: request.tool_call_id,
            kind: "edit",
            status: "completed",
            input: { path: "asked.txt", text: "from the request" },
            locations: ["asked.txt"],
            permission: expect.objectContaining({ outcome: "allow_once" }),
          }),
        }),
      ]);
    }
  });

  it("remembers an always answer per (session, agent, tool kind) and still shows it", async () => {
    const memory = createInMemoryPermissionMemory();
    const backend = backendFor({}, { permissionMemory: memory });
    const first = start(backend, "edit always.txt one");
    const request = await first.next("permission_request");
    await backend.respondToPermission({ requestId: request.request_id, outcome: "allow_always" });
    await first.result;
    expect(await memory.get({ sessionId: SESSION, agent: "scripted", toolKind: "edit" })).toBe(
      "allow_always",
    );
    expect(await memory.get({ sessionId: SESSION, agent: "other", toolKind: "edit" })).toBeNull();

    // Answered without asking: the events still tell the UI what happened.
    const second = await run(backend, "edit always.txt two");
    expect(second.text).toBe("edited always.txt");
    expect(readFileSync(join(worktree, "always.txt"), "utf8")).toBe("two");
    const resolved = second.events.filter((event) => event.type.startsWith("permission"));
    expect(resolved).toMatchObject([
      { type: "permission_request" },
      { type: "permission_resolved", outcome: "allow_always" },
    ]);

    // Another backend of the same session and agent (a restarted server) shares the memory.
    const later = backendFor({}, { permissionMemory: memory });
    expect((await run(later, "edit always.txt three")).text).toBe("edited always.txt");

    await memory.set({ sessionId: SESSION, agent: "scripted", toolKind: "edit" }, "reject_always");
    const refused = await run(later, "edit always.txt four");
    expect(refused.text).toBe("rejected");
    expect(readFileSync(join(worktree, "always.txt"), "utf8")).toBe("three");
  });

  it("cancels a turn with a pending permission request: the request resolves as cancelled", async () => {
    const backend = backendFor();
    const turn = start(backend, "edit cancelled.txt never");
    const request = await turn.next("permission_request");
    const pid = backend.health().pid;
    await backend.cancel();
    expect(await turn.result).toMatchObject({ stopReason: "cancelled" });
    expect(turn.events.filter((event) => event.type === "permission_resolved")).toEqual([
      expect.objectContaining({ request_id: request.request_id, outcome: "cancelled" }),
    ]);
    expect(turn.events.at(-1)).toMatchObject({ type: "turn_end", stop_reason: "cancelled" });
    expect(existsSync(join(worktree, "cancelled.txt"))).toBe(false);
    await expect(
      backend.respondToPermission({ requestId: request.request_id, outcome: "allow_once" }),
    ).rejects.toMatchObject({ code: "unknown_permission_request" });
    // The agent honoured the cancel, so it keeps running.
    expect(backend.health()).toMatchObject({ status: "idle", pid });
    expect((await run(backend, "hello")).text).toBe("scripted reply");
  });

  it("cancels a long turn through session/cancel and an AbortSignal", async () => {
    const backend = backendFor();
    const turn = start(backend, "slow");
    await turn.next("text");
    const pid = backend.health().pid;
    expect(backend.health().status).toBe("active");
    await backend.cancel();
    expect((await turn.result).stopReason).toBe("cancelled");
    expect(backend.health()).toMatchObject({ status: "idle", pid });

    const abort = new AbortController();
    const aborted = start(backend, "slow", abort.signal);
    await aborted.next("text");
    abort.abort();
    expect((await aborted.result).stopReason).toBe("cancelled");
  });

  it("stops an agent that ignores session/cancel, and starts it again, resumed, on the next prompt", async () => {
    const backend = backendFor(
      { stateDir: join(root, "stubborn-state") },
      { timeouts: { cancelMs: 300, stopGraceMs: 300 } },
    );
    const first = await backend.ensureSession();
    const turn = start(backend, "stubborn 20000");
    await turn.next("text");
    const pid = backend.health().pid;
    const began = Date.now();
    await backend.cancel();
    // Well short of the agent's 20 s, however busy the machine.
    expect(Date.now() - began).toBeLessThan(15_000);
    expect(await turn.result).toMatchObject({ stopReason: "cancelled" });
    expect(turn.events.some((event) => event.type === "error")).toBe(false);
    expect(backend.health()).toMatchObject({ status: "idle", pid: null });

    const again = await run(backend, "hello");
    expect(again.text).toBe("scripted reply");
    expect(backend.health().pid).not.toBe(pid);
    expect(await backend.ensureSession()).toEqual({
      agentSessionId: first.agentSessionId,
      resumed: true,
    });
  });

  it("reports a crash with the stderr tail and starts the agent afresh on the next prompt", async () => {
    const backend = backendFor();
    await backend.ensureSession();
    const pid = backend.health().pid;
    const crashed = await run(backend, "crash");
    expect(crashed.stopReason).toBe("error");
    expect(turnTypes(crashed.events)).toEqual(["text", "error", "turn_end"]);
    const error = crashed.events.find((event) => event.type === "error")!;
    expect(error.message).toContain("exited with code 7");
    expect(error.stderr_tail).toContain("scripted agent: crashing mid-turn as asked");
    expect(crashed.events.at(-1)).toMatchObject({ stop_reason: "error" });
    expect(backend.health()).toMatchObject({ status: "crashed", pid: null });
    expect(backend.health().lastError).toContain("exited with code 7");

    const after = await run(backend, "hello");
    expect(after).toMatchObject({ stopReason: "end_turn", text: "scripted reply" });
    expect(backend.health().status).toBe("idle");
    expect(backend.health().pid).not.toBe(pid);
  });

  it("fails a turn with an error event when the agent cannot start", async () => {
    const backend = createAcpBackend({
      context: sessionContext({
        modelProxy: { url: "http://127.0.0.1:1/x", token: "dh_secret_token_123", jobId: "j" },
      }),
      launch: { executable: join(root, "no-such-agent"), args: [], env: {}, unset: [] },
      agent: "missing",
    });
    backends.push(backend);
    await expect(backend.ensureSession()).rejects.toMatchObject({ code: "agent_start_failed" });
    const turn = await run(backend, "hello");
    expect(turn.stopReason).toBe("error");
    expect(turn.events[0]).toMatchObject({
      type: "error",
      message: expect.stringContaining("ENOENT"),
    });
  });

  it("resumes the agent's own session without showing its history again", async () => {
    const stateDir = join(root, "agent-state");
    const first = backendFor({ stateDir });
    const { agentSessionId } = await first.ensureSession();
    await run(first, "hello");
    await run(first, "write resumed.txt earlier work");
    await first.dispose();
    expect(first.health().status).toBe("closed");
    await expect(
      first.prompt({ messageId: randomUUID(), text: "x", onEvent() {} }),
    ).rejects.toMatchObject({
      code: "disposed",
    });

    const idle: AgentEvent[] = [];
    const second = createAcpBackend({
      context: sessionContext({ resumeSessionId: agentSessionId }),
      launch: (() => {
        const [executable, ...args] = scriptedAcpAgentCommand("normal", { stateDir });
        return { executable: executable!, args, env: {}, unset: [] };
      })(),
      agent: "scripted",
      onIdleEvent: (event) => idle.push(event),
    });
    backends.push(second);
    expect(await second.ensureSession()).toEqual({ agentSessionId, resumed: true });
    // As after session/resume below: the turn starts once the agent's commands are in.
    await until(() => idle.some((event) => event.type === "commands"));
    const next = await run(second, "hello");
    // Only this turn's reply: the replayed "hello" / "scripted reply" / "wrote ..." stay out.
    expect(next.events.map((event) => event.type)).toEqual(["text", "turn_end"]);
    expect(next.text).toBe("scripted reply");
    expect(idle.some((event) => event.type === "text")).toBe(false);

    // An agent without loadSession gets a new session, and says so.
    const noLoad = backendFor(
      { stateDir, noLoad: true },
      { context: sessionContext({ resumeSessionId: agentSessionId }) },
    );
    const fresh = await noLoad.ensureSession();
    expect(fresh.resumed).toBe(false);
    expect(fresh.agentSessionId).not.toBe(agentSessionId);

    // A session the agent no longer knows: a new one, too.
    const unknown = backendFor(
      {},
      { context: sessionContext({ resumeSessionId: "scripted-session-gone" }) },
    );
    expect((await unknown.ensureSession()).resumed).toBe(false);
  });

  it("logs an agent in with a method its environment serves when it refuses session/new for want of one", async () => {
    const [executable, ...args] = scriptedAcpAgentCommand("env-auth");
    const backendWith = (env: Record<string, string>) => {
      const launch = { executable: executable!, args, env, unset: ["OPENAI_API_KEY"] };
      const backend = createAcpBackend({
        context: sessionContext(),
        launch,
        agent: "qwen",
        timeouts: { initializeMs: 10_000, cancelMs: 2_000, stopGraceMs: 500 },
        login: (methods, refusal) =>
          chooseAuthMethod({
            methods,
            env: agentEnvironment(launch),
            refusal,
            advice: "log in with the agent's own CLI",
            keysInEnv: true,
          }),
      });
      backends.push(backend);
      return backend;
    };
    const loggedIn = backendWith({ OPENAI_API_KEY: "sk-the-users-own-key-1234" });
    expect((await loggedIn.ensureSession()).resumed).toBe(false);
    expect((await run(loggedIn, "hello")).text).toBe("scripted reply");

    const refused = backendWith({});
    await expect(refused.ensureSession()).rejects.toMatchObject({
      code: "agent_start_failed",
      message: expect.stringContaining(
        "the agent needs a login before it can open a session (it offers: Use OpenAI API key (needs OPENAI_API_KEY; not set: OPENAI_API_KEY)): Authentication required",
      ),
    });
    expect(refused.health().lastError).toContain(
      "set OPENAI_API_KEY in the provider's env in providers.json",
    );
  });

  it("logs the agent's whole error when it refuses session/load: code, message and data", async () => {
    const warnings: { message: string; fields: Record<string, unknown> | undefined }[] = [];
    const backend = backendFor(
      {},
      {
        context: sessionContext({ resumeSessionId: "scripted-session-gone" }),
        logger: {
          info() {},
          error() {},
          warn: (message, fields) => warnings.push({ message, fields }),
        },
      },
    );
    expect((await backend.ensureSession()).resumed).toBe(false);
    expect(warnings).toEqual([
      {
        message: "the agent could not resume its session; starting a new one",
        fields: {
          agent: "scripted",
          method: "session/load",
          // The scripted agent answers as the SDK's resourceNotFound does.
          code: -32002,
          error: "Resource not found: scripted-session-gone",
          data: { uri: "scripted-session-gone" },
        },
      },
    ]);
  });

  it("resumes through session/resume when the agent offers it: the session goes on, nothing replayed", async () => {
    const stateDir = join(root, "agent-state-resume");
    const command = { stateDir, resume: true, noLoad: true };
    const first = backendFor(command);
    const { agentSessionId } = await first.ensureSession();
    await run(first, "hello");
    await run(first, "write resumed-by-resume.txt earlier work");
    await first.dispose();

    const idle: AgentEvent[] = [];
    const second = backendFor(command, {
      context: sessionContext({ resumeSessionId: agentSessionId }),
      onIdleEvent: (event) => idle.push(event),
    });
    // resumed is only possible through session/resume: this agent offers no session/load.
    expect(await second.ensureSession()).toEqual({ agentSessionId, resumed: true });
    // The commands come shortly after session/resume; on a busy machine a turn started at once
    // would get them as its own.
    await until(() => idle.some((event) => event.type === "commands"));
    const next = await run(second, "history");
    // The agent remembers both earlier prompts, and only this turn's reply is on the stream.
    expect(next.events.map((event) => event.type)).toEqual(["text", "turn_end"]);
    expect(next.text).toBe("history 2\nhello\nwrite resumed-by-resume.txt earlier work");
    expect(idle.filter((event) => event.type !== "commands")).toEqual([
      { type: "mode", agent: "scripted", mode_id: "ask" },
    ]);

    // A session the agent does not know: refused, so a new one is started and reported.
    const unknown = backendFor(command, {
      context: sessionContext({ resumeSessionId: "scripted-session-gone" }),
    });
    const fresh = await unknown.ensureSession();
    expect(fresh.resumed).toBe(false);
    expect((await run(unknown, "history")).text).toBe("history 0");
  });

  it("refuses a second prompt while a turn runs", async () => {
    const backend = backendFor();
    const turn = start(backend, "slow 5000");
    await turn.next("text");
    await expect(run(backend, "hello")).rejects.toMatchObject({ code: "turn_in_progress" });
    await backend.cancel();
    await turn.result;
  });
});
