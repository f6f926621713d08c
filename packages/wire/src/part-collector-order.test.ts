import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type CollectedPart, PartCollector } from "./part-collector.ts";
import type { AgentEvent } from "./session-stream.ts";

const MESSAGE = "00000000-0000-4000-8000-000000000001";

function toolCall(id: string): AgentEvent {
  return {
    type: "tool_call",
    message_id: MESSAGE,
    tool_call_id: id,
    title: `Run ${id}`,
    kind: "execute",
    status: "pending",
    input: { command: `echo ${id}` },
  };
}

function toolUpdate(id: string): AgentEvent {
  return {
    type: "tool_update",
    message_id: MESSAGE,
    tool_call_id: id,
    status: "completed",
    content: `${id} done`,
  };
}

function permissionRequest(id: string, toolCallId: string | null = id): AgentEvent {
  return {
    type: "permission_request",
    message_id: MESSAGE,
    request_id: `request-${id}`,
    tool_call_id: toolCallId,
    title: `Allow ${id}?`,
    options: [
      { option_id: "yes", name: "Allow", kind: "allow_once" },
      { option_id: "no", name: "Reject", kind: "reject_once" },
    ],
  };
}

function permissionResolved(id: string, outcome: "allow_once" | "reject_once"): AgentEvent {
  return { type: "permission_resolved", message_id: MESSAGE, request_id: `request-${id}`, outcome };
}

/**
 * Folds events as a turn stores them: the changes taken after every event are written over the
 * stored parts, so what ends in storage is what the collector said changed, not its memory.
 */
function foldAndStore(events: AgentEvent[]): { parts: CollectedPart[]; stored: unknown[] } {
  const collector = new PartCollector();
  const stored: unknown[] = [];
  for (const event of events) {
    collector.add(event);
    const changes = collector.takeChanges();
    if (changes.truncateFrom !== null) stored.splice(changes.truncateFrom);
    for (const { position, part } of changes.put) stored[position] = structuredClone(part);
  }
  return { parts: collector.parts, stored };
}

function byToolCall(parts: unknown[]): Record<string, unknown> {
  return Object.fromEntries(
    (parts as CollectedPart[]).flatMap((part) =>
      part.kind === "tool_call" ? [[part.content.tool_call_id, part.content]] : [],
    ),
  );
}

describe("PartCollector", () => {
  it("attaches a permission asked before its tool call was announced, with its answer", () => {
    const { parts, stored } = foldAndStore([
      permissionRequest("call-1"),
      permissionResolved("call-1", "allow_once"),
      toolCall("call-1"),
      toolUpdate("call-1"),
    ]);
    const expected = {
      kind: "tool_call",
      content: {
        tool_call_id: "call-1",
        title: "Run call-1",
        kind: "execute",
        status: "completed",
        input: { command: "echo call-1" },
        content: "call-1 done",
        permission: {
          request_id: "request-call-1",
          title: "Allow call-1?",
          options: [
            { option_id: "yes", name: "Allow", kind: "allow_once" },
            { option_id: "no", name: "Reject", kind: "reject_once" },
          ],
          outcome: "allow_once",
        },
      },
    };
    expect(parts).toEqual([expected]);
    expect(stored).toEqual([expected]);
  });

  it("stores the answer given after the late tool call was announced", () => {
    const { stored } = foldAndStore([
      permissionRequest("call-1"),
      toolCall("call-1"),
      permissionResolved("call-1", "reject_once"),
    ]);
    expect(stored).toEqual([
      expect.objectContaining({
        content: expect.objectContaining({
          permission: expect.objectContaining({ outcome: "reject_once" }),
        }),
      }),
    ]);
  });

  it("attaches a waiting permission to a part first made by an update", () => {
    const { parts } = foldAndStore([permissionRequest("call-1"), toolUpdate("call-1")]);
    expect(parts[0]!.content).toMatchObject({
      tool_call_id: "call-1",
      permission: { request_id: "request-call-1", outcome: null },
    });
  });

  it("keeps a permission about no tool call out of the parts", () => {
    const { parts } = foldAndStore([permissionRequest("call-1", null), toolCall("call-1")]);
    expect(parts[0]!.content).not.toHaveProperty("permission");
  });

  it("stores the same tool call parts whatever the interleaving of calls and permissions", () => {
    const scenario = fc
      .array(
        fc.record({
          asked: fc.boolean(),
          outcome: fc.constantFrom("allow_once" as const, "reject_once" as const),
          answered: fc.boolean(),
          updated: fc.boolean(),
        }),
        { minLength: 1, maxLength: 4 },
      )
      .chain((calls) => {
        // Each call's own messages keep their order (announced before updated, asked before
        // answered); the two streams, and the calls, interleave freely.
        const sequences = calls.flatMap((call, index) => {
          const id = `call-${index}`;
          const tool = [toolCall(id), ...(call.updated ? [toolUpdate(id)] : [])];
          const permission = call.asked
            ? [
                permissionRequest(id),
                ...(call.answered ? [permissionResolved(id, call.outcome)] : []),
              ]
            : [];
          return [tool, permission].filter((sequence) => sequence.length > 0);
        });
        const size = sequences.reduce((total, sequence) => total + sequence.length, 0);
        return fc.record({
          sequences: fc.constant(sequences),
          picks: fc.array(fc.nat(), { minLength: size, maxLength: size }),
        });
      });
    fc.assert(
      fc.property(scenario, ({ sequences, picks }) => {
        const canonical = sequences.flat();
        const queues = sequences.map((sequence) => [...sequence]);
        const interleaved: AgentEvent[] = [];
        for (const pick of picks) {
          const open = queues.filter((queue) => queue.length > 0);
          interleaved.push(open[pick % open.length]!.shift()!);
        }
        const expected = foldAndStore(canonical);
        const actual = foldAndStore(interleaved);
        expect(byToolCall(actual.stored)).toEqual(byToolCall(expected.stored));
        expect(byToolCall(actual.parts)).toEqual(byToolCall(expected.parts));
      }),
      { numRuns: 300 },
    );
  });
});
