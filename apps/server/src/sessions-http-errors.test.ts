import { HttpError } from "@deckhand/http-kit";
import { SessionsError } from "@deckhand/sessions";
import { describe, expect, it } from "vitest";
import { sessionsErrorToHttp } from "./sessions-http-errors.ts";

describe("sessionsErrorToHttp", () => {
  it.each([
    ["not_found", 404, "not_found"],
    ["invalid_request", 400, "invalid_request"],
    ["conflict", 409, "conflict"],
    ["busy", 409, "conflict"],
  ] as const)("answers %s with %i %s and the domain's message", (code, status, wireCode) => {
    const error = new SessionsError(code, "what happened; what to do");
    const http = sessionsErrorToHttp(error);
    expect(http).toBeInstanceOf(HttpError);
    expect(http).toMatchObject({ status, code: wireCode, message: "what happened; what to do" });
    expect((http as HttpError).cause).toBe(error);
  });

  it("leaves git failures and other errors unexpected (a logged 500)", () => {
    const gitFailed = new SessionsError("git_failed", "git worktree failed: disk full");
    expect(sessionsErrorToHttp(gitFailed)).toBe(gitFailed);
    const other = new Error("boom");
    expect(sessionsErrorToHttp(other)).toBe(other);
  });
});
