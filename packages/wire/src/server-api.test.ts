import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { branchNameProblem, CreateSessionRequestSchema } from "./server-api.ts";

/** Whether git itself accepts `name` as a branch name. */
function gitAccepts(name: string): boolean {
  try {
    execFileSync("git", ["check-ref-format", "--branch", name], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

const names = [
  "main",
  "feature/login",
  "deckhand/1a2b3c4d",
  "release-1.2",
  "v1.0.0",
  "ünïcode/ветка",
  "a@b",
  "@",
  "x.lockfile",
  "HEAD",
  "HEADS",
  "-rf",
  "/lead",
  "trail/",
  "a//b",
  "end.",
  "a..b",
  "a/.hidden",
  ".hidden",
  "a.lock",
  "a.lock/b",
  "a@{b",
  "has space",
  "tab\there",
  "tilde~1",
  "caret^",
  "co:lon",
  "what?",
  "star*",
  "br[acket",
  "back\\slash",
  "del\x7f",
];

describe("branchNameProblem", () => {
  it.each(names)("agrees with git check-ref-format --branch on %j", (name) => {
    expect(branchNameProblem(name) === null).toBe(gitAccepts(name));
  });

  it("makes a session request with branch HEAD a validation failure naming the field", () => {
    const result = CreateSessionRequestSchema.safeParse({ branch: "HEAD" });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(["branch"]);
    expect(result.error?.issues[0]?.message).toMatch(/^must be a valid git branch name: HEAD/);
  });
});
