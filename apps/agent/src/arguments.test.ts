import { describe, expect, it } from "vitest";
import { parseAgentArguments } from "./arguments.ts";

describe("deckhand agent arguments", () => {
  it("parses flags and rejects unknown ones with the usage text", () => {
    expect(parseAgentArguments(["--listen", "127.0.0.1:0", "--max-processes", "3"])).toEqual({
      listen: "127.0.0.1:0",
      maxRunningProcesses: "3",
      help: false,
    });
    expect(() => parseAgentArguments(["--bogus"])).toThrow(/Unknown option '--bogus'[\s\S]*Usage:/);
  });
});
