import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { SessionsError } from "./sessions-error.ts";

describe("SessionsError", () => {
  it("carries its code, message and cause", () => {
    const cause = new Error("underneath");
    const error = new SessionsError("busy", "a turn is running", { cause });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("SessionsError");
    expect(error.code).toBe("busy");
    expect(error.message).toBe("a turn is running");
    expect(error.cause).toBe(cause);
  });

  it("isInstance recognises an error marked in another realm, where instanceof fails", () => {
    // Another realm (or a second copy of the package) has its own class, but Symbol.for is
    // shared by the whole process: the marker is what it recognises.
    const foreign: unknown = runInNewContext(
      `const error = new Error("elsewhere"); error[Symbol.for("deckhand.error")] = true; error[Symbol.for("deckhand.error.SessionsError")] = true; error.code = "not_found"; error`,
    );
    expect(foreign instanceof SessionsError).toBe(false);
    expect(SessionsError.isInstance(foreign)).toBe(true);
  });

  it("isInstance refuses other errors and non-objects", () => {
    expect(SessionsError.isInstance(new Error("plain"))).toBe(false);
    expect(SessionsError.isInstance({ code: "not_found" })).toBe(false);
    expect(SessionsError.isInstance(null)).toBe(false);
    expect(SessionsError.isInstance("not_found")).toBe(false);
  });
});
