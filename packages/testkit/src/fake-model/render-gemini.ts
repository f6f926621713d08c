import { DEFAULT_FAKE_USAGE, type FakeStreamTurn, type FakeUsage } from "./fake-turn.ts";
import { UnrenderableTurnError } from "./render-anthropic.ts";
import type { RenderContext } from "./render-responses.ts";
import { sseEvent, textDeltas } from "./sse-event.ts";

type Json = Record<string, unknown>;

/**
 * Gemini's `usageMetadata`: `promptTokenCount` includes the cached part, the answer and the
 * thinking are counted apart, and the total is all of them.
 */
export function geminiUsageMetadata(usage: FakeUsage): Json {
  const thoughts = usage.reasoning ?? 0;
  return {
    promptTokenCount: usage.input,
    candidatesTokenCount: usage.output - thoughts,
    totalTokenCount: usage.input + usage.output,
    ...(usage.cachedInput ? { cachedContentTokenCount: usage.cachedInput } : {}),
    ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
  };
}

/** The content parts of a turn, one or more per item; text is cut into word-sized deltas. */
function geminiParts(turn: FakeStreamTurn): Json[][] {
  return turn.items.map((outputItem) => {
    switch (outputItem.type) {
      case "text":
        return textDeltas(outputItem.text).map((text) => ({ text }));
      case "reasoning":
        return textDeltas(outputItem.text).map((text) => ({ text, thought: true }));
      case "function_call":
        // Gemini sends a function call whole, with its arguments as an object.
        return [
          {
            functionCall: {
              name: outputItem.name,
              args: JSON.parse(outputItem.arguments || "{}") as unknown,
              ...(outputItem.callId === undefined ? {} : { id: outputItem.callId }),
            },
          },
        ];
      case "custom_tool_call":
        throw new UnrenderableTurnError(
          `custom tool call "${outputItem.name}" has no Gemini generateContent form`,
        );
    }
    return [];
  });
}

/**
 * A Gemini `streamGenerateContent?alt=sse` stream for one turn, chunk for chunk as the API sends
 * it: every chunk is a `GenerateContentResponse` with one candidate holding the next part(s),
 * the running `usageMetadata` and the `modelVersion`; the last carries `finishReason: "STOP"` and
 * the whole usage. A failure mid-stream is an `error` object, as the API sends one.
 */
export function renderGeminiTurn(turn: FakeStreamTurn, context: RenderContext): string[] {
  const usage = turn.usage ?? DEFAULT_FAKE_USAGE;
  const responseId = `gemini_${context.sequence}`;
  const chunk = (parts: Json[], last: boolean): string =>
    sseEvent({
      candidates: [
        {
          content: { parts, role: "model" },
          index: 0,
          ...(last ? { finishReason: "STOP" } : {}),
        },
      ],
      usageMetadata: last
        ? geminiUsageMetadata(usage)
        : { promptTokenCount: usage.input, totalTokenCount: usage.input },
      modelVersion: context.model,
      responseId,
    });
  const parts = geminiParts(turn).flat();
  const events = parts.map((part) => chunk([part], false));
  const ending = turn.ending ?? { type: "complete" };
  if (ending.type === "failed") {
    events.push(sseEvent({ error: { code: 500, message: ending.message, status: "INTERNAL" } }));
  } else if (ending.type === "complete") {
    events.push(chunk([], true));
  }
  return events;
}

/**
 * A non-streaming `generateContent` answer for one turn: one candidate with every part (text
 * deltas joined), the finish reason and the whole usage.
 */
export function renderGeminiResponse(turn: FakeStreamTurn, context: RenderContext): string {
  const parts: Json[] = [];
  for (const itemParts of geminiParts(turn)) {
    const first = itemParts[0];
    if (first === undefined) continue;
    if (typeof first.text === "string") {
      parts.push({ ...first, text: itemParts.map((part) => part.text).join("") });
    } else parts.push(...itemParts);
  }
  return JSON.stringify({
    candidates: [{ content: { parts, role: "model" }, finishReason: "STOP", index: 0 }],
    usageMetadata: geminiUsageMetadata(turn.usage ?? DEFAULT_FAKE_USAGE),
    modelVersion: context.model,
    responseId: `gemini_${context.sequence}`,
  });
}

/** A Gemini stream of one text answer. */
export function geminiStream(text: string, usage: FakeUsage, model = "gemini-2.5-pro"): string[] {
  return renderGeminiTurn(
    { kind: "stream", items: [{ type: "text", text }], usage },
    { model, sequence: 1 },
  );
}
