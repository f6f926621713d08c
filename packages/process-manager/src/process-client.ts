import { describeZodError } from "@deckhand/http-kit";
import {
  type ErrorCode,
  ErrorResponseSchema,
  type ListProcessesResponse,
  ListProcessesResponseSchema,
  type ProcessOutputResponse,
  ProcessOutputResponseSchema,
  type ProcessSignalName,
  type SignalProcessResponse,
  SignalProcessResponseSchema,
  type StartProcessRequest,
  type StartProcessResponse,
  StartProcessResponseSchema,
  WireHeader,
  WirePath,
} from "@deckhand/wire";
import type { z } from "zod";
import { fetchTransport, nodeTransport, type Transport } from "./client-transport.ts";
import { ProcessManagerError } from "./process-manager-error.ts";

/** What a client call failed with: the agent's status and error body, or status 0 when unreachable. */
export class ProcessClientError extends ProcessManagerError {
  static override readonly errorName: string = "ProcessClientError";
  readonly status: number;

  constructor(status: number, code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.status = status;
  }
}

export interface ProcessClientOptions {
  /** The workspace agent's address, e.g. `http://127.0.0.1:7421`; the process paths are added. */
  baseUrl: string;
  /** The agent's bearer token, when it has one. */
  token?: string | undefined;
  /** The chat every request acts for; without it the client sees every process. */
  chatId?: string | undefined;
  /** Chats whose processes this chat may also see (a sub-agent's parents). */
  ancestorChatIds?: readonly string[] | undefined;
  /**
   * A fetch to send the requests with, e.g. to observe or stub them. Without it the client uses
   * node:http(s) with keep-alive, which costs a fraction of what Node's fetch does per request.
   */
  fetch?: typeof fetch;
  /**
   * Longest a single blocking request may wait; longer waits are split into several requests.
   * Node's fetch gives up on a response whose headers take over 5 minutes, the server's own cap.
   */
  maxWaitMs?: number;
}

export interface OutputRequestOptions {
  /** Block until the process exits (or, with `cursor`, until there is new output). */
  wait?: boolean;
  /** A `next_cursor` from an earlier read: only what came after it. */
  cursor?: number;
  /** How long a wait may block; the agent caps it. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface ClientWaitOptions {
  /** Give up after this long and return the last answer (`running: true`, `timed_out: true`). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface StartRequestOptions {
  /**
   * Ends a waiting start early. The process keeps running, and its id is then known only to
   * `list`.
   */
  signal?: AbortSignal;
}

/** The answer to a start with `wait_ms`: the output comes with it. */
export type StartAndWaitResponse = StartProcessResponse & { output: ProcessOutputResponse };

const StartAndWaitResponseSchema = StartProcessResponseSchema.required({ output: true });

const DEFAULT_MAX_WAIT_MS = 4 * 60 * 1000;

interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  signal?: AbortSignal | undefined;
}

/** A typed client of the workspace agent's process API. */
export class ProcessClient {
  readonly #baseUrl: string;
  readonly #headers: Record<string, string>;
  readonly #transport: Transport;
  readonly #maxWaitMs: number;

  constructor(options: ProcessClientOptions) {
    this.#baseUrl = `${options.baseUrl.replace(/\/+$/, "")}${WirePath.processes}`;
    this.#transport = options.fetch === undefined ? nodeTransport : fetchTransport(options.fetch);
    this.#maxWaitMs = options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
    const headers: Record<string, string> = {};
    if (options.token !== undefined) headers[WireHeader.authorization] = `Bearer ${options.token}`;
    if (options.chatId !== undefined) headers[WireHeader.chatId] = options.chatId;
    if (options.ancestorChatIds !== undefined && options.ancestorChatIds.length > 0) {
      headers[WireHeader.ancestorChatIds] = JSON.stringify(options.ancestorChatIds);
    }
    this.#headers = headers;
  }

  /**
   * Starts a process. With `wait_ms` the agent first waits (up to `wait_ms`, its own cap and this
   * client's `maxWaitMs`) for the process to exit and answers its output too, in one round trip.
   */
  start(
    request: StartProcessRequest & { wait_ms: number },
    options?: StartRequestOptions,
  ): Promise<StartAndWaitResponse>;
  start(request: StartProcessRequest, options?: StartRequestOptions): Promise<StartProcessResponse>;
  start(
    request: StartProcessRequest,
    options: StartRequestOptions = {},
  ): Promise<StartProcessResponse> {
    if (request.wait_ms === undefined) {
      return this.#request("POST", "/start", StartProcessResponseSchema, {
        body: request,
        signal: options.signal,
      });
    }
    // A waiting start is answered only when the wait ends, so it is held to the same limit as
    // any other blocking request; the answer must then carry the output.
    return this.#request("POST", "/start", StartAndWaitResponseSchema, {
      body: { ...request, wait_ms: Math.min(request.wait_ms, this.#maxWaitMs) },
      signal: options.signal,
    });
  }

  /**
   * Runs a command to completion: starts it, waiting in the same request, and when it outlives
   * that request's wait keeps waiting as `waitForExit` does, until it exits or `timeoutMs` passes
   * (the answer then says `running: true, timed_out: true`; the process keeps running).
   */
  async run(
    request: Omit<StartProcessRequest, "wait_ms">,
    options: ClientWaitOptions = {},
  ): Promise<StartAndWaitResponse> {
    const deadline =
      options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
    const signal = options.signal === undefined ? {} : { signal: options.signal };
    const started = await this.start(
      { ...request, wait_ms: Math.min(options.timeoutMs ?? this.#maxWaitMs, this.#maxWaitMs) },
      signal,
    );
    if (!started.output.running || Date.now() >= deadline) return started;
    const remaining = Math.max(0, deadline - Date.now());
    const output = await this.waitForExit(started.id, {
      ...signal,
      ...(Number.isFinite(remaining) ? { timeoutMs: remaining } : {}),
    });
    return { ...started, output };
  }

  list(options: { limit?: number } = {}): Promise<ListProcessesResponse> {
    return this.#request("GET", "/list", ListProcessesResponseSchema, {
      query: { limit: options.limit },
    });
  }

  output(id: string, options: OutputRequestOptions = {}): Promise<ProcessOutputResponse> {
    const query: RequestOptions["query"] = { cursor: options.cursor };
    if (options.wait) {
      query.wait = "true";
      query.timeout_ms = Math.min(options.timeoutMs ?? this.#maxWaitMs, this.#maxWaitMs);
    }
    return this.#request("GET", `/${encodeURIComponent(id)}/output`, ProcessOutputResponseSchema, {
      query,
      signal: options.signal,
    });
  }

  signal(id: string, signal: ProcessSignalName): Promise<SignalProcessResponse> {
    return this.#request("POST", `/${encodeURIComponent(id)}/signal`, SignalProcessResponseSchema, {
      body: { signal },
    });
  }

  /** Waits (in as many blocking requests as it takes) until the process has exited. */
  async waitForExit(id: string, options: ClientWaitOptions = {}): Promise<ProcessOutputResponse> {
    const deadline =
      options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
    for (;;) {
      const remaining = Math.max(0, deadline - Date.now());
      const response = await this.output(id, {
        wait: true,
        timeoutMs: Math.min(remaining, this.#maxWaitMs),
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
      if (!response.running || Date.now() >= deadline) return response;
    }
  }

  async #request<Schema extends z.ZodType>(
    method: "GET" | "POST",
    path: string,
    schema: Schema,
    options: RequestOptions,
  ): Promise<z.output<Schema>> {
    const url = new URL(`${this.#baseUrl}${path}`);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers = { ...this.#headers };
    let body: string | undefined;
    if (options.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(options.body);
    }

    let response: { status: number; text: string };
    try {
      response = await this.#transport(url, { method, headers, body, signal: options.signal });
    } catch (error) {
      if (options.signal?.aborted) throw error;
      throw new ProcessClientError(
        0,
        "internal",
        `cannot reach the workspace agent at ${url.origin}: ${(error as Error).message}; check that it is running and the address is right`,
        { cause: error },
      );
    }
    const { text } = response;
    if (response.status < 200 || response.status > 299) throw errorFrom(response.status, text);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new ProcessClientError(
        response.status,
        "internal",
        `the workspace agent answered ${method} ${url.pathname} with something that is not JSON`,
        { cause: error },
      );
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      throw new ProcessClientError(
        response.status,
        "internal",
        `the workspace agent's answer to ${method} ${url.pathname} does not match the process API contract: ${describeZodError(parsed.error)}`,
        { cause: parsed.error },
      );
    }
    return parsed.data;
  }
}

function errorFrom(status: number, text: string): ProcessClientError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const parsed = ErrorResponseSchema.safeParse(body);
  if (parsed.success) {
    return new ProcessClientError(status, parsed.data.error.code, parsed.data.error.message);
  }
  const code: ErrorCode =
    status === 401 ? "unauthorized" : status === 404 ? "not_found" : "internal";
  return new ProcessClientError(
    status,
    code,
    `the workspace agent answered HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ""}`,
  );
}
