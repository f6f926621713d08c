// A scripted model provider for tests and benchmarks: OpenAI Responses, Chat Completions,
// Anthropic Messages and Gemini generateContent (streamed over SSE, or whole), on 127.0.0.1 with a random port, capturing every request.
// Only node built-ins, so a benchmark thread or another package's test can load it directly.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { FakeHttpErrorTurn, FakeTurn, FakeUsage } from "./fake-turn.ts";
import { anthropicMessagesStream, renderAnthropicTurn } from "./render-anthropic.ts";
import { chatCompletionsStream, renderChatCompletionsTurn } from "./render-chat-completions.ts";
import { geminiStream, renderGeminiResponse, renderGeminiTurn } from "./render-gemini.ts";
import { type RenderContext, renderResponsesTurn, responsesStream } from "./render-responses.ts";

/** The model APIs the fake speaks. */
export type FakeModelApi =
  | "responses"
  | "chat_completions"
  | "anthropic_messages"
  /** Gemini `POST /v1beta/models/<model>:generateContent`: one JSON answer. */
  | "gemini_generate_content"
  /** Gemini `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`. */
  | "gemini_stream_generate_content";

export interface CapturedRequest {
  method: string;
  /** Path and query, as received. */
  url: string;
  /** The path without the query. */
  path: string;
  /** Header names in lower case, as node gives them. */
  headers: IncomingMessage["headers"];
  /** The body as received. */
  body: string;
  /** The body parsed as JSON; undefined when it is empty or not JSON. */
  json: unknown;
  /** Which model API the path names, if any. */
  api: FakeModelApi | undefined;
}

export interface ScriptedResponse {
  status?: number;
  headers?: Record<string, string>;
  /** Written one after another; a delay between them makes the stream observable. */
  chunks: (string | Uint8Array)[];
  chunkDelayMs?: number;
  /** After the chunks: end normally, destroy the socket mid-stream, or keep it open. */
  ending?: "end" | "destroy" | "hang";
}

export type Responder = (request: CapturedRequest) => ScriptedResponse;

const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };
const JSON_HEADERS = { "content-type": "application/json" };

/** The model API a request path names; both `/v1/responses` and `/responses` count. */
export function modelApiOf(method: string, path: string): FakeModelApi | undefined {
  if (method !== "POST") return undefined;
  if (path.endsWith("/responses")) return "responses";
  if (path.endsWith("/chat/completions")) return "chat_completions";
  if (path.endsWith("/messages")) return "anthropic_messages";
  if (/\/models\/[^/:]+:generateContent$/.test(path)) return "gemini_generate_content";
  if (/\/models\/[^/:]+:streamGenerateContent$/.test(path)) {
    return "gemini_stream_generate_content";
  }
  return undefined;
}

/** Gemini names the model in the path (`/v1beta/models/<model>:<method>`), not the body. */
function geminiModelOf(path: string): string | undefined {
  return /\/models\/([^/:]+):/.exec(path)?.[1];
}

const DEFAULT_MODELS: Record<FakeModelApi, string> = {
  responses: "gpt-5-codex",
  chat_completions: "gpt-4o",
  anthropic_messages: "claude-sonnet-4-5",
  gemini_generate_content: "gemini-2.5-pro",
  gemini_stream_generate_content: "gemini-2.5-pro",
};

/** What the fake answers when nothing is scripted: one short stream per endpoint. */
export function defaultResponder(request: CapturedRequest): ScriptedResponse {
  const usage: FakeUsage = { input: 11, output: 7 };
  if (request.api === "responses") {
    return { headers: SSE_HEADERS, chunks: responsesStream("hello from responses", usage) };
  }
  if (request.api === "chat_completions") {
    return { headers: SSE_HEADERS, chunks: chatCompletionsStream("hello from chat", usage) };
  }
  if (request.api === "anthropic_messages") {
    return { headers: SSE_HEADERS, chunks: anthropicMessagesStream("hello from claude", usage) };
  }
  if (request.api === "gemini_stream_generate_content") {
    return { headers: SSE_HEADERS, chunks: geminiStream("hello from gemini", usage) };
  }
  if (request.api === "gemini_generate_content") {
    const turn = { kind: "stream" as const, items: [{ type: "text" as const, text: "hello" }] };
    return {
      headers: JSON_HEADERS,
      chunks: [renderGeminiResponse({ ...turn, usage }, { model: "gemini-2.5-pro", sequence: 1 })],
    };
  }
  if (request.method === "GET" && request.path.endsWith("/models")) {
    return {
      headers: JSON_HEADERS,
      chunks: [JSON.stringify({ object: "list", data: [{ id: "gpt-5-codex", object: "model" }] })],
    };
  }
  return errorResponse(request.api, 404, `no fake route for ${request.method} ${request.path}`);
}

function errorResponse(
  api: FakeModelApi | undefined,
  status: number,
  message: string,
  code?: string,
  headers: Record<string, string> = {},
): ScriptedResponse {
  const body =
    api === "anthropic_messages"
      ? { type: "error", error: { type: code ?? anthropicErrorType(status), message } }
      : api === "gemini_generate_content" || api === "gemini_stream_generate_content"
        ? { error: { code: status, message, status: code ?? googleErrorStatus(status) } }
        : { error: { message, type: openAiErrorType(status), param: null, code: code ?? null } };
  return { status, headers: { ...JSON_HEADERS, ...headers }, chunks: [JSON.stringify(body)] };
}

function openAiErrorType(status: number): string {
  if (status === 429) return "rate_limit_exceeded";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

/** The `status` of a Google API error (google.rpc.Code names). */
function googleErrorStatus(status: number): string {
  if (status === 429) return "RESOURCE_EXHAUSTED";
  if (status === 401) return "UNAUTHENTICATED";
  if (status === 403) return "PERMISSION_DENIED";
  if (status === 404) return "NOT_FOUND";
  if (status >= 500) return "INTERNAL";
  return "INVALID_ARGUMENT";
}

function anthropicErrorType(status: number): string {
  if (status === 429) return "rate_limit_error";
  if (status === 529) return "overloaded_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

function httpErrorResponse(api: FakeModelApi | undefined, failure: FakeHttpErrorTurn) {
  const headers: Record<string, string> = { ...failure.headers };
  if (failure.retryAfter !== undefined) headers["retry-after"] = String(failure.retryAfter);
  return errorResponse(
    api,
    failure.status,
    failure.message ?? `fake model error ${failure.status}`,
    failure.code,
    headers,
  );
}

/** Renders a scripted turn for the API the request named. */
export function renderTurn(api: FakeModelApi, turn: FakeTurn, context: RenderContext) {
  if (turn.kind === "http_error") return httpErrorResponse(api, turn);
  if (api === "gemini_generate_content") {
    return { headers: JSON_HEADERS, chunks: [renderGeminiResponse(turn, context)] };
  }
  const render =
    api === "responses"
      ? renderResponsesTurn
      : api === "chat_completions"
        ? renderChatCompletionsTurn
        : api === "gemini_stream_generate_content"
          ? renderGeminiTurn
          : renderAnthropicTurn;
  const ending = turn.ending?.type ?? "complete";
  const response: ScriptedResponse = {
    headers: SSE_HEADERS,
    chunks: render(turn, context),
    ending: ending === "drop" ? "destroy" : ending === "hang" ? "hang" : "end",
  };
  if (turn.chunkDelayMs !== undefined) response.chunkDelayMs = turn.chunkDelayMs;
  return response;
}

export interface FakeModel {
  /** `http://127.0.0.1:<port>`; clients add `/v1/responses` (or just `/responses`) and so on. */
  url: string;
  /** Every request received, in order; the array is kept across `reset()`. */
  requests: CapturedRequest[];
  /**
   * Replaces the queue of turns. Each model request (`/responses`, `/chat/completions`,
   * `/messages`, Gemini's `:generateContent` and `:streamGenerateContent`) takes the next turn; once a script ran out, model requests get a 500 saying
   * so, rather than a default answer that would hide a test's wrong count.
   */
  script(turns: FakeTurn[]): void;
  /** Turns not yet consumed. */
  remainingTurns(): number;
  /** Scripts raw answers to come (after any queued turns); `undefined` goes back to defaults. */
  respondWith(responder: Responder | undefined): void;
  /** Resolves when a request's connection closed before its answer ended (the client aborted). */
  nextEarlyClose(): Promise<CapturedRequest>;
  /** Resolves once `count` requests in all have been received. */
  waitForRequests(count: number): Promise<CapturedRequest[]>;
  /**
   * Holds every answer from now on until the returned function is called, so a test can have
   * several clients waiting on the model at once.
   */
  hold(): () => void;
  /** Forgets the script, the responder and the captured requests. */
  reset(): void;
  /** Stops the server and destroys open connections, hung streams included. */
  close(): Promise<void>;
}

/** The name the model-proxy tests knew it by. */
export type FakeUpstream = FakeModel;

const delay = (ms: number) => new Promise((resolveDelay) => setTimeout(resolveDelay, ms));

function parseJson(text: string): unknown {
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function requestedModel(json: unknown): string | undefined {
  if (json && typeof json === "object" && "model" in json && typeof json.model === "string") {
    return json.model;
  }
  return undefined;
}

export async function startFakeModel(): Promise<FakeModel> {
  const requests: CapturedRequest[] = [];
  let responder: Responder | undefined;
  let queue: FakeTurn[] = [];
  let scripted = false;
  let sequence = 0;
  const earlyCloseWaiters: ((request: CapturedRequest) => void)[] = [];
  const earlyCloses: CapturedRequest[] = [];
  const requestWaiters: { count: number; resolve: (requests: CapturedRequest[]) => void }[] = [];

  const choose = (captured: CapturedRequest): ScriptedResponse => {
    sequence += 1;
    if (captured.api && queue.length > 0) {
      const next = queue.shift()!;
      const model =
        requestedModel(captured.json) ??
        geminiModelOf(captured.path) ??
        DEFAULT_MODELS[captured.api];
      try {
        return renderTurn(captured.api, next, { model, sequence });
      } catch (error) {
        return errorResponse(captured.api, 500, `fake model: ${(error as Error).message}`);
      }
    }
    if (responder) return responder(captured);
    if (captured.api && scripted) {
      return errorResponse(
        captured.api,
        500,
        `fake model: script exhausted at request ${requests.length} (${captured.method} ${captured.path})`,
      );
    }
    return defaultResponder(captured);
  };

  let gate: Promise<void> | undefined;
  const answer = async (captured: CapturedRequest, response: ServerResponse) => {
    if (gate !== undefined) await gate;
    const script = choose(captured);
    let finished = false;
    response.on("close", () => {
      if (finished || script.ending === "destroy") return;
      const waiter = earlyCloseWaiters.shift();
      if (waiter) waiter(captured);
      else earlyCloses.push(captured);
    });
    response.writeHead(script.status ?? 200, script.headers ?? SSE_HEADERS);
    response.flushHeaders();
    for (const chunk of script.chunks) {
      if (response.destroyed) return;
      if (!response.write(chunk))
        await new Promise((resolveDrain) => response.once("drain", resolveDrain));
      if (script.chunkDelayMs) await delay(script.chunkDelayMs);
    }
    if (script.ending === "destroy") {
      // Destroying at once would discard what is still buffered; the client is to see the
      // events, then the drop.
      await new Promise<void>((resolveFlush) => response.write("", () => resolveFlush()));
      response.socket?.destroy();
      return;
    }
    if (script.ending === "hang") return;
    finished = true;
    response.end();
  };

  const server: Server = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on("data", (part: Buffer) => parts.push(part));
    request.on("end", () => {
      const method = request.method ?? "GET";
      const url = request.url ?? "/";
      const path = new URL(url, "http://fake").pathname;
      const body = Buffer.concat(parts).toString("utf8");
      const captured: CapturedRequest = {
        method,
        url,
        path,
        headers: request.headers,
        body,
        json: parseJson(body),
        api: modelApiOf(method, path),
      };
      requests.push(captured);
      for (const waiter of requestWaiters.filter((entry) => entry.count <= requests.length)) {
        requestWaiters.splice(requestWaiters.indexOf(waiter), 1);
        waiter.resolve(requests.slice());
      }
      void answer(captured, response);
    });
  });
  await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script(turns) {
      queue = [...turns];
      scripted = true;
    },
    remainingTurns: () => queue.length,
    respondWith(next) {
      responder = next;
    },
    nextEarlyClose() {
      const already = earlyCloses.shift();
      if (already) return Promise.resolve(already);
      return new Promise((resolveClose) => earlyCloseWaiters.push(resolveClose));
    },
    waitForRequests(count) {
      if (requests.length >= count) return Promise.resolve(requests.slice());
      return new Promise((resolve) => requestWaiters.push({ count, resolve }));
    },
    hold() {
      let open = () => {};
      const held = new Promise<void>((resolveGate) => {
        open = resolveGate;
      });
      gate = held;
      return () => {
        if (gate === held) gate = undefined;
        open();
      };
    },
    reset() {
      gate = undefined;
      queue = [];
      scripted = false;
      responder = undefined;
      requests.length = 0;
      earlyCloses.length = 0;
    },
    close() {
      return new Promise((resolveClose) => {
        server.close(() => resolveClose());
        server.closeAllConnections();
      });
    },
  };
}

/** The name the model-proxy tests and benchmark knew it by. */
export const startFakeUpstream = startFakeModel;
