import { describe, expect, it } from "vitest";
import { collectParts, PartCollector } from "./part-collector.ts";
import type { AgentEvent } from "./session-stream.ts";

const m = "6f1c2a44-1d7e-4a4b-9a6f-0c3d2e1f0a9b";

const text = (delta: string): AgentEvent => ({ type: "text", message_id: m, delta });
const reasoning = (delta: string): AgentEvent => ({ type: "reasoning", message_id: m, delta });

describe("collectParts", () => {
  it("joins consecutive deltas of one kind into a part, in the order kinds first appeared", () => {
    expect(collectParts([reasoning("Think"), reasoning("ing."), text("Hel"), text("lo.")])).toEqual(
      [
        { kind: "reasoning", content: { text: "Thinking." } },
        { kind: "text", content: { text: "Hello." } },
      ],
    );
  });

  it("merges a tool call's updates and the permission asked for it into the call's part", () => {
    const parts = collectParts([
      text("Let me write it."),
      {
        type: "tool_call",
        message_id: m,
        tool_call_id: "call-1",
        title: "Write notes.txt",
        kind: "edit",
        status: "pending",
      },
      {
        type: "permission_request",
        message_id: m,
        request_id: "perm-1",
        tool_call_id: "call-1",
        title: "Write notes.txt?",
        options: [{ option_id: "allow", name: "Allow", kind: "allow_once" }],
      },
      { type: "permission_resolved", message_id: m, request_id: "perm-1", outcome: "allow_once" },
      { type: "tool_update", message_id: m, tool_call_id: "call-1", status: "completed" },
      text("Done."),
    ]);
    expect(parts).toEqual([
      { kind: "text", content: { text: "Let me write it." } },
      {
        kind: "tool_call",
        content: {
          tool_call_id: "call-1",
          title: "Write notes.txt",
          kind: "edit",
          status: "completed",
          permission: {
            request_id: "perm-1",
            title: "Write notes.txt?",
            options: [{ option_id: "allow", name: "Allow", kind: "allow_once" }],
            outcome: "allow_once",
          },
        },
      },
      { kind: "text", content: { text: "Done." } },
    ]);
  });

  it("makes a part for an update whose call it never saw, and keeps permissions about nothing out", () => {
    expect(
      collectParts([
        { type: "tool_update", message_id: m, tool_call_id: "late", content: "output" },
        {
          type: "permission_request",
          message_id: m,
          request_id: "perm-2",
          tool_call_id: null,
          title: "Go on?",
          options: [],
        },
      ]),
    ).toEqual([{ kind: "tool_call", content: { tool_call_id: "late", content: "output" } }]);
  });

  it("discards the text and reasoning since the last other event on a retry", () => {
    expect(
      collectParts([
        text("Kept."),
        { type: "plan", message_id: m, entries: [] },
        reasoning("dropped"),
        text(" dropped too"),
        { type: "retry", message_id: m, attempt: 1, delay_ms: 0, reason: "dropped" },
        text("Final."),
      ]),
    ).toEqual([
      { kind: "text", content: { text: "Kept." } },
      { kind: "plan", content: { entries: [] } },
      { kind: "text", content: { text: "Final." } },
    ]);
  });

  it("keeps one plan part, replaced by the latest entries, and an error part per error", () => {
    const entry = { content: "step", priority: "high", status: "pending" } as const;
    expect(
      collectParts([
        { type: "plan", message_id: m, entries: [] },
        { type: "plan", message_id: m, entries: [entry] },
        { type: "error", message_id: m, message: "crashed", stderr_tail: "boom" },
        { type: "error", message_id: m, message: "again" },
      ]),
    ).toEqual([
      { kind: "plan", content: { entries: [entry] } },
      { kind: "error", content: { message: "crashed", stderr_tail: "boom" } },
      { kind: "error", content: { message: "again" } },
    ]);
  });

  it("ignores events that are not part of a message's content", () => {
    expect(
      collectParts([
        { type: "usage", message_id: m, input_tokens: 1, output_tokens: 2, total_tokens: 3 },
        { type: "mode", agent: "claude", mode_id: "plan" },
        { type: "turn_end", message_id: m, stop_reason: "end_turn" },
      ]),
    ).toEqual([]);
  });
});

describe("PartCollector", () => {
  it("reports the last error for the message's error column", () => {
    const collector = new PartCollector();
    collector.add({ type: "error", message_id: m, message: "first" });
    collector.add({ type: "error", message_id: m, message: "second" });
    expect(collector.lastError).toBe("second");
  });

  it("takes only the parts changed since the last take, and a retry's truncation", () => {
    const collector = new PartCollector();
    collector.add(text("a"));
    collector.add({ type: "plan", message_id: m, entries: [] });
    expect(collector.takeChanges()).toEqual({
      truncateFrom: null,
      put: [
        { position: 0, part: { kind: "text", content: { text: "a" } } },
        { position: 1, part: { kind: "plan", content: { entries: [] } } },
      ],
    });
    expect(collector.takeChanges()).toEqual({ truncateFrom: null, put: [] });
    collector.add(text("b"));
    collector.add({ type: "retry", message_id: m, attempt: 1, delay_ms: 0, reason: "x" });
    collector.add(text("c"));
    expect(collector.takeChanges()).toEqual({
      truncateFrom: 2,
      put: [{ position: 2, part: { kind: "text", content: { text: "c" } } }],
    });
  });
});
