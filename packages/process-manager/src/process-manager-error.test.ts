import { runInNewContext } from "node:vm";
import { DeckhandError } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { ProcessClientError } from "./process-client.ts";
import { ProcessManagerError } from "./process-manager-error.ts";

describe("ProcessManagerError", () => {
  it("is a DeckhandError with a stable code, recognised by isInstance", () => {
    const error = new ProcessManagerError("too_many_processes", "what went wrong; what to do");
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error.name).toBe("ProcessManagerError");
    expect(error.code).toBe("too_many_processes");
    expect(ProcessManagerError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(
      ProcessManagerError.isInstance(
        Object.assign(new Error("look-alike"), {
          name: "ProcessManagerError",
          code: "too_many_processes",
        }),
      ),
    ).toBe(false);
  });

  it("recognises a ProcessManagerError made by another copy of the package, in another realm", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.ProcessManagerError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.code = "too_many_processes";
      error;
    `);
    expect(foreign instanceof ProcessManagerError).toBe(false);
    expect(ProcessManagerError.isInstance(foreign)).toBe(true);
  });

  it("recognises a ProcessClientError as a ProcessManagerError, and not the other way round", () => {
    const error = new ProcessClientError(429, "too_many_processes", "the limit is reached");
    expect(error).toBeInstanceOf(ProcessManagerError);
    expect(error.name).toBe("ProcessClientError");
    expect(ProcessManagerError.isInstance(error)).toBe(true);
    expect(ProcessClientError.isInstance(error)).toBe(true);
    expect(
      ProcessClientError.isInstance(
        new ProcessManagerError("too_many_processes", "what went wrong; what to do"),
      ),
    ).toBe(false);
  });
});
