import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CollectedPartSchema,
  MessagePartKindSchema,
  MessagePartSchema,
  PermissionOptionKindSchema,
  ToolCallStatusSchema,
  ToolKindSchema,
} from "./message-parts.ts";
import { PartCollector } from "./part-collector.ts";
import { type AgentEvent, AgentEventSchema } from "./session-stream.ts";

const MESSAGE = "00000000-0000-4000-8000-000000000001";

// Few ids, so that updates, permissions and answers meet the calls they name, in any order.
const toolCallId = fc.constantFrom("call-1", "call-2", "call-3");
const requestId = fc.constantFrom("request-1", "request-2", "request-3");
const text = fc.string({ maxLength: 8 });
const json = fc.jsonValue({ maxDepth: 2 });

const option = fc.record({
  option_id: text,
  name: text,
  kind: fc.constantFrom(...PermissionOptionKindSchema.options),
});
const planEntry = fc.record({
  content: text,
  priority: fc.constantFrom("high", "medium", "low"),
  status: fc.constantFrom("pending", "in_progress", "completed"),
});

/** Every type of agent event, with and without each optional field. */
const agentEvent: fc.Arbitrary<AgentEvent> = fc.oneof(
  fc.record({ type: fc.constant("text"), message_id: fc.constant(MESSAGE), delta: text }),
  fc.record({ type: fc.constant("reasoning"), message_id: fc.constant(MESSAGE), delta: text }),
  fc.record(
    {
      type: fc.constant("tool_call"),
      message_id: fc.constant(MESSAGE),
      tool_call_id: toolCallId,
      title: text,
      kind: fc.constantFrom(...ToolKindSchema.options),
      status: fc.constantFrom(...ToolCallStatusSchema.options),
      input: json,
      locations: fc.array(text, { maxLength: 2 }),
    },
    { requiredKeys: ["type", "message_id", "tool_call_id", "title", "kind", "status"] },
  ),
  fc.record(
    {
      type: fc.constant("tool_update"),
      message_id: fc.constant(MESSAGE),
      tool_call_id: toolCallId,
      status: fc.constantFrom(...ToolCallStatusSchema.options),
      title: text,
      content: text,
      output: json,
    },
    { requiredKeys: ["type", "message_id", "tool_call_id"] },
  ),
  fc.record({
    type: fc.constant("plan"),
    message_id: fc.constant(MESSAGE),
    entries: fc.array(planEntry, { maxLength: 3 }),
  }),
  fc.record({
    type: fc.constant("permission_request"),
    message_id: fc.constant(MESSAGE),
    request_id: requestId,
    tool_call_id: fc.option(toolCallId),
    title: text,
    options: fc.array(option, { maxLength: 3 }),
  }),
  fc.record({
    type: fc.constant("permission_resolved"),
    message_id: fc.constant(MESSAGE),
    request_id: requestId,
    outcome: fc.constantFrom(...PermissionOptionKindSchema.options, "cancelled" as const),
  }),
  fc.record({
    type: fc.constant("retry"),
    message_id: fc.constant(MESSAGE),
    attempt: fc.integer({ min: 1, max: 3 }),
    delay_ms: fc.nat(1000),
    reason: text,
  }),
  fc.record(
    {
      type: fc.constant("error"),
      message_id: fc.option(fc.constant(MESSAGE)),
      message: text,
      stderr_tail: text,
    },
    { requiredKeys: ["type", "message_id", "message"] },
  ),
  fc.record({
    type: fc.constant("usage"),
    message_id: fc.constant(MESSAGE),
    input_tokens: fc.option(fc.nat()),
    output_tokens: fc.option(fc.nat()),
    total_tokens: fc.option(fc.nat()),
  }),
  fc.record({ type: fc.constant("mode"), agent: text, mode_id: text }),
  fc.record({
    type: fc.constant("turn_end"),
    message_id: fc.constant(MESSAGE),
    stop_reason: fc.constantFrom("end_turn", "cancelled", "error"),
  }),
);

/** What the schema makes of a part as it comes back from JSON (a database row, a response). */
function asStored(part: unknown): unknown {
  return JSON.parse(JSON.stringify(part));
}

describe("message part schemas", () => {
  it("name every kind of part the database accepts", () => {
    expect(CollectedPartSchema.options.map((variant) => variant.shape.kind.value)).toEqual(
      MessagePartKindSchema.options,
    );
    expect(MessagePartSchema.options.map((variant) => variant.shape.kind.value)).toEqual(
      MessagePartKindSchema.options,
    );
  });

  it("parse every part the collector folds from any agent events, unchanged, at every step", () => {
    fc.assert(
      fc.property(fc.array(agentEvent, { maxLength: 30 }), (events) => {
        const collector = new PartCollector();
        for (const event of events) {
          expect(AgentEventSchema.safeParse(event).success).toBe(true);
          collector.add(event);
          for (const { position, part } of collector.takeChanges().put) {
            const stored = asStored({ position, ...part });
            expect(MessagePartSchema.parse(stored)).toEqual(stored);
          }
        }
        for (const part of collector.parts) {
          const stored = asStored(part);
          expect(CollectedPartSchema.parse(stored)).toEqual(stored);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("reject a part whose content does not fit its kind", () => {
    expect(MessagePartSchema.safeParse({ position: 0, kind: "text", content: {} }).success).toBe(
      false,
    );
    expect(
      MessagePartSchema.safeParse({
        position: 1,
        kind: "tool_call",
        content: { tool_call_id: "call-1", permission: { request_id: "r", title: "t" } },
      }).success,
    ).toBe(false);
    expect(
      MessagePartSchema.safeParse({ position: 2, kind: "plan", content: { entries: "all" } })
        .success,
    ).toBe(false);
  });
});
