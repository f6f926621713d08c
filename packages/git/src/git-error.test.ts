import { runInNewContext } from "node:vm";
import { DeckhandError } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { GitError } from "./git-error.ts";

describe("GitError", () => {
  it("is a DeckhandError with a stable code, recognised by isInstance", () => {
    const error = new GitError("git_failed", "what went wrong; what to do", {
      args: ["status"],
      cwd: "/repository",
      exitCode: 128,
      stderr: "fatal: not a git repository",
    });
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error.name).toBe("GitError");
    expect(error.code).toBe("git_failed");
    expect(GitError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      args: ["status"],
      cwd: "/repository",
      exitCode: 128,
      stderr: "fatal: not a git repository",
    });
    expect(
      GitError.isInstance(
        Object.assign(new Error("look-alike"), { name: "GitError", code: "git_failed" }),
      ),
    ).toBe(false);
  });

  it("recognises a GitError made by another copy of the package, in another realm", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.GitError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.code = "git_failed";
      error;
    `);
    expect(foreign instanceof GitError).toBe(false);
    expect(GitError.isInstance(foreign)).toBe(true);
  });
});
