import { z } from "zod";
import { ModelClientError } from "./model-client-error.ts";

// Only the events and fields the native agent uses are checked; objects stay loose so a field
// the API adds tomorrow does not break today's client.

const UsageSchema = z.looseObject({
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  total_tokens: z.number().int().nonnegative(),
  input_tokens_details: z.looseObject({ cached_tokens: z.number().nullish() }).nullish(),
  output_tokens_details: z.looseObject({ reasoning_tokens: z.number().nullish() }).nullish(),
});

const ResponseSchema = z.looseObject({
  id: z.string(),
  status: z.string().nullish(),
  usage: UsageSchema.nullish(),
  error: z.looseObject({ code: z.string().nullish(), message: z.string() }).nullish(),
  incomplete_details: z.looseObject({ reason: z.string().nullish() }).nullish(),
});

const MessageItemSchema = z.looseObject({
  type: z.literal("message"),
  id: z.string().optional(),
  role: z.string(),
  content: z.array(
    z.looseObject({
      type: z.string(),
      text: z.string().optional(),
      refusal: z.string().optional(),
    }),
  ),
});

const ReasoningItemSchema = z.looseObject({
  type: z.literal("reasoning"),
  id: z.string().optional(),
  summary: z.array(z.looseObject({ type: z.string(), text: z.string() })),
  encrypted_content: z.string().nullish(),
});

const FunctionCallItemSchema = z.looseObject({
  type: z.literal("function_call"),
  id: z.string().optional(),
  call_id: z.string(),
  name: z.string(),
  arguments: z.string(),
});

const CustomToolCallItemSchema = z.looseObject({
  type: z.literal("custom_tool_call"),
  id: z.string().optional(),
  call_id: z.string(),
  name: z.string(),
  input: z.string(),
});

const DeltaSchema = z.looseObject({ item_id: z.string(), delta: z.string() });
const ItemDoneSchema = z.looseObject({ item: z.looseObject({ type: z.string() }) });
const ResponseEventSchema = z.looseObject({ response: ResponseSchema });
const ErrorEventSchema = z.looseObject({ code: z.string().nullish(), message: z.string() });

/** An output item exactly as the API sent it, to send back as input on the next request. */
export type ResponseItem = { type: string } & Record<string, unknown>;

/** Token counts of one response. */
export interface ModelUsage {
  input_tokens: number;
  /** Part of `input_tokens` served from the prompt cache. */
  cached_input_tokens: number;
  output_tokens: number;
  /** Part of `output_tokens` spent on reasoning. */
  reasoning_output_tokens: number;
  total_tokens: number;
}

/** What a Responses stream tells the native agent, one event per meaningful SSE event. */
export type ModelStreamEvent =
  | { type: "created"; response_id: string }
  | { type: "text_delta"; item_id: string; delta: string }
  | { type: "reasoning_delta"; item_id: string; delta: string }
  /** An assistant message is complete; `text` joins its output_text parts. */
  | { type: "message"; item_id: string | undefined; text: string; item: ResponseItem }
  /** A reasoning item is complete; keep `item` to send back (it may hold encrypted content). */
  | { type: "reasoning"; item_id: string | undefined; summary: string[]; item: ResponseItem }
  | {
      type: "function_call";
      item_id: string | undefined;
      call_id: string;
      name: string;
      /** JSON text as the model wrote it; it may not parse, and the tool must say so. */
      arguments: string;
      item: ResponseItem;
    }
  | {
      type: "custom_tool_call";
      item_id: string | undefined;
      call_id: string;
      name: string;
      input: string;
      item: ResponseItem;
    }
  | { type: "completed"; response_id: string; usage: ModelUsage | undefined }
  | {
      type: "failed";
      response_id: string | undefined;
      code: string;
      message: string;
      retryable: boolean;
      /** Parsed from messages such as "Please try again in 1.5s". */
      retry_after_ms: number | undefined;
    };

/** Failure codes that another attempt cannot fix. */
const FATAL_FAILURE_CODES = new Set([
  "context_length_exceeded",
  "insufficient_quota",
  "invalid_prompt",
  "invalid_request_error",
  "usage_not_included",
  "content_filter",
  "max_output_tokens",
]);

/** "Please try again in 1.5s" / "in 250ms": how rate-limit failures name their wait. */
export function retryAfterFromMessage(message: string): number | undefined {
  const match = /try again in (\d+(?:\.\d+)?)\s*(ms|s|seconds?)\b/i.exec(message);
  if (!match) return undefined;
  const amount = Number(match[1]);
  return Math.ceil(match[2]!.toLowerCase() === "ms" ? amount : amount * 1000);
}

function failure(
  responseId: string | undefined,
  code: string,
  message: string,
): Extract<ModelStreamEvent, { type: "failed" }> {
  return {
    type: "failed",
    response_id: responseId,
    code,
    message,
    retryable: !FATAL_FAILURE_CODES.has(code),
    retry_after_ms: retryAfterFromMessage(message),
  };
}

function toUsage(usage: z.infer<typeof UsageSchema> | null | undefined): ModelUsage | undefined {
  if (!usage) return undefined;
  return {
    input_tokens: usage.input_tokens,
    cached_input_tokens: usage.input_tokens_details?.cached_tokens ?? 0,
    output_tokens: usage.output_tokens,
    reasoning_output_tokens: usage.output_tokens_details?.reasoning_tokens ?? 0,
    total_tokens: usage.total_tokens,
  };
}

function check<T>(schema: z.ZodType<T>, value: unknown, type: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue?.path.length ? issue.path.join(".") : "(root)";
  throw new ModelClientError(
    "protocol",
    `model stream: event ${type} does not have the expected shape at ${where}: ${issue?.message}`,
    { retryable: false, cause: parsed.error },
  );
}

function itemDone(item: { type: string }): ModelStreamEvent | undefined {
  const raw = item as ResponseItem;
  const type = "response.output_item.done";
  switch (item.type) {
    case "message": {
      const message = check(MessageItemSchema, item, `${type} (message)`);
      const text = message.content
        .filter((part) => part.type === "output_text")
        .map((part) => part.text ?? "")
        .join("");
      return { type: "message", item_id: message.id, text, item: raw };
    }
    case "reasoning": {
      const reasoning = check(ReasoningItemSchema, item, `${type} (reasoning)`);
      const summary = reasoning.summary.map((part) => part.text);
      return { type: "reasoning", item_id: reasoning.id, summary, item: raw };
    }
    case "function_call": {
      const call = check(FunctionCallItemSchema, item, `${type} (function_call)`);
      return {
        type: "function_call",
        item_id: call.id,
        call_id: call.call_id,
        name: call.name,
        arguments: call.arguments,
        item: raw,
      };
    }
    case "custom_tool_call": {
      const call = check(CustomToolCallItemSchema, item, `${type} (custom_tool_call)`);
      return {
        type: "custom_tool_call",
        item_id: call.id,
        call_id: call.call_id,
        name: call.name,
        input: call.input,
        item: raw,
      };
    }
    default:
      return undefined;
  }
}

/**
 * Turns one SSE event of a Responses stream into a typed event, or undefined for the many
 * events the agent does not need (and for event types it does not know). Malformed JSON and a
 * known event in the wrong shape throw a non-retryable protocol error.
 */
export function parseResponsesEvent(data: string): ModelStreamEvent | undefined {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch (error) {
    const excerpt = data.length > 120 ? `${data.slice(0, 120)}…` : data;
    throw new ModelClientError("protocol", `model stream: malformed JSON in event: ${excerpt}`, {
      retryable: false,
      cause: error,
    });
  }
  const { type } = check(z.looseObject({ type: z.string() }), value, "(any)");
  switch (type) {
    case "response.created":
      return { type: "created", response_id: check(ResponseEventSchema, value, type).response.id };
    case "response.output_text.delta": {
      const event = check(DeltaSchema, value, type);
      return { type: "text_delta", item_id: event.item_id, delta: event.delta };
    }
    case "response.reasoning_summary_text.delta":
    case "response.reasoning_text.delta": {
      const event = check(DeltaSchema, value, type);
      return { type: "reasoning_delta", item_id: event.item_id, delta: event.delta };
    }
    case "response.output_item.done":
      return itemDone(check(ItemDoneSchema, value, type).item);
    case "response.completed": {
      const { response } = check(ResponseEventSchema, value, type);
      return { type: "completed", response_id: response.id, usage: toUsage(response.usage) };
    }
    case "response.failed": {
      const { response } = check(ResponseEventSchema, value, type);
      return failure(
        response.id,
        response.error?.code ?? "server_error",
        response.error?.message ?? "the model reported a failure without a message",
      );
    }
    case "response.incomplete": {
      const { response } = check(ResponseEventSchema, value, type);
      const reason = response.incomplete_details?.reason ?? "unknown";
      return failure(response.id, reason, `the response is incomplete: ${reason}`);
    }
    case "error": {
      const event = check(ErrorEventSchema, value, type);
      return failure(undefined, event.code ?? "server_error", event.message);
    }
    default:
      return undefined;
  }
}
