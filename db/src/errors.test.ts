import { runInNewContext } from "node:vm";
import { DeckhandError } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { DbError } from "./errors.ts";

describe("DbError", () => {
  it("is a DeckhandError with a stable code, recognised by isInstance", () => {
    const error = new DbError("closed", "what went wrong; what to do");
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error.name).toBe("DbError");
    expect(error.code).toBe("closed");
    expect(DbError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(
      DbError.isInstance(
        Object.assign(new Error("look-alike"), { name: "DbError", code: "closed" }),
      ),
    ).toBe(false);
  });

  it("recognises a DbError made by another copy of the package, in another realm", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.DbError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.code = "closed";
      error;
    `);
    expect(foreign instanceof DbError).toBe(false);
    expect(DbError.isInstance(foreign)).toBe(true);
  });
});
