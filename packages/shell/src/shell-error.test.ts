import { runInNewContext } from "node:vm";
import { DeckhandError } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { ShellError } from "./shell-error.ts";

describe("ShellError", () => {
  it("is a DeckhandError with a stable code, recognised by isInstance", () => {
    const error = new ShellError("nul_character", "what went wrong; what to do");
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error.name).toBe("ShellError");
    expect(error.code).toBe("nul_character");
    expect(ShellError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(
      ShellError.isInstance(
        Object.assign(new Error("look-alike"), { name: "ShellError", code: "nul_character" }),
      ),
    ).toBe(false);
  });

  it("recognises a ShellError made by another copy of the package, in another realm", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.ShellError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.code = "nul_character";
      error;
    `);
    expect(foreign instanceof ShellError).toBe(false);
    expect(ShellError.isInstance(foreign)).toBe(true);
  });
});
