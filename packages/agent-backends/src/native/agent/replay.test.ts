import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type FakeModel, type FakeTurn, item, startFakeModel, turn } from "@deckhand/testkit";
import type { RunningAgent } from "@deckhand/workspace-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestWorkspace, type TestWorkspace } from "../../../test/test-workspace.ts";
import {
  createNativeBackend,
  type NativeBackend,
  type NativeBackendOptions,
} from "./native-agent.ts";
import {
  FileSessionRecorder,
  MemorySessionRecorder,
  parseRecording,
  type RecordEntry,
} from "./recorder.ts";
import { replaySubmissions } from "./replay.ts";

const AGENT_TOKEN = "native-replay-test-token-91aa";

let workspace: TestWorkspace;
let agent: RunningAgent;
let fake: FakeModel;
let root: string;
let worktree: string;

beforeAll(async () => {
  workspace = await startTestWorkspace("deckhand-native-replay-", { token: AGENT_TOKEN });
  ({ agent, root, worktree } = workspace);
  fake = await startFakeModel();
});

afterAll(async () => {
  await fake?.close();
  await workspace?.close();
});

function nativeBackend(overrides: Partial<NativeBackendOptions>): NativeBackend {
  return createNativeBackend({
    sessionId: randomUUID(),
    agent: "deckhand",
    chatId: randomUUID(),
    worktreePath: worktree,
    workspaceAgent: { url: agent.url, token: AGENT_TOKEN },
    modelProxy: { url: `${fake.url}/v1`, token: "dmt_replay", jobId: "job-replay" },
    resumeSessionId: null,
    model: "gpt-5-codex",
    approvalPolicy: "untrusted",
    retry: { baseDelayMs: 1, maxDelayMs: 5, jitter: 0 },
    ...overrides,
  });
}

/** A session with reasoning, a safe command, a rejected one, an injected input and a retry. */
function script(): FakeTurn[] {
  return [
    turn.of([
      item.reasoning("Look around first."),
      item.text("Let me look."),
      item.functionCall("execute", { command: "echo one" }, "c1"),
    ]),
    turn.functionCall("execute", { command: "touch replay-denied.txt" }, { callId: "c2" }),
    turn.drop([item.text("half of it")]),
    turn.text("All done."),
    turn.functionCall("write_file", { path: "replayed.txt", content: "x\n" }, { callId: "c3" }),
    turn.text("Written."),
  ];
}

/**
 * Without what differs from run to run: durations, and the fake model's opaque reasoning
 * blobs (numbered by the fake's request counter).
 */
function comparable(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value)
      .replace(/(\\*"wall_duration_ms\\*":)\d+/g, "$10")
      .replace(/enc_\d+_/g, "enc_N_"),
  );
}

const eventsOf = (entries: RecordEntry[]) =>
  entries.flatMap((entry) => (entry.kind === "event" ? [entry.event] : []));

describe("native agent recording and replay", () => {
  it("records every submission and event as JSONL; a replay of it emits the same events", async () => {
    const dir = join(root, "recordings");
    const recorder = new FileSessionRecorder(dir);
    fake.reset();
    fake.script(script());
    const original = nativeBackend({ recorder, newSessionId: () => "session-original" });
    const { agentSessionId } = await original.ensureSession();
    expect(agentSessionId).toBe("session-original");
    const first = await original.prompt({
      messageId: randomUUID(),
      text: "Look, then make a file.",
      onEvent: async (event) => {
        if (event.type === "tool_call" && event.tool_call_id === "c1") {
          original.submit({ type: "user_input", message_id: randomUUID(), text: "Be quick." });
        }
        if (event.type === "permission_request") {
          await original.respondToPermission({
            requestId: event.request_id,
            outcome: "reject_once",
          });
        }
      },
    });
    expect(first).toEqual({ stopReason: "end_turn", text: "Let me look.\n\nAll done." });
    const second = await original.prompt({
      messageId: randomUUID(),
      text: "Write it.",
      onEvent: async (event) => {
        if (event.type === "permission_request") {
          await original.respondToPermission({
            requestId: event.request_id,
            outcome: "allow_once",
          });
        }
      },
    });
    expect(second.text).toBe("Written.");
    await original.dispose();
    expect(existsSync(join(worktree, "replay-denied.txt"))).toBe(false);
    rmSync(join(worktree, "replayed.txt"));

    const file = join(dir, "session-original.jsonl");
    const lines = readFileSync(file, "utf8").trimEnd().split("\n");
    const recorded = parseRecording(readFileSync(file, "utf8"));
    expect(recorded).toHaveLength(lines.length);
    expect(recorded.map((entry) => entry.seq)).toEqual(recorded.map((_entry, index) => index + 1));
    const submissions = recorded.flatMap((entry) =>
      entry.kind === "submission" ? [entry.submission.type] : [],
    );
    expect(submissions).toEqual([
      "configure",
      "user_input",
      "user_input",
      "approval",
      "user_input",
      "approval",
    ]);
    const recordedEvents = eventsOf(recorded);
    expect(new Set(recordedEvents.map((event) => event.type))).toEqual(
      new Set([
        "reasoning",
        "text",
        "usage",
        "tool_call",
        "tool_update",
        "permission_request",
        "permission_resolved",
        "retry",
        "turn_end",
      ]),
    );
    const firstRequests = fake.requests.map((request) => request.json);

    fake.reset();
    fake.script(script());
    const replica = nativeBackend({ recorder: new MemorySessionRecorder() });
    const replayed = await replaySubmissions(replica, recorded);
    await replica.dispose();
    expect(comparable(replayed)).toEqual(comparable(recordedEvents));
    // The model saw the same conversation, request by request.
    expect(comparable(fake.requests.map((request) => request.json))).toEqual(
      comparable(firstRequests),
    );
    expect(readFileSync(join(worktree, "replayed.txt"), "utf8")).toBe("x\n");
  });

  it("resumes a recorded session: the next request carries the earlier conversation", async () => {
    const recorder = new MemorySessionRecorder();
    fake.reset();
    fake.script([turn.text("First answer."), turn.text("Second answer.")]);
    const before = nativeBackend({ recorder });
    const { agentSessionId } = await before.ensureSession();
    await before.prompt({ messageId: randomUUID(), text: "Remember 42.", onEvent: () => {} });
    await before.dispose();

    const after = nativeBackend({ recorder, resumeSessionId: agentSessionId });
    expect(await after.ensureSession()).toEqual({ agentSessionId, resumed: true });
    await after.prompt({ messageId: randomUUID(), text: "What number?", onEvent: () => {} });
    await after.dispose();
    const input = (fake.requests[1]!.json as { input: { type: string; role?: string }[] }).input;
    expect(JSON.stringify(input)).toContain("Remember 42.");
    expect(JSON.stringify(input)).toContain("First answer.");
    expect(input.at(-1)).toMatchObject({ role: "user" });
    const seqs = recorder.entries(agentSessionId).map((entry) => entry.seq);
    expect(seqs).toEqual(seqs.map((_seq, index) => index + 1));

    // An unknown id starts afresh and says so.
    const fresh = nativeBackend({ recorder, resumeSessionId: "no-such-session" });
    expect((await fresh.ensureSession()).resumed).toBe(false);
    await fresh.dispose();
  });
});
