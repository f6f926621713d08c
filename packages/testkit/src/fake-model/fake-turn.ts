/** Token counts a fake turn reports; `total` is always input + output. */
export interface FakeUsage {
  input: number;
  output: number;
  /** Part of `input` served from the prompt cache. */
  cachedInput?: number;
  /** Part of `output` spent on reasoning. */
  reasoning?: number;
}

/** One piece of model output, independent of the API it is rendered for. */
export type FakeOutputItem =
  | { type: "text"; text: string }
  /** Reasoning summary text (Responses), thinking (Anthropic), `reasoning_content` (Chat). */
  | { type: "reasoning"; text: string }
  /** `arguments` is the JSON text the model sends, not an object. */
  | { type: "function_call"; name: string; arguments: string; callId?: string }
  /** A free-form tool call (Responses `custom_tool_call`), such as Codex's apply_patch. */
  | { type: "custom_tool_call"; name: string; input: string; callId?: string };

/** How a streamed turn ends after its items. */
export type FakeTurnEnding =
  | { type: "complete" }
  /** The socket is destroyed: the client sees the connection drop mid-stream. */
  | { type: "drop" }
  /** The connection stays open with nothing more sent, until the client gives up. */
  | { type: "hang" }
  /** `response.failed` (Responses), an `error` event (Anthropic), an error chunk (Chat). */
  | { type: "failed"; code: string; message: string };

export interface FakeStreamTurn {
  kind: "stream";
  items: FakeOutputItem[];
  usage?: FakeUsage;
  ending?: FakeTurnEnding;
  /** Pause between SSE events, so a test can act while the stream is open. */
  chunkDelayMs?: number;
}

/** An HTTP error answered before any stream starts. */
export interface FakeHttpErrorTurn {
  kind: "http_error";
  status: number;
  message?: string;
  /** The provider's error code, e.g. `rate_limit_exceeded`. */
  code?: string;
  /** Sent as the `retry-after` header: seconds, or an HTTP date. */
  retryAfter?: number | string;
  headers?: Record<string, string>;
}

/** One scripted answer; a fake model consumes one per model request. */
export type FakeTurn = FakeStreamTurn | FakeHttpErrorTurn;

export interface TurnOptions {
  usage?: FakeUsage;
  chunkDelayMs?: number;
}

export interface CallOptions extends TurnOptions {
  callId?: string;
}

function stringifyArguments(args: unknown): string {
  return typeof args === "string" ? args : JSON.stringify(args);
}

/** Builders for output items, for turns with several of them. */
export const item = {
  text: (text: string): FakeOutputItem => ({ type: "text", text }),
  reasoning: (text: string): FakeOutputItem => ({ type: "reasoning", text }),
  /** An object is sent as its JSON text; a string is sent as is (even when not valid JSON). */
  functionCall: (name: string, args: unknown, callId?: string): FakeOutputItem => ({
    type: "function_call",
    name,
    arguments: stringifyArguments(args),
    ...(callId === undefined ? {} : { callId }),
  }),
  customToolCall: (name: string, input: string, callId?: string): FakeOutputItem => ({
    type: "custom_tool_call",
    name,
    input,
    ...(callId === undefined ? {} : { callId }),
  }),
} as const;

function streamTurn(
  items: FakeOutputItem[],
  options: TurnOptions = {},
  ending: FakeTurnEnding = { type: "complete" },
): FakeStreamTurn {
  return {
    kind: "stream",
    items,
    ending,
    ...(options.usage ? { usage: options.usage } : {}),
    ...(options.chunkDelayMs === undefined ? {} : { chunkDelayMs: options.chunkDelayMs }),
  };
}

/** Builders for whole turns: `fake.script([turn.text("hi"), turn.fail({ status: 500 })])`. */
export const turn = {
  /** A completed turn with the given items, in order. */
  of: (items: FakeOutputItem[], options?: TurnOptions): FakeStreamTurn =>
    streamTurn(items, options),
  text: (text: string, options?: TurnOptions): FakeStreamTurn =>
    streamTurn([item.text(text)], options),
  /** Reasoning, then (when given) the answer text. */
  reasoning: (reasoning: string, text?: string, options?: TurnOptions): FakeStreamTurn =>
    streamTurn(
      text === undefined
        ? [item.reasoning(reasoning)]
        : [item.reasoning(reasoning), item.text(text)],
      options,
    ),
  functionCall: (name: string, args: unknown, options: CallOptions = {}): FakeStreamTurn =>
    streamTurn([item.functionCall(name, args, options.callId)], options),
  customToolCall: (name: string, input: string, options: CallOptions = {}): FakeStreamTurn =>
    streamTurn([item.customToolCall(name, input, options.callId)], options),
  /** An HTTP error before streaming, e.g. `{ status: 429, retryAfter: 1 }`. */
  fail: (failure: Omit<FakeHttpErrorTurn, "kind">): FakeHttpErrorTurn => ({
    kind: "http_error",
    ...failure,
  }),
  /** Streams the items, then drops the connection before the response completes. */
  drop: (items: FakeOutputItem[] = [], options?: TurnOptions): FakeStreamTurn =>
    streamTurn(items, options, { type: "drop" }),
  /** Streams the items, then reports a failure in the stream (`response.failed`). */
  failed: (
    failure: { code?: string; message?: string } = {},
    items: FakeOutputItem[] = [],
    options?: TurnOptions,
  ): FakeStreamTurn =>
    streamTurn(items, options, {
      type: "failed",
      code: failure.code ?? "server_error",
      message: failure.message ?? "The server had an error while processing your request.",
    }),
  /** Streams the items, then keeps the connection open without another byte. */
  hang: (items: FakeOutputItem[] = [], options?: TurnOptions): FakeStreamTurn =>
    streamTurn(items, options, { type: "hang" }),
} as const;

/** Usage a turn reports when its script gave none. */
export const DEFAULT_FAKE_USAGE: FakeUsage = { input: 10, output: 5 };
