import { errnoCode } from "@deckhand/errors";
import { DeckhandError, type ErrorCode } from "@deckhand/wire";

/**
 * The one error type of this package. `code` is the stable wire code a client branches on; the
 * message names the path involved and says what to do next, because its reader is often an LLM.
 */
export class WorkspaceFilesError extends DeckhandError<ErrorCode> {
  // Typed `string` because FileClientError names itself.
  static override readonly errorName: string = "WorkspaceFilesError";
}

/**
 * Errors a checked path only gives when another process changes it during the request: it was
 * removed (ENOENT), a directory on it became a file or the other way round (ENOTDIR, EISDIR,
 * ENOTEMPTY), an entry became a symbolic link refused with O_NOFOLLOW or a link loop (ELOOP),
 * or a fresh temporary name was taken (EEXIST).
 */
const CHANGED_MEANWHILE = new Set(["ENOENT", "ENOTDIR", "EISDIR", "ENOTEMPTY", "ELOOP", "EEXIST"]);

/** The answer for a path another process changed while a request was using it. */
export function changedMeanwhile(action: string, path: string, reason: string, cause?: unknown) {
  return new WorkspaceFilesError(
    "conflict",
    `cannot ${action} ${path}: ${reason}, because another process changed the path while the request ran (replaced, moved or removed something on it); retry, and check what else changes these files`,
    { cause },
  );
}

/**
 * Wraps a file-system failure the operation did not handle itself: a race with another process
 * (`conflict`), or a failure nobody anticipated (`internal`). The message keeps only the errno
 * code so a permission or disk problem is still understandable without echoing arbitrary error
 * text.
 */
export function unexpectedFileSystemError(error: unknown, action: string, path: string): unknown {
  // Already answered by a check on the way (its `code` is a wire code, not an errno).
  if (error instanceof WorkspaceFilesError) return error;
  const code = errnoCode(error);
  if (code === undefined) return error;
  if (CHANGED_MEANWHILE.has(code)) return changedMeanwhile(action, path, code, error);
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
