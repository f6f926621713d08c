import { describe, expect, it } from "vitest";
import { parseAgentTranscript } from "./agent-transcript.ts";

describe("parseAgentTranscript", () => {
  it("reads codex's messages, commands, file changes and usage, skipping lines that are not JSON", () => {
    const stdout = [
      "installing codex 0.169.0…",
      JSON.stringify({ type: "thread.started", thread_id: "t" }),
      JSON.stringify({
        type: "item.completed",
        item: {
          type: "command_execution",
          command: "npm test",
          exit_code: 0,
          aggregated_output: "ok",
        },
      }),
      JSON.stringify({
        type: "item.completed",
        item: { type: "file_change", changes: [{ path: "README.md", kind: "update" }] },
      }),
      JSON.stringify({ type: "item.completed", item: { type: "agent_message", text: "Done." } }),
      JSON.stringify({
        type: "turn.completed",
        usage: { input_tokens: 120, cached_input_tokens: 20, output_tokens: 30 },
      }),
    ].join("\n");
    expect(parseAgentTranscript("codex", stdout)).toEqual({
      type: "codex",
      entries: [
        { kind: "tool_call", text: "npm test", detail: "exit 0\nok" },
        { kind: "tool_call", text: "update README.md", detail: null },
        { kind: "message", text: "Done.", detail: null },
      ],
      usage: { input_tokens: 120, cached_input_tokens: 20, output_tokens: 30 },
    });
  });

  it("reads claude-code's stream-json content blocks and its result's usage", () => {
    const stdout = [
      JSON.stringify({
        type: "assistant",
        message: {
          content: [
            { type: "text", text: "Editing." },
            { type: "tool_use", name: "Edit", input: { file_path: "a.ts" } },
          ],
        },
      }),
      JSON.stringify({
        type: "user",
        message: { content: [{ type: "tool_result", content: "ok" }] },
      }),
      JSON.stringify({
        type: "result",
        usage: { input_tokens: 5, cache_read_input_tokens: 2, output_tokens: 7 },
      }),
    ].join("\n");
    const transcript = parseAgentTranscript("claude-code", stdout);
    expect(transcript.entries.map((entry) => entry.kind)).toEqual([
      "message",
      "tool_call",
      "tool_result",
    ]);
    expect(transcript.entries[1]).toEqual({
      kind: "tool_call",
      text: "Edit",
      detail: '{"file_path":"a.ts"}',
    });
    expect(transcript.usage).toEqual({ input_tokens: 5, cached_input_tokens: 2, output_tokens: 7 });
  });

  it("reports an agent's failure as an error entry and no usage when none was reported", () => {
    const transcript = parseAgentTranscript(
      "codex",
      JSON.stringify({ type: "turn.failed", error: { message: "model unavailable" } }),
    );
    expect(transcript).toEqual({
      type: "codex",
      entries: [{ kind: "error", text: "model unavailable", detail: null }],
      usage: null,
    });
  });

  it("keeps a codex command that was started but never reported completed, in its latest state", () => {
    const stdout = [
      JSON.stringify({
        type: "item.started",
        item: {
          id: "item_0",
          type: "command_execution",
          command: "npm test",
          aggregated_output: "",
          status: "in_progress",
        },
      }),
      JSON.stringify({
        type: "item.updated",
        item: {
          id: "item_0",
          type: "command_execution",
          command: "npm test",
          aggregated_output: "1 passing",
          status: "in_progress",
        },
      }),
      JSON.stringify({
        type: "item.started",
        item: {
          id: "item_1",
          type: "command_execution",
          command: "git status",
          aggregated_output: "",
          status: "in_progress",
        },
      }),
      JSON.stringify({
        type: "item.completed",
        item: {
          id: "item_1",
          type: "command_execution",
          command: "git status",
          aggregated_output: "clean",
          exit_code: 0,
          status: "completed",
        },
      }),
      JSON.stringify({
        type: "item.completed",
        item: { id: "item_2", type: "agent_message", text: "Done." },
      }),
    ].join("\n");
    expect(parseAgentTranscript("codex", stdout).entries).toEqual([
      { kind: "tool_call", text: "npm test", detail: "running\n1 passing" },
      { kind: "tool_call", text: "git status", detail: "exit 0\nclean" },
      { kind: "message", text: "Done.", detail: null },
    ]);
  });

  it("reads opencode's run --format=json events: text, reasoning, tools, errors and step tokens", () => {
    const event = (type: string, fields: object) =>
      JSON.stringify({ type, timestamp: 1_760_000_000_000, sessionID: "ses_1", ...fields });
    const stdout = [
      event("step_start", { part: { type: "step-start" } }),
      event("reasoning", { part: { type: "reasoning", text: "Look first." } }),
      event("tool_use", {
        part: {
          type: "tool",
          callID: "call_1",
          tool: "bash",
          state: {
            status: "completed",
            input: { command: "ls" },
            output: "README.md",
            title: "ls",
          },
        },
      }),
      event("tool_use", {
        part: {
          type: "tool",
          callID: "call_2",
          tool: "edit",
          state: { status: "error", input: { filePath: "a.ts" }, error: "no such file" },
        },
      }),
      event("text", { part: { type: "text", text: "Done." } }),
      event("step_finish", {
        part: {
          type: "step-finish",
          reason: "stop",
          tokens: { input: 120, output: 30, reasoning: 4, cache: { read: 20, write: 0 } },
        },
      }),
      event("step_finish", {
        part: { type: "step-finish", tokens: { input: 5, output: 1, cache: { read: 0 } } },
      }),
      event("error", { error: { name: "APIError", data: { message: "rate limited" } } }),
    ].join("\n");
    expect(parseAgentTranscript("opencode", stdout)).toEqual({
      type: "opencode",
      entries: [
        { kind: "reasoning", text: "Look first.", detail: null },
        { kind: "tool_call", text: "bash ls", detail: '{"command":"ls"}\nREADME.md' },
        { kind: "tool_call", text: "edit", detail: '{"filePath":"a.ts"}\nerror: no such file' },
        { kind: "message", text: "Done.", detail: null },
        { kind: "error", text: "rate limited", detail: null },
      ],
      usage: { input_tokens: 125, cached_input_tokens: 20, output_tokens: 31 },
    });
  });

  it("joins gemini's streamed reply deltas into one message and reads usage from its result", () => {
    const stdout = [
      JSON.stringify({ type: "init", session_id: "s", model: "gemini-2.5-pro" }),
      JSON.stringify({ type: "message", role: "user", content: "Greet" }),
      JSON.stringify({ type: "message", role: "assistant", content: "Hel", delta: true }),
      JSON.stringify({ type: "message", role: "assistant", content: "lo.", delta: true }),
      JSON.stringify({
        type: "tool_use",
        tool_name: "write_file",
        tool_id: "t1",
        parameters: { file_path: "GREETING.md" },
      }),
      JSON.stringify({ type: "tool_result", tool_id: "t1", status: "success", output: "ok" }),
      JSON.stringify({ type: "message", role: "assistant", content: "Done.", delta: true }),
      JSON.stringify({
        type: "result",
        status: "success",
        stats: { total_tokens: 50, input_tokens: 40, output_tokens: 10, cached: 8, input: 32 },
      }),
    ].join("\n");
    expect(parseAgentTranscript("gemini", stdout)).toEqual({
      type: "gemini",
      entries: [
        { kind: "message", text: "Hello.", detail: null },
        { kind: "tool_call", text: "write_file", detail: '{"file_path":"GREETING.md"}' },
        { kind: "tool_result", text: "ok", detail: null },
        { kind: "message", text: "Done.", detail: null },
      ],
      usage: { input_tokens: 40, cached_input_tokens: 8, output_tokens: 10 },
    });
  });
});
