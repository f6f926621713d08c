import { runInNewContext } from "node:vm";
import { DeckhandError } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { ProvidersError } from "./providers-error.ts";

describe("ProvidersError", () => {
  it("is a DeckhandError with a stable code, recognised by isInstance", () => {
    const error = new ProvidersError("stale_config", "what went wrong; what to do");
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error.name).toBe("ProvidersError");
    expect(error.code).toBe("stale_config");
    expect(ProvidersError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(
      ProvidersError.isInstance(
        Object.assign(new Error("look-alike"), { name: "ProvidersError", code: "stale_config" }),
      ),
    ).toBe(false);
  });

  it("recognises a ProvidersError made by another copy of the package, in another realm", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.ProvidersError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.code = "stale_config";
      error;
    `);
    expect(foreign instanceof ProvidersError).toBe(false);
    expect(ProvidersError.isInstance(foreign)).toBe(true);
  });
});
