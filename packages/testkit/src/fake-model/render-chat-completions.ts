import { DEFAULT_FAKE_USAGE, type FakeStreamTurn, type FakeUsage } from "./fake-turn.ts";
import type { RenderContext } from "./render-responses.ts";
import { argumentDeltas, sseEvent, textDeltas } from "./sse-event.ts";

/**
 * A Chat Completions stream for one turn: a role chunk, content deltas, tool calls (the first
 * chunk of each carries its id and name, later ones only argument pieces, all keyed by
 * `index`), a chunk with `finish_reason`, the usage chunk with empty `choices` (as
 * `stream_options.include_usage` asks; always sent, since the proxy relies on it) and
 * `[DONE]`. Reasoning is sent as `reasoning_content` deltas, the convention of the
 * OpenAI-compatible servers that stream it. A custom tool call is sent whole as a tool call of
 * type `custom`.
 */
export function renderChatCompletionsTurn(turn: FakeStreamTurn, context: RenderContext): string[] {
  const events: string[] = [];
  const chunk = (delta: object, finishReason: string | null) =>
    sseEvent({
      id: `chatcmpl-${context.sequence}`,
      object: "chat.completion.chunk",
      created: 1_700_000_000 + context.sequence,
      model: context.model,
      system_fingerprint: null,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    });
  events.push(chunk({ role: "assistant", content: "", refusal: null }, null));
  let toolIndex = 0;
  turn.items.forEach((outputItem, outputIndex) => {
    const callId =
      outputItem.type === "text" || outputItem.type === "reasoning"
        ? ""
        : (outputItem.callId ?? `call_${context.sequence}_${outputIndex}`);
    switch (outputItem.type) {
      case "text":
        for (const piece of textDeltas(outputItem.text))
          events.push(chunk({ content: piece }, null));
        break;
      case "reasoning":
        for (const piece of textDeltas(outputItem.text)) {
          events.push(chunk({ reasoning_content: piece }, null));
        }
        break;
      case "function_call": {
        const index = toolIndex++;
        events.push(
          chunk(
            {
              tool_calls: [
                {
                  index,
                  id: callId,
                  type: "function",
                  function: { name: outputItem.name, arguments: "" },
                },
              ],
            },
            null,
          ),
        );
        for (const piece of argumentDeltas(outputItem.arguments)) {
          events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }, null));
        }
        break;
      }
      case "custom_tool_call": {
        const index = toolIndex++;
        events.push(
          chunk(
            {
              tool_calls: [
                {
                  index,
                  id: callId,
                  type: "custom",
                  custom: { name: outputItem.name, input: outputItem.input },
                },
              ],
            },
            null,
          ),
        );
        break;
      }
    }
  });
  const ending = turn.ending ?? { type: "complete" };
  if (ending.type === "failed") {
    // What OpenAI-compatible servers send when a stream fails after it started.
    events.push(
      sseEvent({ error: { message: ending.message, type: "server_error", code: ending.code } }),
    );
  } else if (ending.type === "complete") {
    const usage = turn.usage ?? DEFAULT_FAKE_USAGE;
    events.push(chunk({}, toolIndex > 0 ? "tool_calls" : "stop"));
    events.push(
      sseEvent({
        id: `chatcmpl-${context.sequence}`,
        object: "chat.completion.chunk",
        created: 1_700_000_000 + context.sequence,
        model: context.model,
        system_fingerprint: null,
        choices: [],
        usage: {
          prompt_tokens: usage.input,
          completion_tokens: usage.output,
          total_tokens: usage.input + usage.output,
          prompt_tokens_details: { cached_tokens: usage.cachedInput ?? 0 },
          completion_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
        },
      }),
    );
    events.push(sseEvent("[DONE]"));
  }
  return events;
}

/** A Chat Completions stream of one text answer whose last chunk before `[DONE]` has usage. */
export function chatCompletionsStream(text: string, usage: FakeUsage, model = "gpt-4o"): string[] {
  return renderChatCompletionsTurn(
    { kind: "stream", items: [{ type: "text", text }], usage },
    { model, sequence: 1 },
  );
}
