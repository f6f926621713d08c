import { runInNewContext } from "node:vm";
import { DeckhandError } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { HttpError } from "./http-error.ts";

describe("HttpError", () => {
  it("is a DeckhandError with a stable code, recognised by isInstance", () => {
    const error = new HttpError(409, "conflict", "the state forbids it");
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error.name).toBe("HttpError");
    expect(error.code).toBe("conflict");
    expect(HttpError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(
      HttpError.isInstance(
        Object.assign(new Error("look-alike"), { name: "HttpError", code: "conflict" }),
      ),
    ).toBe(false);
  });

  it("recognises a HttpError made by another copy of the package, in another realm", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.HttpError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.code = "conflict";
      error;
    `);
    expect(foreign instanceof HttpError).toBe(false);
    expect(HttpError.isInstance(foreign)).toBe(true);
  });
});
