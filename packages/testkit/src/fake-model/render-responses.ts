import { DEFAULT_FAKE_USAGE, type FakeStreamTurn, type FakeUsage } from "./fake-turn.ts";
import { argumentDeltas, sseEvent, textDeltas } from "./sse-event.ts";

/** What a renderer needs besides the turn: the model to name and a number to keep ids apart. */
export interface RenderContext {
  model: string;
  /** The request's number on its server; ids derive from it so each request's are distinct. */
  sequence: number;
}

type Json = Record<string, unknown>;

export function responsesUsage(usage: FakeUsage): Json {
  return {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: usage.cachedInput ?? 0 },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
    total_tokens: usage.input + usage.output,
  };
}

/**
 * A Responses API stream (`stream: true`) for one turn, event for event as the API sends it:
 * every item is announced by `response.output_item.added`, streamed by its own delta events and
 * closed by `response.output_item.done`; `sequence_number` counts from 0. A turn that drops or
 * hangs stops after its items, before any terminal event.
 */
export function renderResponsesTurn(turn: FakeStreamTurn, context: RenderContext): string[] {
  let sequenceNumber = 0;
  const events: string[] = [];
  const emit = (type: string, fields: Json) => {
    events.push(sseEvent({ type, sequence_number: sequenceNumber, ...fields }, type));
    sequenceNumber += 1;
  };
  const responseId = `resp_${context.sequence}`;
  const response = (status: string, output: Json[], extra: Json = {}): Json => ({
    id: responseId,
    object: "response",
    created_at: 1_700_000_000 + context.sequence,
    status,
    error: null,
    incomplete_details: null,
    model: context.model,
    output,
    parallel_tool_calls: true,
    tool_choice: "auto",
    usage: null,
    ...extra,
  });

  emit("response.created", { response: response("in_progress", []) });
  emit("response.in_progress", { response: response("in_progress", []) });

  const done: Json[] = [];
  turn.items.forEach((outputItem, outputIndex) => {
    const suffix = `${context.sequence}_${outputIndex}`;
    const callId = (given: string | undefined) => given ?? `call_${suffix}`;
    switch (outputItem.type) {
      case "text": {
        const id = `msg_${suffix}`;
        const part = { type: "output_text", annotations: [], logprobs: [] };
        const base = { id, type: "message", role: "assistant" };
        const at = { item_id: id, output_index: outputIndex, content_index: 0 };
        emit("response.output_item.added", {
          output_index: outputIndex,
          item: { ...base, status: "in_progress", content: [] },
        });
        emit("response.content_part.added", { ...at, part: { ...part, text: "" } });
        for (const delta of textDeltas(outputItem.text)) {
          emit("response.output_text.delta", { ...at, delta, logprobs: [] });
        }
        emit("response.output_text.done", { ...at, text: outputItem.text, logprobs: [] });
        emit("response.content_part.done", { ...at, part: { ...part, text: outputItem.text } });
        const item = {
          ...base,
          status: "completed",
          content: [{ ...part, text: outputItem.text }],
        };
        emit("response.output_item.done", { output_index: outputIndex, item });
        done.push(item);
        break;
      }
      case "reasoning": {
        const id = `rs_${suffix}`;
        const at = { item_id: id, output_index: outputIndex, summary_index: 0 };
        emit("response.output_item.added", {
          output_index: outputIndex,
          item: { id, type: "reasoning", summary: [] },
        });
        emit("response.reasoning_summary_part.added", {
          ...at,
          part: { type: "summary_text", text: "" },
        });
        for (const delta of textDeltas(outputItem.text)) {
          emit("response.reasoning_summary_text.delta", { ...at, delta });
        }
        emit("response.reasoning_summary_text.done", { ...at, text: outputItem.text });
        emit("response.reasoning_summary_part.done", {
          ...at,
          part: { type: "summary_text", text: outputItem.text },
        });
        const item = {
          id,
          type: "reasoning",
          summary: [{ type: "summary_text", text: outputItem.text }],
          encrypted_content: `enc_${suffix}`,
        };
        emit("response.output_item.done", { output_index: outputIndex, item });
        done.push(item);
        break;
      }
      case "function_call": {
        const id = `fc_${suffix}`;
        const base = {
          id,
          type: "function_call",
          call_id: callId(outputItem.callId),
          name: outputItem.name,
        };
        const at = { item_id: id, output_index: outputIndex };
        emit("response.output_item.added", {
          output_index: outputIndex,
          item: { ...base, arguments: "", status: "in_progress" },
        });
        for (const delta of argumentDeltas(outputItem.arguments)) {
          emit("response.function_call_arguments.delta", { ...at, delta });
        }
        emit("response.function_call_arguments.done", {
          ...at,
          name: outputItem.name,
          arguments: outputItem.arguments,
        });
        const item = { ...base, arguments: outputItem.arguments, status: "completed" };
        emit("response.output_item.done", { output_index: outputIndex, item });
        done.push(item);
        break;
      }
      case "custom_tool_call": {
        const id = `ctc_${suffix}`;
        const base = {
          id,
          type: "custom_tool_call",
          call_id: callId(outputItem.callId),
          name: outputItem.name,
        };
        const at = { item_id: id, output_index: outputIndex };
        emit("response.output_item.added", {
          output_index: outputIndex,
          item: { ...base, input: "" },
        });
        for (const delta of argumentDeltas(outputItem.input, 16)) {
          emit("response.custom_tool_call_input.delta", { ...at, delta });
        }
        emit("response.custom_tool_call_input.done", { ...at, input: outputItem.input });
        const item = { ...base, input: outputItem.input };
        emit("response.output_item.done", { output_index: outputIndex, item });
        done.push(item);
        break;
      }
    }
  });

  const ending = turn.ending ?? { type: "complete" };
  if (ending.type === "complete") {
    emit("response.completed", {
      response: response("completed", done, {
        usage: responsesUsage(turn.usage ?? DEFAULT_FAKE_USAGE),
      }),
    });
  } else if (ending.type === "failed") {
    emit("response.failed", {
      response: response("failed", done, {
        error: { code: ending.code, message: ending.message },
      }),
    });
  }
  return events;
}

/** A Responses stream of one text answer (word deltas), ending in `response.completed`. */
export function responsesStream(text: string, usage: FakeUsage, model = "gpt-5-codex"): string[] {
  return renderResponsesTurn(
    { kind: "stream", items: [{ type: "text", text }], usage },
    { model, sequence: 1 },
  );
}
