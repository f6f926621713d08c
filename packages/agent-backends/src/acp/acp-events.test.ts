import { describe, expect, it } from "vitest";
import { eventsFromUpdate, stopReasonFrom, usageFromResponse } from "./acp-events.ts";
import { keepTail, terminalCommandLine } from "./acp-terminals.ts";

const context = {
  messageId: "0d9c8b7a-6e5f-4a3b-9c2d-1e0f9a8b7c6d",
  agent: "codex",
  worktreePath: "/work/tree",
};

describe("eventsFromUpdate", () => {
  it("keeps tool calls and tool call updates distinct", () => {
    expect(
      eventsFromUpdate(
        {
          sessionUpdate: "tool_call",
          toolCallId: "t1",
          title: "Edit",
          locations: [{ path: "/work/tree/src/a.ts" }, { path: "/etc/passwd" }],
        },
        context,
      ),
    ).toEqual([
      {
        type: "tool_call",
        message_id: context.messageId,
        tool_call_id: "t1",
        title: "Edit",
        kind: "other",
        status: "pending",
        locations: ["src/a.ts"],
      },
    ]);
    expect(
      eventsFromUpdate(
        {
          sessionUpdate: "tool_call_update",
          toolCallId: "t1",
          status: "completed",
          content: [
            { type: "content", content: { type: "text", text: "done" } },
            { type: "diff", path: "/work/tree/src/a.ts", newText: "x" },
          ],
          rawOutput: { ok: true },
        },
        context,
      ),
    ).toEqual([
      {
        type: "tool_update",
        message_id: context.messageId,
        tool_call_id: "t1",
        status: "completed",
        content: "done\ndiff: /work/tree/src/a.ts",
        output: { ok: true },
      },
    ]);
  });

  it("drops updates with no event of their own", () => {
    expect(
      eventsFromUpdate(
        { sessionUpdate: "user_message_chunk", content: { type: "text", text: "hi" } },
        context,
      ),
    ).toEqual([]);
    expect(eventsFromUpdate({ sessionUpdate: "usage_update", used: 1, size: 2 }, context)).toEqual(
      [],
    );
    expect(
      eventsFromUpdate(
        { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "" } },
        context,
      ),
    ).toEqual([]);
  });
});

describe("stop reasons and usage", () => {
  it("maps ACP stop reasons and treats unknown ones as a normal end", () => {
    expect(stopReasonFrom("cancelled")).toBe("cancelled");
    expect(stopReasonFrom("max_tokens")).toBe("max_tokens");
    expect(stopReasonFrom("error")).toBe("end_turn");
    expect(stopReasonFrom("something_new")).toBe("end_turn");
  });

  it("reads usage from a prompt response, and ignores what does not fit", () => {
    expect(
      usageFromResponse({ usage: { inputTokens: 3, outputTokens: 4 } }, context.messageId),
    ).toMatchObject({ input_tokens: 3, output_tokens: 4, total_tokens: 7 });
    expect(usageFromResponse({ usage: { inputTokens: -1 } }, context.messageId)).toBeNull();
    expect(usageFromResponse({ stopReason: "end_turn" }, context.messageId)).toBeNull();
  });
});

describe("terminal helpers", () => {
  it("keeps the tail of the output on a character boundary", () => {
    expect(keepTail("hello", 10)).toEqual({ text: "hello", cut: false });
    expect(keepTail("abc€", 2)).toEqual({ text: "", cut: true });
    expect(keepTail("abc€", 3)).toEqual({ text: "€", cut: true });
  });

  it("runs a command line as is and quotes a program's arguments", () => {
    expect(terminalCommandLine("npm test -- --watch=false", [])).toBe("npm test -- --watch=false");
    expect(terminalCommandLine("sh", ["-c", "echo 'a b'"])).toBe(`sh -c 'echo '\\''a b'\\'''`);
  });

  it("quotes an argument that looks like an assignment, and no other =", () => {
    expect(terminalCommandLine("npm", ["test", "--", "--watch=false", "CI=1"])).toBe(
      "npm test -- --watch=false 'CI=1'",
    );
    expect(terminalCommandLine("A=b", ["x"])).toBe("'A=b' x");
  });
});
