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
});
