// The command's own checks; create, list and revoke against a real server are exercised by
// e2e/test/batch-executor-http.test.ts.
import { describe, expect, it } from "vitest";
import { executorTokensUsage, runExecutorTokensCommand } from "./executor-tokens-command.ts";

function io(env: Record<string, string | undefined> = {}) {
  let stdout = "";
  let stderr = "";
  return {
    io: {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env,
      fetch: () => Promise.reject(new Error("no request is sent for bad usage")),
    },
    out: () => stdout,
    err: () => stderr,
  };
}

describe("deckhand executor-tokens", () => {
  it("prints its usage with no command", async () => {
    const streams = io();
    expect(await runExecutorTokensCommand([], streams.io)).toBe(0);
    expect(streams.out()).toBe(executorTokensUsage);
  });

  it("exits 2 with the usage for a missing name or id, extra arguments, a bad server or an unknown command", async () => {
    for (const argv of [
      ["create"],
      ["create", "a", "b"],
      ["revoke"],
      ["list", "extra"],
      ["create", "builders", "--server", "deckhand.internal"],
      ["rotate"],
    ]) {
      const streams = io();
      expect(await runExecutorTokensCommand(argv, streams.io), argv.join(" ")).toBe(2);
      expect(streams.err()).toMatch(/^deckhand executor-tokens: /);
      expect(streams.err()).toContain("Usage: deckhand executor-tokens");
    }
  });

  it("says to start the server when none answers", async () => {
    const streams = io();
    expect(
      await runExecutorTokensCommand(["list", "--server", "http://127.0.0.1:9"], {
        ...streams.io,
        fetch: globalThis.fetch,
      }),
    ).toBe(1);
    expect(streams.err()).toMatch(/^deckhand executor-tokens list: .*start it with "deckhand up"/);
  });
});
