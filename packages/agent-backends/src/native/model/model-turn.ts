import { ModelClientError, type ModelClientErrorKind } from "./model-client-error.ts";
import type { ModelStreamEvent, ModelUsage, ResponseItem } from "./responses-events.ts";
import { type StreamResponseOptions, streamResponse } from "./stream-response.ts";

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  /** The wait before the first retry; it doubles for each one after. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A server asking for a longer wait than this ends the turn instead. */
  maxRetryAfterMs: number;
  /** Spread of the computed wait, 0 to 1: 0.2 means ±10%. Waits the server named get none. */
  jitter: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 5,
  baseDelayMs: 200,
  maxDelayMs: 10_000,
  maxRetryAfterMs: 60_000,
  jitter: 0.2,
};

/**
 * An attempt failed and another starts after `delay_ms`. Every event yielded since the turn
 * began or since the previous retry event belongs to the failed attempt and is void:
 * `discarded_events` says how many, so a UI can take back half-streamed text.
 */
export interface ModelRetryEvent {
  type: "retry";
  /** Which retry this is: 1 for the first. */
  attempt: number;
  max_retries: number;
  delay_ms: number;
  /** Readable, free of the token. */
  reason: string;
  kind: ModelClientErrorKind;
  status: number | undefined;
  discarded_events: number;
}

/** Events of a turn with retries: never `failed` (that is retried or thrown). */
export type ModelTurnEvent = Exclude<ModelStreamEvent, { type: "failed" }> | ModelRetryEvent;

export interface ModelTurnOptions extends StreamResponseOptions {
  retry?: Partial<RetryPolicy>;
  /** Told of each retry too, before the wait; for logs. */
  onRetry?: (event: ModelRetryEvent) => void;
  /** For tests: the source of jitter. */
  random?: () => number;
}

function abortableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolveSleep, rejectSleep) => {
    const aborted = () => {
      clearTimeout(timer);
      rejectSleep(
        new ModelClientError("aborted", "model request aborted", {
          retryable: false,
          cause: signal?.reason,
        }),
      );
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", aborted);
      resolveSleep();
    }, ms);
    if (signal?.aborted) aborted();
    else signal?.addEventListener("abort", aborted, { once: true });
  });
}

/** The wait before retry number `retry` (1-based) when the server named none. */
export function backoffDelay(retry: number, policy: RetryPolicy, random = Math.random): number {
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  const spread = 1 - policy.jitter / 2 + random() * policy.jitter;
  return Math.max(0, Math.round(Math.min(policy.maxDelayMs, exponential * spread)));
}

function failedToError(event: Extract<ModelStreamEvent, { type: "failed" }>): ModelClientError {
  return new ModelClientError(
    "response_failed",
    `the model failed the response (${event.code}): ${event.message}`,
    {
      retryable: event.retryable,
      providerCode: event.code,
      ...(event.retry_after_ms === undefined ? {} : { retryAfterMs: event.retry_after_ms }),
    },
  );
}

/**
 * Streams one model turn, retrying from scratch on a dropped connection, an idle stream, a 429
 * or 5xx, or a retryable `response.failed`, with exponential backoff (or the server's
 * Retry-After). Each retry is yielded as a `retry` event in order with the others. Ends after
 * `completed`, or throws the last ModelClientError; an abort throws at once, even mid-wait.
 */
export async function* runModelTurnWithRetry(
  options: ModelTurnOptions,
): AsyncGenerator<ModelTurnEvent, void, undefined> {
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
  const maxRetries = Math.max(0, policy.maxAttempts - 1);
  for (let retry = 0; ; retry += 1) {
    let emitted = 0;
    let error: ModelClientError;
    try {
      for await (const event of streamResponse(options)) {
        if (event.type === "failed") throw failedToError(event);
        emitted += 1;
        yield event;
      }
      return;
    } catch (caught) {
      if (!(caught instanceof ModelClientError)) throw caught;
      error = caught;
    }
    if (!error.retryable || retry >= maxRetries) throw error;
    if (error.retryAfterMs !== undefined && error.retryAfterMs > policy.maxRetryAfterMs) {
      throw new ModelClientError(
        error.kind,
        `${error.message} (the server asks to wait ${error.retryAfterMs} ms, more than ${policy.maxRetryAfterMs})`,
        {
          retryable: false,
          ...(error.status === undefined ? {} : { status: error.status }),
          retryAfterMs: error.retryAfterMs,
          cause: error,
        },
      );
    }
    const delay = error.retryAfterMs ?? backoffDelay(retry + 1, policy, options.random);
    const event: ModelRetryEvent = {
      type: "retry",
      attempt: retry + 1,
      max_retries: maxRetries,
      delay_ms: delay,
      reason: error.message,
      kind: error.kind,
      status: error.status,
      discarded_events: emitted,
    };
    options.onRetry?.(event);
    yield event;
    await abortableSleep(delay, options.signal);
  }
}

/** A finished model turn, as the agent loop needs it. */
export interface ModelTurnResult {
  response_id: string | undefined;
  /** The assistant's text, all messages joined. */
  text: string;
  reasoning: string;
  function_calls: { call_id: string; name: string; arguments: string }[];
  custom_tool_calls: { call_id: string; name: string; input: string }[];
  /** Output items in order, to append to the next request's input. */
  output: ResponseItem[];
  usage: ModelUsage | undefined;
  retries: number;
}

/**
 * Runs a turn with retries and gathers its result, handing each event to `onEvent` as it
 * comes. Whatever a failed attempt produced is dropped from the result.
 */
export async function collectModelTurn(
  options: ModelTurnOptions,
  onEvent?: (event: ModelTurnEvent) => void,
): Promise<ModelTurnResult> {
  const empty = (): ModelTurnResult => ({
    response_id: undefined,
    text: "",
    reasoning: "",
    function_calls: [],
    custom_tool_calls: [],
    output: [],
    usage: undefined,
    retries: 0,
  });
  let result = empty();
  for await (const event of runModelTurnWithRetry(options)) {
    onEvent?.(event);
    switch (event.type) {
      case "retry":
        result = { ...empty(), retries: event.attempt };
        break;
      case "created":
        result.response_id = event.response_id;
        break;
      case "reasoning_delta":
        result.reasoning += event.delta;
        break;
      case "message":
        result.text += event.text;
        result.output.push(event.item);
        break;
      case "reasoning":
        result.output.push(event.item);
        break;
      case "function_call":
        result.function_calls.push({
          call_id: event.call_id,
          name: event.name,
          arguments: event.arguments,
        });
        result.output.push(event.item);
        break;
      case "custom_tool_call":
        result.custom_tool_calls.push({
          call_id: event.call_id,
          name: event.name,
          input: event.input,
        });
        result.output.push(event.item);
        break;
      case "completed":
        result.response_id = event.response_id;
        result.usage = event.usage;
        break;
    }
  }
  return result;
}
