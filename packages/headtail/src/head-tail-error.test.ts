import { runInNewContext } from "node:vm";
import { DeckhandError } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { HeadTailError } from "./head-tail-error.ts";

describe("HeadTailError", () => {
  it("is a DeckhandError with a stable code, recognised by isInstance", () => {
    const error = new HeadTailError("invalid_cursor", "what went wrong; what to do");
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error.name).toBe("HeadTailError");
    expect(error.code).toBe("invalid_cursor");
    expect(HeadTailError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(
      HeadTailError.isInstance(
        Object.assign(new Error("look-alike"), { name: "HeadTailError", code: "invalid_cursor" }),
      ),
    ).toBe(false);
  });

  it("recognises a HeadTailError made by another copy of the package, in another realm", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.HeadTailError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.code = "invalid_cursor";
      error;
    `);
    expect(foreign instanceof HeadTailError).toBe(false);
    expect(HeadTailError.isInstance(foreign)).toBe(true);
  });
});
