import { runInNewContext } from "node:vm";
import { DeckhandError } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { BatchesError } from "./batches-error.ts";

describe("BatchesError", () => {
  it("is a DeckhandError with a stable code, recognised by isInstance", () => {
    const error = new BatchesError("invalid_query", "what went wrong; what to do");
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error.name).toBe("BatchesError");
    expect(error.code).toBe("invalid_query");
    expect(BatchesError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(
      BatchesError.isInstance(
        Object.assign(new Error("look-alike"), { name: "BatchesError", code: "invalid_query" }),
      ),
    ).toBe(false);
  });

  it("recognises a BatchesError made by another copy of the package, in another realm", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.BatchesError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.code = "invalid_query";
      error;
    `);
    expect(foreign instanceof BatchesError).toBe(false);
    expect(BatchesError.isInstance(foreign)).toBe(true);
  });
});
