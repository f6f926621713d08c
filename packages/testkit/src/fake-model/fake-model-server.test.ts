import { WireHeader } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import { type FakeModel, startFakeModel } from "./fake-model-server.ts";
import { item, turn } from "./fake-turn.ts";

// The readers below do what the official OpenAI and Anthropic SDKs do with a stream: build a
// snapshot from the deltas, keyed by the indexes the events carry, and refuse events that point
// at something that was never announced. The fake is right when the snapshot they build equals
// what the final event (or the done events) say.

// biome-ignore lint/suspicious/noExplicitAny: the readers walk untyped JSON, as the SDKs do.
type Json = Record<string, any>;

function readSse(text: string): { event: string; data: string }[] {
  return text
    .split("\n\n")
    .filter((block) => block.trim().length > 0)
    .map((block) => {
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      return { event, data: data.join("\n") };
    });
}

function readResponses(text: string) {
  let snapshot: Json | undefined;
  let final: Json | undefined;
  let expectedSequence = 0;
  const doneItems: Json[] = [];
  for (const { event, data } of readSse(text)) {
    const payload = JSON.parse(data) as Json;
    expect(payload.type).toBe(event);
    expect(payload.sequence_number).toBe(expectedSequence++);
    const output = (index: number) => {
      const found = snapshot?.output[index];
      if (!found) throw new Error(`${event}: no output item at ${index}`);
      return found as Json;
    };
    switch (payload.type) {
      case "response.created":
        snapshot = structuredClone(payload.response);
        break;
      case "response.output_item.added":
        expect(payload.output_index).toBe(snapshot!.output.length);
        snapshot!.output.push(structuredClone(payload.item));
        break;
      case "response.content_part.added":
        expect(output(payload.output_index).type).toBe("message");
        output(payload.output_index).content.push(structuredClone(payload.part));
        break;
      case "response.output_text.delta": {
        const part = output(payload.output_index).content[payload.content_index];
        expect(part.type).toBe("output_text");
        part.text += payload.delta;
        break;
      }
      case "response.reasoning_summary_part.added":
        output(payload.output_index).summary.push(structuredClone(payload.part));
        break;
      case "response.reasoning_summary_text.delta":
        output(payload.output_index).summary[payload.summary_index].text += payload.delta;
        break;
      case "response.function_call_arguments.delta":
        expect(output(payload.output_index).type).toBe("function_call");
        output(payload.output_index).arguments += payload.delta;
        break;
      case "response.custom_tool_call_input.delta":
        expect(output(payload.output_index).type).toBe("custom_tool_call");
        output(payload.output_index).input += payload.delta;
        break;
      case "response.output_item.done": {
        const built = output(payload.output_index);
        expect(payload.item.id).toBe(built.id);
        const { status: _built, encrypted_content: _a, ...builtRest } = built;
        const { status: _done, encrypted_content: _b, ...doneRest } = payload.item;
        expect(doneRest).toEqual(builtRest);
        snapshot!.output[payload.output_index] = structuredClone(payload.item);
        doneItems.push(payload.item);
        break;
      }
      case "response.completed":
      case "response.failed":
        final = payload.response;
        expect(final!.output).toEqual(snapshot!.output);
        break;
    }
  }
  return { final, doneItems };
}

function readChatCompletions(text: string) {
  const events = readSse(text);
  expect(events.at(-1)?.data).toBe("[DONE]");
  let content = "";
  let reasoning = "";
  let finishReason: string | undefined;
  let usage: Json | undefined;
  const toolCalls: Json[] = [];
  for (const { data } of events.slice(0, -1)) {
    const chunk = JSON.parse(data) as Json;
    expect(chunk.object).toBe("chat.completion.chunk");
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      if (choice.delta.content) content += choice.delta.content;
      if (choice.delta.reasoning_content) reasoning += choice.delta.reasoning_content;
      for (const call of choice.delta.tool_calls ?? []) {
        const existing = toolCalls[call.index];
        if (!existing) {
          // The SDK needs the id, the type and the name on a call's first chunk.
          expect(call.id).toEqual(expect.any(String));
          toolCalls[call.index] = structuredClone(call);
        } else if (call.function?.arguments) {
          existing.function.arguments += call.function.arguments;
        }
      }
      if (choice.finish_reason) finishReason = choice.finish_reason;
    }
  }
  return { content, reasoning, toolCalls, finishReason, usage };
}

function readAnthropic(text: string) {
  let message: Json | undefined;
  const partialJson: string[] = [];
  for (const { event, data } of readSse(text)) {
    const payload = JSON.parse(data) as Json;
    expect(payload.type).toBe(event);
    switch (payload.type) {
      case "message_start":
        message = structuredClone(payload.message);
        break;
      case "content_block_start":
        expect(payload.index).toBe(message!.content.length);
        message!.content.push(structuredClone(payload.content_block));
        partialJson[payload.index] = "";
        break;
      case "content_block_delta": {
        const block = message!.content[payload.index];
        const delta = payload.delta;
        if (delta.type === "text_delta") {
          expect(block.type).toBe("text");
          block.text += delta.text;
        } else if (delta.type === "thinking_delta") {
          expect(block.type).toBe("thinking");
          block.thinking += delta.thinking;
        } else if (delta.type === "signature_delta") {
          block.signature = delta.signature;
        } else if (delta.type === "input_json_delta") {
          expect(block.type).toBe("tool_use");
          partialJson[payload.index] += delta.partial_json;
        }
        break;
      }
      case "content_block_stop": {
        const block = message!.content[payload.index];
        if (block.type === "tool_use") block.input = JSON.parse(partialJson[payload.index]!);
        break;
      }
      case "message_delta":
        message!.stop_reason = payload.delta.stop_reason;
        message!.usage.output_tokens = payload.usage.output_tokens;
        break;
    }
  }
  return message!;
}

let fake: FakeModel;
afterEach(async () => {
  await fake?.close();
});

const post = (path: string, body: object, headers: Record<string, string> = {}) =>
  fetch(`${fake.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

describe("fake model: OpenAI Responses", () => {
  it("streams reasoning, text, a function call and a custom tool call a client can rebuild", async () => {
    fake = await startFakeModel();
    fake.script([
      turn.of(
        [
          item.reasoning("Look at the files first."),
          item.text("I will list them."),
          item.functionCall("execute", { command: "ls -la" }, "call_a"),
          item.customToolCall("apply_patch", "*** Begin Patch\n*** End Patch\n", "call_b"),
        ],
        { usage: { input: 120, output: 30, cachedInput: 100, reasoning: 8 } },
      ),
    ]);
    const response = await post("/v1/responses", { model: "gpt-5", stream: true, input: "hi" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const { final, doneItems } = readResponses(await response.text());

    expect(final).toMatchObject({ status: "completed", model: "gpt-5" });
    expect(final!.usage).toEqual({
      input_tokens: 120,
      input_tokens_details: { cached_tokens: 100 },
      output_tokens: 30,
      output_tokens_details: { reasoning_tokens: 8 },
      total_tokens: 150,
    });
    expect(doneItems.map((done) => done.type)).toEqual([
      "reasoning",
      "message",
      "function_call",
      "custom_tool_call",
    ]);
    expect(doneItems[0]!.summary).toEqual([
      { type: "summary_text", text: "Look at the files first." },
    ]);
    expect(doneItems[1]!.content[0].text).toBe("I will list them.");
    expect(doneItems[2]).toMatchObject({
      call_id: "call_a",
      name: "execute",
      arguments: JSON.stringify({ command: "ls -la" }),
    });
    expect(JSON.parse(doneItems[2]!.arguments)).toEqual({ command: "ls -la" });
    expect(doneItems[3]).toMatchObject({
      call_id: "call_b",
      name: "apply_patch",
      input: "*** Begin Patch\n*** End Patch\n",
    });
    expect(fake.remainingTurns()).toBe(0);
  });

  it("takes one turn per request, on /v1/responses and /responses alike, and captures each request", async () => {
    fake = await startFakeModel();
    fake.script([turn.text("one"), turn.functionCall("execute", { command: "pwd" })]);
    const first = await post(
      "/v1/responses?x=1",
      { model: "m", input: [{ role: "user", content: "a" }] },
      { [WireHeader.authorization]: "Bearer t-1" },
    );
    expect(readResponses(await first.text()).doneItems[0]!.content[0].text).toBe("one");
    const second = await post("/responses", { model: "m", input: "b" });
    const call = readResponses(await second.text()).doneItems[0]!;
    expect(call).toMatchObject({ type: "function_call", name: "execute" });
    // Call ids are generated when the script names none, distinct per request.
    expect(call.call_id).toMatch(/^call_/);

    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[0]).toMatchObject({
      method: "POST",
      url: "/v1/responses?x=1",
      path: "/v1/responses",
      api: "responses",
      json: { model: "m", input: [{ role: "user", content: "a" }] },
    });
    expect(fake.requests[0]!.headers[WireHeader.authorization.toLowerCase()]).toBe("Bearer t-1");
    expect(fake.requests[1]!.path).toBe("/responses");

    const exhausted = await post("/v1/responses", { model: "m" });
    expect(exhausted.status).toBe(500);
    expect(await exhausted.text()).toContain("script exhausted");
  });

  it("fails as scripted: HTTP errors with retry-after, response.failed, a dropped connection", async () => {
    fake = await startFakeModel();
    fake.script([
      turn.fail({ status: 429, retryAfter: 2, code: "rate_limit_exceeded" }),
      turn.fail({ status: 500 }),
      turn.failed({ code: "server_error", message: "boom" }, [item.text("partial")]),
      turn.drop([item.text("cut short")]),
    ]);
    const limited = await post("/v1/responses", {});
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("2");
    expect(await limited.json()).toMatchObject({ error: { code: "rate_limit_exceeded" } });

    const broken = await post("/v1/responses", {});
    expect(broken.status).toBe(500);
    expect(await broken.json()).toMatchObject({ error: { type: "server_error" } });

    const failed = readResponses(await (await post("/v1/responses", {})).text());
    expect(failed.final).toMatchObject({
      status: "failed",
      error: { code: "server_error", message: "boom" },
    });

    const dropped = await post("/v1/responses", {});
    expect(dropped.status).toBe(200);
    await expect(dropped.text()).rejects.toThrow();
  });

  it("keeps a hung stream open until close(), and reports a client that gave up", async () => {
    fake = await startFakeModel();
    fake.script([turn.hang([item.text("waiting")]), turn.hang()]);
    const controller = new AbortController();
    const hung = await fetch(`${fake.url}/v1/responses`, {
      method: "POST",
      body: "{}",
      signal: controller.signal,
    });
    const reader = hung.body!.getReader();
    await reader.read();
    controller.abort();
    const closed = await fake.nextEarlyClose();
    expect(closed.path).toBe("/v1/responses");

    const second = await post("/v1/responses", {});
    const reading = second.text();
    await fake.close();
    await expect(reading).rejects.toThrow();
  });
});

describe("fake model: Chat Completions", () => {
  it("streams text, reasoning_content and tool calls keyed by index, then usage and [DONE]", async () => {
    fake = await startFakeModel();
    fake.script([
      turn.of(
        [
          item.reasoning("thinking"),
          item.text("Running two commands."),
          item.functionCall("execute", { command: "ls" }, "call_1"),
          item.functionCall("execute", { command: "pwd" }, "call_2"),
        ],
        { usage: { input: 9, output: 4 } },
      ),
    ]);
    const response = await post("/v1/chat/completions", { model: "gpt-4o", stream: true });
    const read = readChatCompletions(await response.text());
    expect(read.content).toBe("Running two commands.");
    expect(read.reasoning).toBe("thinking");
    expect(read.finishReason).toBe("tool_calls");
    expect(read.toolCalls.map((call) => [call.id, call.function.name])).toEqual([
      ["call_1", "execute"],
      ["call_2", "execute"],
    ]);
    expect(JSON.parse(read.toolCalls[1]!.function.arguments)).toEqual({ command: "pwd" });
    expect(read.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 });
  });

  it("ends a plain answer with finish_reason stop", async () => {
    fake = await startFakeModel();
    fake.script([turn.text("hello there")]);
    const read = readChatCompletions(await (await post("/v1/chat/completions", {})).text());
    expect(read).toMatchObject({ content: "hello there", finishReason: "stop", toolCalls: [] });
  });
});

describe("fake model: Anthropic Messages", () => {
  it("streams thinking, text and tool_use blocks with usage split across start and delta", async () => {
    fake = await startFakeModel();
    fake.script([
      turn.of(
        [
          item.reasoning("hmm"),
          item.text("Let me look."),
          item.functionCall("read_file", { path: "a.txt" }, "toolu_1"),
        ],
        { usage: { input: 50, output: 12 } },
      ),
    ]);
    const response = await post("/v1/messages", { model: "claude-x", stream: true });
    const message = readAnthropic(await response.text());
    expect(message).toMatchObject({
      model: "claude-x",
      stop_reason: "tool_use",
      usage: { input_tokens: 50, output_tokens: 12 },
    });
    expect(message.content).toEqual([
      { type: "thinking", thinking: "hmm", signature: expect.any(String) },
      { type: "text", text: "Let me look." },
      { type: "tool_use", id: "toolu_1", name: "read_file", input: { path: "a.txt" } },
    ]);
  });

  it("answers a custom tool call, which Anthropic cannot express, with a 500 that says so", async () => {
    fake = await startFakeModel();
    fake.script([turn.customToolCall("apply_patch", "x"), turn.fail({ status: 529 })]);
    const refused = await post("/v1/messages", {});
    expect(refused.status).toBe(500);
    expect(await refused.text()).toContain("no Anthropic Messages form");
    const overloaded = await post("/v1/messages", {});
    expect(await overloaded.json()).toMatchObject({
      type: "error",
      error: { type: "overloaded_error" },
    });
  });
});

describe("fake model: defaults", () => {
  it("answers each API with a short stream when nothing is scripted", async () => {
    fake = await startFakeModel();
    const responses = readResponses(await (await post("/v1/responses", {})).text());
    expect(responses.final!.usage.total_tokens).toBe(18);
    const chat = readChatCompletions(await (await post("/v1/chat/completions", {})).text());
    expect(chat.content).toBe("hello from chat");
    const claude = readAnthropic(await (await post("/v1/messages", {})).text());
    expect(claude.content).toEqual([{ type: "text", text: "hello from claude" }]);
    const models = await fetch(`${fake.url}/v1/models`);
    expect(((await models.json()) as Json).data[0].id).toBe("gpt-5-codex");
    expect(await fake.waitForRequests(4)).toHaveLength(4);
  });
});
