import { describe, expect, it } from "vitest";
import {
  parseScriptedPrompt,
  type ScriptedPrompt,
  scriptedPrompt,
} from "./scripted-acp-prompts.ts";

describe("scripted prompts", () => {
  it("round-trips every directive through its text", () => {
    const prompts: ScriptedPrompt[] = [
      { kind: "write", path: "a/b.txt", text: "two words" },
      { kind: "write-as-gemini", path: "c.txt", text: "new file" },
      { kind: "read", path: "/abs/x", line: null, limit: null },
      { kind: "read", path: "x", line: 2, limit: 3 },
      { kind: "read", path: "x", line: 1, limit: 3 },
      { kind: "run", command: "echo 'hi there'; exit 3", limit: null },
      { kind: "run", command: "yes | head", limit: 64 },
      { kind: "run-kill", command: "sleep 30" },
      { kind: "run-release", command: "sleep 30" },
      { kind: "edit", path: "e.txt", text: "new" },
      { kind: "edit-ask-first", path: "e.txt", text: "new" },
      { kind: "edit-ask-only", path: "e.txt", text: "new" },
      { kind: "slow", ms: 100 },
      { kind: "stubborn", ms: 100 },
      { kind: "crash" },
      { kind: "showcase" },
      { kind: "history" },
      { kind: "env" },
      { kind: "reply" },
    ];
    for (const prompt of prompts)
      expect(parseScriptedPrompt(scriptedPrompt(prompt))).toEqual(prompt);
  });

  it("treats anything else as a plain reply", () => {
    expect(parseScriptedPrompt("hi")).toEqual({ kind: "reply" });
    expect(parseScriptedPrompt("write")).toEqual({ kind: "reply" });
    expect(parseScriptedPrompt("slow")).toMatchObject({ kind: "slow", ms: 30_000 });
  });
});
