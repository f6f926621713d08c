import { runInNewContext } from "node:vm";
import { DeckhandError } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { AgentBackendError, PatchParseError } from "./errors.ts";
import { ModelClientError } from "./native/model/model-client-error.ts";

describe("AgentBackendError", () => {
  it("is a DeckhandError with a stable code, recognised by isInstance", () => {
    const error = new AgentBackendError("no_session", "what went wrong; what to do");
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error.name).toBe("AgentBackendError");
    expect(error.code).toBe("no_session");
    expect(AgentBackendError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(
      AgentBackendError.isInstance(
        Object.assign(new Error("look-alike"), { name: "AgentBackendError", code: "no_session" }),
      ),
    ).toBe(false);
  });

  it("recognises a AgentBackendError made by another copy of the package, in another realm", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.AgentBackendError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.code = "no_session";
      error;
    `);
    expect(foreign instanceof AgentBackendError).toBe(false);
    expect(AgentBackendError.isInstance(foreign)).toBe(true);
  });

  it("recognises a PatchParseError as a AgentBackendError, and not the other way round", () => {
    const error = new PatchParseError(3, "expected a hunk");
    expect(error).toBeInstanceOf(AgentBackendError);
    expect(error.name).toBe("PatchParseError");
    expect(AgentBackendError.isInstance(error)).toBe(true);
    expect(PatchParseError.isInstance(error)).toBe(true);
    expect(
      PatchParseError.isInstance(
        new AgentBackendError("no_session", "what went wrong; what to do"),
      ),
    ).toBe(false);
  });

  it("recognises a ModelClientError as an AgentBackendError", () => {
    const error = new ModelClientError("idle_timeout", "no bytes for 60 s", { retryable: true });
    expect(error.name).toBe("ModelClientError");
    expect(error.code).toBe("model_request_failed");
    expect(AgentBackendError.isInstance(error)).toBe(true);
    expect(ModelClientError.isInstance(error)).toBe(true);
    expect(PatchParseError.isInstance(error)).toBe(false);
  });
});
