import { runInNewContext } from "node:vm";
import { DeckhandError } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { ServerError } from "./server-error.ts";

describe("ServerError", () => {
  it("is a DeckhandError with a stable code, recognised by isInstance", () => {
    const error = new ServerError("start_failed", "what went wrong; what to do");
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error.name).toBe("ServerError");
    expect(error.code).toBe("start_failed");
    expect(ServerError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(
      ServerError.isInstance(
        Object.assign(new Error("look-alike"), { name: "ServerError", code: "start_failed" }),
      ),
    ).toBe(false);
  });

  it("recognises a ServerError made by another copy of the package, in another realm", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.ServerError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.code = "start_failed";
      error;
    `);
    expect(foreign instanceof ServerError).toBe(false);
    expect(ServerError.isInstance(foreign)).toBe(true);
  });
});
