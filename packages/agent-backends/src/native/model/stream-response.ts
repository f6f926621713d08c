import { errorMessage } from "@deckhand/errors";
import { redactSecrets } from "@deckhand/secrets";
import { SseParser } from "@deckhand/sse";
import { WireHeader } from "@deckhand/wire";
import { ModelClientError } from "./model-client-error.ts";
import {
  type ModelStreamEvent,
  parseResponsesEvent,
  type ResponseItem,
} from "./responses-events.ts";

/** A tool the model may call: a JSON-schema function, or a free-form (grammar) custom tool. */
export type ResponsesTool =
  | {
      type: "function";
      name: string;
      description: string;
      parameters: Record<string, unknown>;
      strict?: boolean;
    }
  | { type: "custom"; name: string; description: string; format?: Record<string, unknown> };

export interface StreamResponseOptions {
  /** The proxy's URL for this agent type, `<server>/model-provider/<agent-type>`. */
  baseUrl: string;
  /** The scoped model-provider token; sent only as the bearer token, never put in an error. */
  token: string;
  jobId: string;
  model: string;
  instructions?: string;
  /** The conversation so far: messages, earlier output items and tool outputs. */
  input: ResponseItem[] | string;
  tools?: ResponsesTool[];
  parallelToolCalls?: boolean;
  reasoning?: { effort?: string; summary?: string };
  /** E.g. `["reasoning.encrypted_content"]`, to carry reasoning across stateless requests. */
  include?: string[];
  /** Further request fields, merged last. */
  extraBody?: Record<string, unknown>;
  signal?: AbortSignal;
  /** A stream that sends no byte for this long counts as dropped. Default 300 s. */
  idleTimeoutMs?: number;
  fetch?: typeof fetch;
}

const DEFAULT_IDLE_TIMEOUT_MS = 300_000;
const ERROR_BODY_LIMIT = 500;

function requestBody(options: StreamResponseOptions): string {
  return JSON.stringify({
    model: options.model,
    ...(options.instructions === undefined ? {} : { instructions: options.instructions }),
    input: options.input,
    tools: options.tools ?? [],
    tool_choice: "auto",
    parallel_tool_calls: options.parallelToolCalls ?? false,
    ...(options.reasoning ? { reasoning: options.reasoning } : {}),
    ...(options.include ? { include: options.include } : {}),
    // The agent sends the whole conversation each time, so nothing needs keeping upstream.
    store: false,
    stream: true,
    ...options.extraBody,
  });
}

/** Retry-After as seconds or an HTTP date, or OpenAI's `retry-after-ms`; in milliseconds. */
export function retryAfterFromHeaders(headers: Headers, now = Date.now()): number | undefined {
  const milliseconds = headers.get("retry-after-ms");
  if (milliseconds !== null && /^\d+(\.\d+)?$/.test(milliseconds.trim())) {
    return Math.ceil(Number(milliseconds));
  }
  const value = headers.get("retry-after")?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

async function httpError(response: Response, token: string): Promise<ModelClientError> {
  let detail = "";
  let providerCode: string | undefined;
  try {
    const text = (await response.text()).slice(0, 4096);
    try {
      const parsed = JSON.parse(text) as { error?: { message?: unknown; code?: unknown } };
      if (typeof parsed.error?.message === "string") detail = parsed.error.message;
      if (typeof parsed.error?.code === "string") providerCode = parsed.error.code;
    } catch {
      detail = text;
    }
  } catch {
    // The body is only for the message; the status says enough.
  }
  // Whatever echoed the request back must not carry the token into a log.
  detail = redactSecrets(detail, [token]).slice(0, ERROR_BODY_LIMIT);
  const retryAfterMs = retryAfterFromHeaders(response.headers);
  return new ModelClientError(
    "http_status",
    `model request failed with HTTP ${response.status}${detail ? `: ${detail}` : ""}`,
    {
      retryable: isRetryableStatus(response.status),
      status: response.status,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      ...(providerCode === undefined ? {} : { providerCode }),
    },
  );
}

function abortedError(signal: AbortSignal): ModelClientError {
  return new ModelClientError("aborted", "model request aborted", {
    retryable: false,
    cause: signal.reason,
  });
}

/**
 * Sends one Responses API request (streaming) through the model-provider proxy and yields its
 * events as they arrive. Ends after `completed` or `failed`; throws a ModelClientError when
 * the request fails, the connection drops, or the stream ends without either. Breaking out of
 * the loop, or aborting the signal, closes the connection at once.
 */
export async function* streamResponse(
  options: StreamResponseOptions,
): AsyncGenerator<ModelStreamEvent, void, undefined> {
  const outer = options.signal;
  if (outer?.aborted) throw abortedError(outer);
  const controller = new AbortController();
  const onAbort = () => controller.abort(outer?.reason);
  outer?.addEventListener("abort", onAbort, { once: true });
  let idleTimedOut = false;
  let idleTimer: NodeJS.Timeout | undefined;
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const armIdleTimer = () => {
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => {
      idleTimedOut = true;
      controller.abort();
    }, idleTimeoutMs);
  };
  const failure = (error: unknown, during: string): ModelClientError => {
    if (error instanceof ModelClientError) return error;
    if (outer?.aborted) return abortedError(outer);
    if (idleTimedOut) {
      return new ModelClientError(
        "idle_timeout",
        `model stream sent nothing for ${idleTimeoutMs} ms`,
        { retryable: true, cause: error },
      );
    }
    const reason = error instanceof Error ? (error.cause ?? error) : error;
    const text = errorMessage(reason);
    return new ModelClientError("connection", `model connection failed ${during}: ${text}`, {
      retryable: true,
      cause: error,
    });
  };

  try {
    armIdleTimer();
    let response: Response;
    try {
      response = await (options.fetch ?? fetch)(
        `${options.baseUrl.replace(/\/+$/, "")}/responses`,
        {
          method: "POST",
          headers: {
            [WireHeader.authorization]: `Bearer ${options.token}`,
            [WireHeader.jobId]: options.jobId,
            "content-type": "application/json",
            accept: "text/event-stream",
          },
          body: requestBody(options),
          signal: controller.signal,
        },
      );
    } catch (error) {
      throw failure(error, "before a response");
    }
    if (!response.ok) throw await httpError(response, options.token);
    if (!response.body) {
      throw new ModelClientError("protocol", "model response has no body", { retryable: false });
    }
    const reader = response.body.getReader();
    const decoder = new SseParser();
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        throw failure(error, "while streaming");
      }
      armIdleTimer();
      const messages = chunk.done ? decoder.end() : decoder.push(chunk.value);
      for (const message of messages) {
        const event = parseResponsesEvent(message.data);
        if (!event) continue;
        yield event;
        if (event.type === "completed" || event.type === "failed") return;
        if (outer?.aborted) throw abortedError(outer);
      }
      if (chunk.done) break;
    }
    throw new ModelClientError(
      "stream_incomplete",
      "model stream ended before response.completed",
      { retryable: true },
    );
  } finally {
    clearTimeout(idleTimer);
    outer?.removeEventListener("abort", onAbort);
    // Closes the connection when the caller stopped early or the stream failed.
    controller.abort();
  }
}
