import type { ErrorCode } from "@deckhand/wire";

/**
 * The one error type of this package. `code` is the stable wire code a client branches on; the
 * message names the path involved and says what to do next, because its reader is often an LLM.
 */
export class WorkspaceFilesError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "WorkspaceFilesError";
    this.code = code;
  }
}

/** The errno-style code of a Node file-system error, if it is one. */
export function systemErrorCode(error: unknown): string | undefined {
  if (error instanceof Error && "code" in error && typeof error.code === "string") {
    return error.code;
  }
  return undefined;
}

/**
 * Wraps a file-system failure nobody anticipated. The message keeps only the errno code so a
 * permission or disk problem is still understandable without echoing arbitrary error text.
 */
export function unexpectedFileSystemError(error: unknown, action: string, path: string): unknown {
  const code = systemErrorCode(error);
  if (code === undefined) return error;
  const hint =
    code === "EACCES" || code === "EPERM"
      ? "; check the permissions of the file and its directories"
      : code === "ENOSPC" || code === "EDQUOT"
        ? "; free some disk space and retry"
        : code === "EROFS"
          ? "; the file system is read-only"
          : "";
  return new WorkspaceFilesError("internal", `cannot ${action} ${path}: ${code}${hint}`, {
    cause: error,
  });
}
