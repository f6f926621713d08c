import { runInNewContext } from "node:vm";
import { DeckhandError } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { AgentError } from "./agent-error.ts";
import { GitWatchClientError } from "./git-watch-client.ts";

describe("AgentError", () => {
  it("is a DeckhandError with a stable code, recognised by isInstance", () => {
    const error = new AgentError("listen_failed", "what went wrong; what to do");
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error.name).toBe("AgentError");
    expect(error.code).toBe("listen_failed");
    expect(AgentError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(
      AgentError.isInstance(
        Object.assign(new Error("look-alike"), { name: "AgentError", code: "listen_failed" }),
      ),
    ).toBe(false);
  });

  it("recognises a AgentError made by another copy of the package, in another realm", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.AgentError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.code = "listen_failed";
      error;
    `);
    expect(foreign instanceof AgentError).toBe(false);
    expect(AgentError.isInstance(foreign)).toBe(true);
  });
});

describe("GitWatchClientError", () => {
  it("is a DeckhandError carrying the agent's code and status, recognised by isInstance", () => {
    const refused = new GitWatchClientError(404, "not_found", "is not inside a git worktree");
    expect(refused).toBeInstanceOf(DeckhandError);
    expect(refused).toMatchObject({ name: "GitWatchClientError", status: 404, code: "not_found" });
    expect(GitWatchClientError.isInstance(refused)).toBe(true);
    expect(DeckhandError.isInstance(refused)).toBe(true);
    expect(AgentError.isInstance(refused)).toBe(false);
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.GitWatchClientError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error;
    `);
    expect(GitWatchClientError.isInstance(foreign)).toBe(true);
  });
});
