import { runInNewContext } from "node:vm";
import { DeckhandError } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { ContainerRuntimeError } from "./container-runtime-error.ts";

describe("ContainerRuntimeError", () => {
  it("is a DeckhandError with a stable code, recognised by isInstance", () => {
    const error = new ContainerRuntimeError("no_runtime", "what went wrong; what to do");
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error.name).toBe("ContainerRuntimeError");
    expect(error.code).toBe("no_runtime");
    expect(ContainerRuntimeError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(
      ContainerRuntimeError.isInstance(
        Object.assign(new Error("look-alike"), {
          name: "ContainerRuntimeError",
          code: "no_runtime",
        }),
      ),
    ).toBe(false);
  });

  it("recognises a ContainerRuntimeError made by another copy of the package, in another realm", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.ContainerRuntimeError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.code = "no_runtime";
      error;
    `);
    expect(foreign instanceof ContainerRuntimeError).toBe(false);
    expect(ContainerRuntimeError.isInstance(foreign)).toBe(true);
  });
});
