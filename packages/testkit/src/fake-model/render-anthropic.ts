import { DEFAULT_FAKE_USAGE, type FakeStreamTurn, type FakeUsage } from "./fake-turn.ts";
import type { RenderContext } from "./render-responses.ts";
import { argumentDeltas, sseEvent, textDeltas } from "./sse-event.ts";

/** Anthropic's Messages API has no free-form tool calls; a script that uses one is wrong. */
export class UnrenderableTurnError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnrenderableTurnError";
  }
}

/**
 * An Anthropic Messages stream for one turn: `message_start` (input usage, output 1), a `ping`,
 * one content block per item (`text`, `thinking` closed by a `signature_delta`, `tool_use` with
 * `input_json_delta` pieces), `message_delta` with the stop reason and the cumulative output
 * tokens, `message_stop`. A failure is an `error` event, as the API sends when overloaded.
 */
export function renderAnthropicTurn(turn: FakeStreamTurn, context: RenderContext): string[] {
  const events: string[] = [];
  const emit = (type: string, fields: object) => events.push(sseEvent({ type, ...fields }, type));
  const usage = turn.usage ?? DEFAULT_FAKE_USAGE;
  emit("message_start", {
    message: {
      id: `msg_${context.sequence}`,
      type: "message",
      role: "assistant",
      model: context.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: usage.input - (usage.cachedInput ?? 0),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: usage.cachedInput ?? 0,
        output_tokens: 1,
      },
    },
  });
  emit("ping", {});
  let usedTools = false;
  turn.items.forEach((outputItem, index) => {
    switch (outputItem.type) {
      case "text":
        emit("content_block_start", { index, content_block: { type: "text", text: "" } });
        for (const text of textDeltas(outputItem.text)) {
          emit("content_block_delta", { index, delta: { type: "text_delta", text } });
        }
        break;
      case "reasoning":
        emit("content_block_start", {
          index,
          content_block: { type: "thinking", thinking: "", signature: "" },
        });
        for (const thinking of textDeltas(outputItem.text)) {
          emit("content_block_delta", { index, delta: { type: "thinking_delta", thinking } });
        }
        emit("content_block_delta", {
          index,
          delta: { type: "signature_delta", signature: `sig_${context.sequence}_${index}` },
        });
        break;
      case "function_call":
        usedTools = true;
        emit("content_block_start", {
          index,
          content_block: {
            type: "tool_use",
            id: outputItem.callId ?? `toolu_${context.sequence}_${index}`,
            name: outputItem.name,
            input: {},
          },
        });
        for (const partial_json of ["", ...argumentDeltas(outputItem.arguments)]) {
          emit("content_block_delta", { index, delta: { type: "input_json_delta", partial_json } });
        }
        break;
      case "custom_tool_call":
        throw new UnrenderableTurnError(
          `custom tool call "${outputItem.name}" has no Anthropic Messages form`,
        );
    }
    emit("content_block_stop", { index });
  });
  const ending = turn.ending ?? { type: "complete" };
  if (ending.type === "failed") {
    emit("error", { error: { type: ending.code, message: ending.message } });
  } else if (ending.type === "complete") {
    emit("message_delta", {
      delta: { stop_reason: usedTools ? "tool_use" : "end_turn", stop_sequence: null },
      usage: { output_tokens: usage.output },
    });
    emit("message_stop", {});
  }
  return events;
}

/** An Anthropic stream of one text answer: input usage first, cumulative output at the end. */
export function anthropicMessagesStream(
  text: string,
  usage: FakeUsage,
  model = "claude-sonnet-4-5",
): string[] {
  return renderAnthropicTurn(
    { kind: "stream", items: [{ type: "text", text }], usage },
    { model, sequence: 1 },
  );
}
