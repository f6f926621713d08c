import { runInNewContext } from "node:vm";
import { DeckhandError } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { FileClientError } from "./file-client.ts";
import { WorkspaceFilesError } from "./workspace-files-error.ts";

describe("WorkspaceFilesError", () => {
  it("is a DeckhandError with a stable code, recognised by isInstance", () => {
    const error = new WorkspaceFilesError("binary_file", "what went wrong; what to do");
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error.name).toBe("WorkspaceFilesError");
    expect(error.code).toBe("binary_file");
    expect(WorkspaceFilesError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(
      WorkspaceFilesError.isInstance(
        Object.assign(new Error("look-alike"), {
          name: "WorkspaceFilesError",
          code: "binary_file",
        }),
      ),
    ).toBe(false);
  });

  it("recognises a WorkspaceFilesError made by another copy of the package, in another realm", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("from another copy");
      for (const key of ["deckhand.error", "deckhand.error.WorkspaceFilesError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.code = "binary_file";
      error;
    `);
    expect(foreign instanceof WorkspaceFilesError).toBe(false);
    expect(WorkspaceFilesError.isInstance(foreign)).toBe(true);
  });

  it("recognises a FileClientError as a WorkspaceFilesError, and not the other way round", () => {
    const error = new FileClientError(415, "binary_file", "image.png is binary");
    expect(error).toBeInstanceOf(WorkspaceFilesError);
    expect(error.name).toBe("FileClientError");
    expect(WorkspaceFilesError.isInstance(error)).toBe(true);
    expect(FileClientError.isInstance(error)).toBe(true);
    expect(
      FileClientError.isInstance(
        new WorkspaceFilesError("binary_file", "what went wrong; what to do"),
      ),
    ).toBe(false);
  });
});
