import { runInNewContext } from "node:vm";
import { DeckhandError } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { BatchSpecError } from "./batch-spec-error.ts";

describe("BatchSpecError", () => {
  it("is a DeckhandError with a stable code, recognised by isInstance", () => {
    const error = new BatchSpecError("template_syntax", "what went wrong; what to do");
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error.name).toBe("BatchSpecError");
    expect(error.code).toBe("template_syntax");
    expect(BatchSpecError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(
      BatchSpecError.isInstance(
        Object.assign(new Error("look-alike"), { name: "BatchSpecError", code: "template_syntax" }),
      ),
    ).toBe(false);
  });

  it("recognises a BatchSpecError made by another copy of the package, in another realm", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.BatchSpecError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.code = "template_syntax";
      error;
    `);
    expect(foreign instanceof BatchSpecError).toBe(false);
    expect(BatchSpecError.isInstance(foreign)).toBe(true);
  });
});
