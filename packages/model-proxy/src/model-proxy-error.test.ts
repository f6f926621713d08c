import { runInNewContext } from "node:vm";
import { DeckhandError } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { ModelProxyError } from "./model-proxy-error.ts";

describe("ModelProxyError", () => {
  it("is a DeckhandError with a stable code, recognised by isInstance", () => {
    const error = new ModelProxyError("rate_limited", "what went wrong; what to do");
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error.name).toBe("ModelProxyError");
    expect(error.code).toBe("rate_limited");
    expect(ModelProxyError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(
      ModelProxyError.isInstance(
        Object.assign(new Error("look-alike"), { name: "ModelProxyError", code: "rate_limited" }),
      ),
    ).toBe(false);
  });

  it("recognises a ModelProxyError made by another copy of the package, in another realm", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.ModelProxyError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.code = "rate_limited";
      error;
    `);
    expect(foreign instanceof ModelProxyError).toBe(false);
    expect(ModelProxyError.isInstance(foreign)).toBe(true);
  });
});
