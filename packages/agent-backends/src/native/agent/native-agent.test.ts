import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ProcessClient } from "@deckhand/process-manager";
import { REDACTED, rememberSecrets } from "@deckhand/secrets";
import { type FakeModel, item, startFakeModel, turn } from "@deckhand/testkit";
import { type AgentEvent, WireHeader } from "@deckhand/wire";
import type { RunningAgent } from "@deckhand/workspace-agent";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startTestWorkspace, type TestWorkspace } from "../../../test/test-workspace.ts";
import type { PromptResult } from "../../backend.ts";
import { createInMemoryPermissionMemory } from "../../permission-memory.ts";
import {
  createNativeBackend,
  type NativeBackend,
  type NativeBackendOptions,
} from "./native-agent.ts";
import { MemorySessionRecorder } from "./recorder.ts";

const AGENT_TOKEN = "native-agent-test-token-77c1";
const MODEL_TOKEN = "dmt_native_agent_model_token_5e2a";

let workspace: TestWorkspace;
let agent: RunningAgent;
let fake: FakeModel;
let worktree: string;
const backends: NativeBackend[] = [];

beforeAll(async () => {
  workspace = await startTestWorkspace("deckhand-native-agent-", {
    token: AGENT_TOKEN,
    gitInit: true,
  });
  ({ agent, worktree } = workspace);
  fake = await startFakeModel();
});

afterAll(async () => {
  await fake?.close();
  await workspace?.close();
});

beforeEach(() => {
  fake.reset();
});

afterEach(async () => {
  await Promise.all(backends.splice(0).map((backend) => backend.dispose()));
});

function nativeBackend(overrides: Partial<NativeBackendOptions> = {}): NativeBackend {
  const backend = createNativeBackend({
    sessionId: randomUUID(),
    agent: "deckhand",
    chatId: randomUUID(),
    worktreePath: worktree,
    workspaceAgent: { url: agent.url, token: AGENT_TOKEN },
    modelProxy: { url: `${fake.url}/v1`, token: MODEL_TOKEN, jobId: "job-native-1" },
    resumeSessionId: null,
    model: "gpt-5-codex",
    approvalPolicy: "on-request",
    retry: { baseDelayMs: 1, maxDelayMs: 5, jitter: 0 },
    ...overrides,
  });
  backends.push(backend);
  return backend;
}

interface Run {
  result: PromptResult;
  events: AgentEvent[];
}

async function run(
  backend: NativeBackend,
  text: string,
  onEvent: (event: AgentEvent, backend: NativeBackend) => void | Promise<void> = () => {},
): Promise<Run> {
  const events: AgentEvent[] = [];
  const result = await backend.prompt({
    messageId: randomUUID(),
    text,
    onEvent: async (event) => {
      events.push(event);
      await onEvent(event, backend);
    },
  });
  return { result, events };
}

function ofType<T extends AgentEvent["type"]>(events: AgentEvent[], type: T) {
  return events.filter((event): event is Extract<AgentEvent, { type: T }> => event.type === type);
}

/**
 * The text a UI shows, following the native agent's rule: a retry voids the text events since
 * the last event of another type.
 */
function shownText(events: AgentEvent[]): string {
  const parts: { type: string; delta: string }[] = [];
  for (const event of events) {
    if (event.type === "retry") {
      while (
        parts.length > 0 &&
        (parts.at(-1)!.type === "text" || parts.at(-1)!.type === "reasoning")
      ) {
        parts.pop();
      }
    } else if (event.type === "text" || event.type === "reasoning") {
      parts.push({ type: event.type, delta: event.delta });
    } else {
      parts.push({ type: event.type, delta: "" });
    }
  }
  return parts
    .filter((part) => part.type === "text")
    .map((part) => part.delta)
    .join("");
}

/** The JSON body of the model request at `index`. */
function requestBody(index: number): { input: Record<string, unknown>[]; [key: string]: unknown } {
  return fake.requests[index]!.json as { input: Record<string, unknown>[] };
}

function callOutput(index: number, callId: string): string {
  const output = requestBody(index).input.find(
    (entry) => entry.type === "function_call_output" && entry.call_id === callId,
  );
  if (output === undefined) throw new Error(`request ${index} has no output for ${callId}`);
  return String(output.output);
}

function answerPermissions(
  outcomes: Parameters<NativeBackend["respondToPermission"]>[0]["outcome"][],
) {
  return async (event: AgentEvent, backend: NativeBackend) => {
    if (event.type !== "permission_request") return;
    const outcome = outcomes.shift();
    if (outcome === undefined) throw new Error(`unexpected permission request: ${event.title}`);
    await backend.respondToPermission({ requestId: event.request_id, outcome });
  };
}

describe("native agent", () => {
  it("runs a command, reads its output and answers (two model requests)", async () => {
    fake.script([
      turn.of(
        [
          item.reasoning("List first."),
          item.functionCall("execute", { command: "echo hello-from-tool" }, "c1"),
        ],
        { usage: { input: 30, output: 8 } },
      ),
      turn.text("It printed hello-from-tool.", { usage: { input: 50, output: 6 } }),
    ]);
    const backend = nativeBackend();
    const session = await backend.ensureSession();
    expect(session).toEqual({ agentSessionId: expect.any(String), resumed: false });
    const { result, events } = await run(backend, "What does echo print?");

    expect(result).toEqual({ stopReason: "end_turn", text: "It printed hello-from-tool." });
    expect(events.map((event) => event.type)).toEqual([
      ...Array(ofType(events, "reasoning").length).fill("reasoning"),
      "usage",
      "tool_call",
      "tool_update",
      "tool_update",
      ...Array(ofType(events, "text").length).fill("text"),
      "usage",
      "turn_end",
    ]);
    expect(
      ofType(events, "reasoning")
        .map((event) => event.delta)
        .join(""),
    ).toBe("List first.");
    expect(ofType(events, "tool_call")[0]).toMatchObject({
      tool_call_id: "c1",
      kind: "execute",
      status: "pending",
      title: "echo hello-from-tool",
      input: { command: "echo hello-from-tool" },
    });
    const [running, done] = ofType(events, "tool_update");
    expect(running).toMatchObject({ tool_call_id: "c1", status: "in_progress" });
    expect(done).toMatchObject({
      tool_call_id: "c1",
      status: "completed",
      output: { success: true, output: "hello-from-tool\n", exit_code: 0 },
    });
    expect(ofType(events, "usage").map((event) => event.total_tokens)).toEqual([38, 56]);
    expect(events.at(-1)).toMatchObject({ type: "turn_end", stop_reason: "end_turn" });

    // The second request carries the call and the output the model sees, after the user's text.
    expect(fake.requests).toHaveLength(2);
    const first = fake.requests[0]!;
    expect(first.path).toBe("/v1/responses");
    expect(first.headers[WireHeader.authorization.toLowerCase()]).toBe(`Bearer ${MODEL_TOKEN}`);
    expect(first.headers[WireHeader.jobId.toLowerCase()]).toBe("job-native-1");
    expect(requestBody(0)).toMatchObject({
      model: "gpt-5-codex",
      instructions: expect.stringContaining("git worktree"),
      store: false,
      stream: true,
    });
    expect((requestBody(0).tools as { name: string }[]).map((tool) => tool.name)).toContain(
      "execute",
    );
    const input = requestBody(1).input;
    expect(input.map((entry) => entry.type)).toEqual([
      "message",
      "reasoning",
      "function_call",
      "function_call_output",
    ]);
    expect(input[0]).toMatchObject({ role: "user", content: [{ text: "What does echo print?" }] });
    expect(input.some((entry) => "id" in entry)).toBe(false);
    expect(callOutput(1, "c1")).toBe(done!.content);
    expect(JSON.parse(callOutput(1, "c1"))).toMatchObject({ output: "hello-from-tool\n" });
  });

  it("redacts secrets a tool printed in its events, its recording and the next model request", async () => {
    // As the server does at start: its upstream key is a secret of the whole process.
    const upstreamKey = "sk-remembered-upstream-key-93d1";
    rememberSecrets([upstreamKey]);
    const command = `echo a=${upstreamKey} b=${AGENT_TOKEN} c=${MODEL_TOKEN}`;
    fake.script([
      turn.functionCall("execute", { command }, { callId: "c1" }),
      turn.text("Printed."),
    ]);
    const recorder = new MemorySessionRecorder();
    const backend = nativeBackend({ recorder, approvalPolicy: "never" });
    const { agentSessionId } = await backend.ensureSession();
    const { events } = await run(backend, "print them");

    const expected = `a=${REDACTED} b=${REDACTED} c=${REDACTED}`;
    const done = ofType(events, "tool_update").at(-1)!;
    expect(done).toMatchObject({ status: "completed", content: expect.stringContaining(expected) });
    expect(callOutput(1, "c1")).toContain(expected);
    const everything = [
      JSON.stringify(events),
      JSON.stringify(recorder.entries(agentSessionId)),
      fake.requests.map((request) => request.body).join("\n"),
    ];
    for (const text of everything) {
      expect(text).toContain(expected);
      expect(text).not.toContain(upstreamKey);
      expect(text).not.toContain(AGENT_TOKEN);
      expect(text).not.toContain(MODEL_TOKEN);
    }
  });

  it("applies a patch: the files change on disk", async () => {
    writeFileSync(join(worktree, "greet.txt"), "hello\nworld\n");
    const patch = [
      "*** Begin Patch",
      "*** Add File: notes/new.md",
      "+# New",
      "*** Update File: greet.txt",
      "@@",
      " hello",
      "-world",
      "+deckhand",
      "*** End Patch",
    ].join("\n");
    fake.script([
      turn.functionCall("apply_patch", { patch }, { callId: "p1" }),
      turn.text("Patched."),
    ]);
    const { result, events } = await run(nativeBackend(), "Change world to deckhand.");

    expect(result.stopReason).toBe("end_turn");
    expect(ofType(events, "tool_call")[0]).toMatchObject({
      kind: "edit",
      title: "Apply patch to notes/new.md, greet.txt",
      locations: ["notes/new.md", "greet.txt"],
    });
    expect(ofType(events, "tool_update").at(-1)).toMatchObject({ status: "completed" });
    expect(ofType(events, "permission_request")).toEqual([]);
    expect(readFileSync(join(worktree, "greet.txt"), "utf8")).toBe("hello\ndeckhand\n");
    expect(readFileSync(join(worktree, "notes/new.md"), "utf8")).toBe("# New\n");
  });

  it("answers a free-form apply_patch (a custom tool call, as Codex sends it) with custom_tool_call_output", async () => {
    writeFileSync(join(worktree, "custom.txt"), "alpha\nbeta\n");
    const patch = [
      "*** Begin Patch",
      "*** Update File: custom.txt",
      "@@",
      " alpha",
      "-beta",
      "+gamma",
      "*** End Patch",
    ].join("\n");
    const broken = [
      "*** Begin Patch",
      "*** Update File: custom.txt",
      "@@",
      "-nowhere",
      "+x",
      "*** End Patch",
    ].join("\n");
    fake.script([
      turn.customToolCall("apply_patch", patch, { callId: "cp1" }),
      turn.customToolCall("apply_patch", broken, { callId: "cp2" }),
      turn.text("Patched with the free-form tool."),
    ]);
    const { result, events } = await run(nativeBackend(), "Change beta to gamma.");

    expect(result).toEqual({ stopReason: "end_turn", text: "Patched with the free-form tool." });
    expect(ofType(events, "tool_call")[0]).toMatchObject({
      tool_call_id: "cp1",
      kind: "edit",
      title: "Apply patch to custom.txt",
      locations: ["custom.txt"],
    });
    expect(
      ofType(events, "tool_update").map((event) => [event.tool_call_id, event.status]),
    ).toEqual([
      ["cp1", "in_progress"],
      ["cp1", "completed"],
      ["cp2", "in_progress"],
      ["cp2", "failed"],
    ]);
    expect(readFileSync(join(worktree, "custom.txt"), "utf8")).toBe("alpha\ngamma\n");

    // The call goes back as the custom item it came as, answered by a custom output (a
    // function_call_output for it would be refused upstream).
    const input = requestBody(2).input;
    expect(input.map((entry) => entry.type)).toEqual([
      "message",
      "custom_tool_call",
      "custom_tool_call_output",
      "custom_tool_call",
      "custom_tool_call_output",
    ]);
    expect(input[1]).toMatchObject({ call_id: "cp1", name: "apply_patch", input: patch });
    const outputs = input.filter((entry) => entry.type === "custom_tool_call_output");
    expect(outputs.map((entry) => entry.call_id)).toEqual(["cp1", "cp2"]);
    expect(String(outputs[0]!.output)).toContain("custom.txt");
    expect(String(outputs[1]!.output)).toMatch(/^Error \(/);
    expect(input.some((entry) => entry.type === "function_call_output")).toBe(false);
  });

  it("asks under untrusted and obeys a rejection: nothing runs, the model sees the refusal", async () => {
    fake.script([
      turn.functionCall("execute", { command: "touch rejected.txt" }, { callId: "r1" }),
      turn.text("Understood, I will not."),
    ]);
    const backend = nativeBackend({ approvalPolicy: "untrusted" });
    const { result, events } = await run(
      backend,
      "Make a file.",
      answerPermissions(["reject_once"]),
    );

    expect(result).toEqual({ stopReason: "end_turn", text: "Understood, I will not." });
    const [request] = ofType(events, "permission_request");
    expect(request).toMatchObject({
      tool_call_id: "r1",
      title: expect.stringContaining("touch rejected.txt"),
    });
    expect(request!.options.map((option) => option.kind)).toEqual([
      "allow_once",
      "allow_always",
      "reject_once",
      "reject_always",
    ]);
    expect(ofType(events, "permission_resolved")).toEqual([
      expect.objectContaining({ request_id: request!.request_id, outcome: "reject_once" }),
    ]);
    expect(ofType(events, "tool_update")).toEqual([
      expect.objectContaining({ status: "failed", content: expect.stringContaining("rejected") }),
    ]);
    expect(existsSync(join(worktree, "rejected.txt"))).toBe(false);
    expect(callOutput(1, "r1")).toContain("did not run");
  });

  it("does not ask for known read-only commands under untrusted", async () => {
    fake.script([
      turn.functionCall("execute", { command: "ls" }, { callId: "l1" }),
      turn.text("ok"),
    ]);
    const { events } = await run(nativeBackend({ approvalPolicy: "untrusted" }), "List.");
    expect(ofType(events, "permission_request")).toEqual([]);
    expect(ofType(events, "tool_update").at(-1)).toMatchObject({ status: "completed" });
  });

  it("remembers an 'always' answer for the session, for that command only", async () => {
    fake.script([
      turn.functionCall("execute", { command: "touch always-a.txt" }, { callId: "a1" }),
      turn.functionCall("execute", { command: "touch always-a.txt" }, { callId: "a2" }),
      turn.functionCall("execute", { command: "touch always-b.txt" }, { callId: "b1" }),
      turn.text("Done."),
      turn.functionCall("execute", { command: "touch always-a.txt" }, { callId: "a3" }),
      turn.text("Again."),
    ]);
    const backend = nativeBackend({ approvalPolicy: "untrusted" });
    const first = await run(
      backend,
      "Touch files.",
      answerPermissions(["allow_always", "allow_once"]),
    );
    expect(first.result.stopReason).toBe("end_turn");
    expect(ofType(first.events, "permission_request").map((event) => event.tool_call_id)).toEqual([
      "a1",
      "b1",
    ]);
    expect(
      ofType(first.events, "tool_update").filter((event) => event.status === "completed"),
    ).toHaveLength(3);
    expect(existsSync(join(worktree, "always-b.txt"))).toBe(true);
    // The next turn of the same session still remembers it.
    const second = await run(backend, "Once more.", answerPermissions([]));
    expect(ofType(second.events, "permission_request")).toEqual([]);
    expect(second.result.text).toBe("Again.");
  });

  it("keeps 'always' answers in the permission memory: they outlive the backend, per session and agent", async () => {
    const memory = createInMemoryPermissionMemory();
    const sessionId = randomUUID();
    fake.script([
      turn.functionCall("execute", { command: "touch kept-a.txt" }, { callId: "k1" }),
      turn.functionCall("write_file", { path: "kept.md", content: "no\n" }, { callId: "k2" }),
      turn.text("First."),
    ]);
    const first = nativeBackend({
      sessionId,
      approvalPolicy: "untrusted",
      permissionMemory: memory,
    });
    const answered = await run(
      first,
      "Touch and write.",
      answerPermissions(["allow_always", "reject_always"]),
    );
    expect(
      ofType(answered.events, "permission_request").map((event) => event.tool_call_id),
    ).toEqual(["k1", "k2"]);
    expect(
      await memory.get({
        sessionId,
        agent: "deckhand",
        toolKind: "execute",
        subject: "touch kept-a.txt",
      }),
    ).toBe("allow_always");
    expect(await memory.get({ sessionId, agent: "deckhand", toolKind: "edit" })).toBe(
      "reject_always",
    );
    await first.dispose();

    // A new backend for the same session (a server restart, an idle agent started again).
    fake.script([
      turn.functionCall("execute", { command: "touch kept-a.txt" }, { callId: "k3" }),
      turn.functionCall("write_file", { path: "kept.md", content: "again\n" }, { callId: "k4" }),
      turn.text("Second."),
    ]);
    const second = nativeBackend({
      sessionId,
      approvalPolicy: "untrusted",
      permissionMemory: memory,
    });
    const remembered = await run(second, "Again.", answerPermissions([]));
    expect(ofType(remembered.events, "permission_request")).toEqual([]);
    expect(
      ofType(remembered.events, "tool_update").filter((e) => e.status !== "in_progress"),
    ).toEqual([
      expect.objectContaining({ tool_call_id: "k3", status: "completed" }),
      expect.objectContaining({ tool_call_id: "k4", status: "failed" }),
    ]);
    expect(callOutput(fake.requests.length - 1, "k4")).toContain("for the rest of the session");
    expect(existsSync(join(worktree, "kept.md"))).toBe(false);

    // Another session, or another agent in this one, is asked.
    for (const other of [{ sessionId: randomUUID() }, { sessionId, agent: "deckhand-2" }]) {
      fake.script([
        turn.functionCall("execute", { command: "touch kept-a.txt" }, { callId: "k5" }),
        turn.text("Asked."),
      ]);
      const elsewhere = nativeBackend({
        ...other,
        approvalPolicy: "untrusted",
        permissionMemory: memory,
      });
      const asked = await run(elsewhere, "Once more.", answerPermissions(["reject_once"]));
      expect(ofType(asked.events, "permission_request")).toHaveLength(1);
    }
  });

  it("retries a stream that fails mid-turn; the retry voids the partial text", async () => {
    fake.script([
      turn.drop([item.text("half an ans")]),
      turn.failed({ code: "server_error" }, [item.text("another partial")]),
      turn.text("the whole answer"),
    ]);
    const { result, events } = await run(nativeBackend(), "Answer.");
    expect(result).toEqual({ stopReason: "end_turn", text: "the whole answer" });
    expect(ofType(events, "retry").map((event) => event.attempt)).toEqual([1, 2]);
    expect(ofType(events, "retry")[0]!.reason).toContain("connection");
    expect(ofType(events, "text").length).toBeGreaterThan(3);
    expect(shownText(events)).toBe("the whole answer");
    expect(fake.requests).toHaveLength(3);
    expect(JSON.stringify(events)).not.toContain(MODEL_TOKEN);
  });

  it("ends with an error event when the model keeps failing", async () => {
    fake.script([turn.fail({ status: 400, message: `bad request for ${MODEL_TOKEN}` })]);
    const backend = nativeBackend();
    const { result, events } = await run(backend, "Hi.");
    expect(result.stopReason).toBe("error");
    const [error] = ofType(events, "error");
    expect(error!.message).toContain("HTTP 400");
    expect(error!.message).not.toContain(MODEL_TOKEN);
    expect(events.at(-1)).toMatchObject({ type: "turn_end", stop_reason: "error" });
    expect(backend.health()).toMatchObject({
      status: "idle",
      lastError: expect.stringContaining("400"),
    });
  });

  it("interrupt stops a running command and ends the turn cancelled; the session goes on", async () => {
    fake.script([
      turn.functionCall(
        "execute",
        { command: "sleep 30; echo never", timeout: "60s" },
        { callId: "s1" },
      ),
      turn.text("Back."),
    ]);
    const backend = nativeBackend({ approvalPolicy: "never" });
    const started = Date.now();
    const { result, events } = await run(backend, "Sleep.", (event, self) => {
      if (event.type === "tool_update" && event.status === "in_progress") {
        setTimeout(() => void self.cancel(), 150);
      }
    });
    expect(result.stopReason).toBe("cancelled");
    // Well short of the command's 30 s, however busy the machine.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(ofType(events, "tool_update").at(-1)).toMatchObject({
      tool_call_id: "s1",
      status: "failed",
    });
    expect(events.at(-1)).toMatchObject({ type: "turn_end", stop_reason: "cancelled" });
    expect(backend.health().status).toBe("idle");

    // The process was interrupted through the process API, not left sleeping.
    const processes = new ProcessClient({ baseUrl: agent.url, token: AGENT_TOKEN });
    const sleeper = async () =>
      (await processes.list({ limit: 50 })).processes.find((info) =>
        info.command.startsWith("sleep 30"),
      );
    expect(await sleeper()).toBeDefined();
    for (let tries = 0; tries < 40 && (await sleeper())?.running; tries += 1) {
      await new Promise((resolveLater) => setTimeout(resolveLater, 50));
    }
    expect(await sleeper()).toMatchObject({ running: false, signal: expect.any(String) });

    // The conversation stays valid: the cut-off call has an output in the next request.
    const next = await run(backend, "Continue.");
    expect(next.result).toEqual({ stopReason: "end_turn", text: "Back." });
    expect(callOutput(1, "s1")).toContain("interrupted");
  });

  it("interrupt stops a streaming model response and a pending permission request", async () => {
    fake.script([turn.hang([item.text("thinking out loud")])]);
    const backend = nativeBackend();
    const cut = await run(backend, "Go.", (event, self) => {
      if (event.type === "text") setTimeout(() => void self.cancel(), 20);
    });
    expect(cut.result.stopReason).toBe("cancelled");
    expect((await fake.nextEarlyClose()).path).toBe("/v1/responses");

    fake.script([turn.functionCall("execute", { command: "touch pending.txt" }, { callId: "q1" })]);
    const untrusted = nativeBackend({ approvalPolicy: "untrusted" });
    const pending = await run(untrusted, "Ask me.", (event, self) => {
      if (event.type === "permission_request") setTimeout(() => void self.cancel(), 20);
    });
    expect(pending.result.stopReason).toBe("cancelled");
    expect(ofType(pending.events, "permission_resolved")).toEqual([
      expect.objectContaining({ outcome: "cancelled" }),
    ]);
    expect(existsSync(join(worktree, "pending.txt"))).toBe(false);
  });

  it("injects user input into the running turn before its next model request", async () => {
    fake.script([
      turn.functionCall("execute", { command: "sleep 0.3; echo slow" }, { callId: "i1" }),
      turn.text("Noted both."),
    ]);
    const backend = nativeBackend({ approvalPolicy: "never" });
    let injected: Promise<PromptResult> | undefined;
    const injectedEvents: AgentEvent[] = [];
    const { result } = await run(backend, "Run the slow thing.", (event, self) => {
      if (event.type === "tool_call") {
        injected = self.prompt({
          messageId: randomUUID(),
          text: "Also mention the README.",
          onEvent: (later) => {
            injectedEvents.push(later);
          },
        });
      }
    });
    expect(result).toEqual({ stopReason: "end_turn", text: "Noted both." });
    expect(await injected).toEqual(result);
    expect(injectedEvents.at(-1)).toMatchObject({ type: "turn_end" });
    expect(fake.requests).toHaveLength(2);
    const input = requestBody(1).input;
    expect(input.map((entry) => entry.type)).toEqual([
      "message",
      "function_call",
      "function_call_output",
      "message",
    ]);
    expect(input.at(-1)).toMatchObject({
      role: "user",
      content: [{ type: "input_text", text: "Also mention the README." }],
    });
  });

  it("asks the model proxy for a turn's model, and keeps it for later turns that name none", async () => {
    fake.script([turn.text("one"), turn.text("two"), turn.text("three")]);
    const backend = nativeBackend();
    await run(backend, "first");
    await backend.prompt({
      messageId: randomUUID(),
      text: "second",
      model: "gpt-5-mini",
      onEvent: () => {},
    });
    await run(backend, "third");
    expect(fake.requests.map((request) => (request.json as { model: string }).model)).toEqual([
      "gpt-5-codex",
      "gpt-5-mini",
      "gpt-5-mini",
    ]);
  });

  it("applies configure to the next request, and refuses without a model proxy", async () => {
    fake.script([turn.text("one"), turn.text("two")]);
    const backend = nativeBackend();
    await run(backend, "first");
    backend.submit({ type: "configure", model: "gpt-5-mini", instructions: "Be terse." });
    await run(backend, "second");
    expect(requestBody(1)).toMatchObject({ model: "gpt-5-mini", instructions: "Be terse." });
    expect(() => nativeBackend({ modelProxy: null })).toThrow(/model proxy/);
    await backend.closeSession();
    expect(backend.health().status).toBe("closed");
    expect(() => backend.submit({ type: "interrupt" })).toThrow(/ensureSession/);
  });
});

describe("native agent approval policies", () => {
  it("on-failure: runs without asking, and asks to run a failed command again; the model gets the retry's result", async () => {
    const command =
      "if [ -f retry-marker ]; then echo second-run; else touch retry-marker; echo first-run; exit 7; fi";
    fake.script([
      turn.functionCall("execute", { command }, { callId: "f1" }),
      turn.text("It worked the second time."),
    ]);
    const { result, events } = await run(
      nativeBackend({ approvalPolicy: "on-failure" }),
      "Run it.",
      answerPermissions(["allow_once"]),
    );

    expect(result.stopReason).toBe("end_turn");
    const [request] = ofType(events, "permission_request");
    expect(request).toMatchObject({
      tool_call_id: "f1",
      title: expect.stringMatching(/^Run again: .*exited with code 7/),
    });
    // The request comes after the first run, whose output the user sees meanwhile.
    const types = events.map((event) => event.type);
    expect(types.indexOf("permission_request")).toBeGreaterThan(types.indexOf("tool_update"));
    const updates = ofType(events, "tool_update");
    expect(updates.find((event) => event.status === undefined)).toMatchObject({
      content: expect.stringContaining("first-run"),
    });
    expect(updates.at(-1)).toMatchObject({
      status: "completed",
      output: { success: true, output: "second-run\n", exit_code: 0 },
    });
    expect(JSON.parse(callOutput(1, "f1"))).toMatchObject({ output: "second-run\n", exit_code: 0 });
  });

  it("on-failure: a refused retry gives the model the original failure and the refusal", async () => {
    fake.script([
      turn.functionCall("execute", { command: "echo broke; exit 3" }, { callId: "f2" }),
      turn.text("Understood."),
    ]);
    const { events } = await run(
      nativeBackend({ approvalPolicy: "on-failure" }),
      "Run it.",
      answerPermissions(["reject_once"]),
    );
    expect(ofType(events, "permission_request")).toHaveLength(1);
    expect(ofType(events, "tool_update").at(-1)).toMatchObject({
      tool_call_id: "f2",
      status: "failed",
    });
    const seen = JSON.parse(callOutput(1, "f2")) as Record<string, unknown>;
    expect(seen).toMatchObject({ success: false, output: "broke\n", exit_code: 3 });
    expect(seen.note).toContain("declined to let it run again");
  });

  it("on-failure: a failing read-only command, a command still running at its timeout and a success ask nothing", async () => {
    fake.script([
      turn.functionCall("execute", { command: "ls does-not-exist" }, { callId: "n1" }),
      turn.functionCall("execute", { command: "sleep 1", timeout: "50ms" }, { callId: "n2" }),
      turn.functionCall("execute", { command: "touch on-failure-ok.txt" }, { callId: "n3" }),
      turn.text("Fine."),
    ]);
    const { result, events } = await run(
      nativeBackend({ approvalPolicy: "on-failure" }),
      "Run them.",
      answerPermissions([]),
    );
    expect(result.stopReason).toBe("end_turn");
    expect(ofType(events, "permission_request")).toEqual([]);
    expect(existsSync(join(worktree, "on-failure-ok.txt"))).toBe(true);
  });

  it("on-request: the model can ask for approval itself, even for a read-only command, with its justification", async () => {
    fake.script([
      turn.functionCall(
        "execute",
        {
          command: "echo deploy-step",
          with_approval: true,
          justification: "It announces a deploy.",
        },
        { callId: "w1" },
      ),
      turn.functionCall("execute", { command: "echo not-asked" }, { callId: "w2" }),
      turn.functionCall(
        "execute",
        { command: "echo refused-step", with_approval: true },
        { callId: "w3" },
      ),
      turn.text("Done."),
    ]);
    const { events } = await run(
      nativeBackend({ approvalPolicy: "on-request" }),
      "Deploy.",
      answerPermissions(["allow_once", "reject_once"]),
    );
    const requests = ofType(events, "permission_request");
    expect(requests.map((event) => event.tool_call_id)).toEqual(["w1", "w3"]);
    expect(requests[0]!.title).toBe("echo deploy-step (the agent asks: It announces a deploy.)");
    expect(requests[1]!.title).toBe("echo refused-step (the agent asks for approval)");
    expect(JSON.parse(callOutput(1, "w1"))).toMatchObject({ output: "deploy-step\n" });
    expect(callOutput(3, "w3")).toContain("did not run");
  });

  it("with_approval under any other policy is refused without running, and the model is told why", async () => {
    for (const approvalPolicy of ["never", "on-failure", "untrusted"] as const) {
      fake.reset();
      fake.script([
        turn.functionCall(
          "execute",
          { command: "touch asked-anyway.txt", with_approval: true, justification: "Please." },
          { callId: "x1" },
        ),
        turn.text("I will not, then."),
      ]);
      const { events } = await run(
        nativeBackend({ approvalPolicy }),
        "Ask.",
        answerPermissions([]),
      );
      expect(ofType(events, "permission_request")).toEqual([]);
      expect(ofType(events, "tool_update")).toEqual([
        expect.objectContaining({ tool_call_id: "x1", status: "failed" }),
      ]);
      expect(callOutput(1, "x1")).toContain(`the approval policy is ${approvalPolicy}`);
      expect(callOutput(1, "x1")).toContain("only on-request allows with_approval");
      expect(existsSync(join(worktree, "asked-anyway.txt"))).toBe(false);
    }
  });
});
