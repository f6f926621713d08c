// A scripted model provider for tests and benchmarks: OpenAI Responses, Chat Completions and
// Anthropic Messages over SSE, on 127.0.0.1 with a random port, capturing every request.
// It is to move into @deckhand/testkit; nothing here is part of the package's public API.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface CapturedRequest {
  method: string;
  /** Path and query, as received. */
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
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

export interface FakeUsage {
  input: number;
  output: number;
}

/** Formats one SSE event. */
export function sseEvent(data: unknown, event?: string): string {
  const text = typeof data === "string" ? data : JSON.stringify(data);
  return `${event ? `event: ${event}\n` : ""}data: ${text}\n\n`;
}

/** A minimal Responses stream: a text delta per word, then `response.completed` with usage. */
export function responsesStream(text: string, usage: FakeUsage, model = "gpt-5-codex"): string[] {
  const created = { id: "resp_1", model, status: "in_progress", usage: null };
  return [
    sseEvent({ type: "response.created", response: created }, "response.created"),
    ...text
      .split(" ")
      .map((word, index) =>
        sseEvent(
          { type: "response.output_text.delta", delta: index === 0 ? word : ` ${word}` },
          "response.output_text.delta",
        ),
      ),
    sseEvent(
      {
        type: "response.completed",
        response: {
          ...created,
          status: "completed",
          usage: {
            input_tokens: usage.input,
            output_tokens: usage.output,
            total_tokens: usage.input + usage.output,
          },
        },
      },
      "response.completed",
    ),
  ];
}

/** A Chat Completions stream whose final chunk carries usage (`stream_options.include_usage`). */
export function chatCompletionsStream(text: string, usage: FakeUsage, model = "gpt-4o"): string[] {
  const chunk = (delta: object, finish: string | null) => ({
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  return [
    ...text
      .split(" ")
      .map((word, index) => sseEvent(chunk({ content: index === 0 ? word : ` ${word}` }, null))),
    sseEvent(chunk({}, "stop")),
    sseEvent({
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      model,
      choices: [],
      usage: {
        prompt_tokens: usage.input,
        completion_tokens: usage.output,
        total_tokens: usage.input + usage.output,
      },
    }),
    sseEvent("[DONE]"),
  ];
}

/** An Anthropic Messages stream: usage in `message_start`, cumulative output in `message_delta`. */
export function anthropicMessagesStream(
  text: string,
  usage: FakeUsage,
  model = "claude-sonnet-4-5",
): string[] {
  return [
    sseEvent(
      {
        type: "message_start",
        message: {
          id: "msg_1",
          type: "message",
          role: "assistant",
          model,
          content: [],
          usage: { input_tokens: usage.input, output_tokens: 1 },
        },
      },
      "message_start",
    ),
    sseEvent(
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      "content_block_start",
    ),
    ...text.split(" ").map((word, index) =>
      sseEvent(
        {
          type: "content_block_delta",
          index: 0,
          delta: { type: "text_delta", text: index === 0 ? word : ` ${word}` },
        },
        "content_block_delta",
      ),
    ),
    sseEvent({ type: "content_block_stop", index: 0 }, "content_block_stop"),
    sseEvent(
      {
        type: "message_delta",
        delta: { stop_reason: "end_turn" },
        usage: { output_tokens: usage.output },
      },
      "message_delta",
    ),
    sseEvent({ type: "message_stop" }, "message_stop"),
  ];
}

const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };

/** What the fake answers when no responder is scripted: a stream for each endpoint. */
export function defaultResponder(request: CapturedRequest): ScriptedResponse {
  const path = new URL(request.url, "http://fake").pathname;
  const usage = { input: 11, output: 7 };
  if (request.method === "POST" && path.endsWith("/responses")) {
    return { headers: SSE_HEADERS, chunks: responsesStream("hello from responses", usage) };
  }
  if (request.method === "POST" && path.endsWith("/chat/completions")) {
    return { headers: SSE_HEADERS, chunks: chatCompletionsStream("hello from chat", usage) };
  }
  if (request.method === "POST" && path.endsWith("/messages")) {
    return { headers: SSE_HEADERS, chunks: anthropicMessagesStream("hello from claude", usage) };
  }
  if (request.method === "GET" && path.endsWith("/models")) {
    return {
      headers: { "content-type": "application/json" },
      chunks: [JSON.stringify({ object: "list", data: [{ id: "gpt-5-codex", object: "model" }] })],
    };
  }
  return {
    status: 404,
    headers: { "content-type": "application/json" },
    chunks: [JSON.stringify({ error: { message: `no fake route for ${request.method} ${path}` } })],
  };
}

export interface FakeUpstream {
  url: string;
  requests: CapturedRequest[];
  /** Scripts the answers to come; `undefined` goes back to the default streams. */
  respondWith(responder: Responder | undefined): void;
  /** Resolves when a request's connection closed before its answer ended (the proxy aborted). */
  nextEarlyClose(): Promise<CapturedRequest>;
  close(): Promise<void>;
}

const delay = (ms: number) => new Promise((resolveDelay) => setTimeout(resolveDelay, ms));

export async function startFakeUpstream(): Promise<FakeUpstream> {
  const requests: CapturedRequest[] = [];
  let responder: Responder | undefined;
  const earlyCloseWaiters: ((request: CapturedRequest) => void)[] = [];
  const earlyCloses: CapturedRequest[] = [];

  const answer = async (captured: CapturedRequest, response: ServerResponse) => {
    const script = (responder ?? defaultResponder)(captured);
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
      const captured: CapturedRequest = {
        method: request.method ?? "GET",
        url: request.url ?? "/",
        headers: request.headers,
        body: Buffer.concat(parts).toString("utf8"),
      };
      requests.push(captured);
      void answer(captured, response);
    });
  });
  await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    respondWith(next) {
      responder = next;
    },
    nextEarlyClose() {
      const already = earlyCloses.shift();
      if (already) return Promise.resolve(already);
      return new Promise((resolveClose) => earlyCloseWaiters.push(resolveClose));
    },
    close() {
      return new Promise((resolveClose) => {
        server.close(() => resolveClose());
        server.closeAllConnections();
      });
    },
  };
}
