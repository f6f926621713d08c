import { errnoCode, errorMessage } from "@deckhand/errors";
import type { FileClient } from "@deckhand/workspace-files";
import { AgentBackendError } from "../../errors.ts";

/** A whole file as read through the workspace agent, with its real (symlink-free) path. */
export interface WholeFile {
  realPath: string;
  content: string;
}

/** A workspace-agent failure as this package's error, keeping the agent's message for the model. */
export function fromWorkspaceError(error: unknown, action: string): AgentBackendError {
  if (error instanceof AgentBackendError) return error;
  const code = errnoCode(error);
  const message = errorMessage(error);
  if (code === "path_outside_root") {
    return new AgentBackendError("path_outside_worktree", `cannot ${action}: ${message}`, {
      cause: error,
    });
  }
  if (error instanceof Error && error.name === "AbortError") {
    return new AgentBackendError("aborted", `${action} was interrupted`, { cause: error });
  }
  return new AgentBackendError("file_error", `cannot ${action}: ${message}`, { cause: error });
}

/**
 * Reads a whole file in as many windows as the agent's per-read cap needs. Null when it does not
 * exist. A file whose text does not add up to its size (a line longer than the cap, or bytes that
 * are not UTF-8) is refused: rewriting it from that text would corrupt it. The client's `root`
 * (the worktree) narrows the agent's guard, so a symlink leading out of it is refused.
 */
export async function readWholeFile(files: FileClient, path: string): Promise<WholeFile | null> {
  let content = "";
  let offset = 1;
  let realPath = path;
  let size = 0;
  for (;;) {
    let answer: Awaited<ReturnType<FileClient["read"]>>;
    try {
      answer = await files.read({ path, offset });
    } catch (error) {
      if (errnoCode(error) === "file_not_found") return null;
      throw fromWorkspaceError(error, `read ${path}`);
    }
    realPath = answer.path;
    size = answer.size_bytes;
    content += answer.content;
    if (answer.next_offset === null) break;
    offset = answer.next_offset;
  }
  if (Buffer.byteLength(content, "utf8") !== size) {
    throw new AgentBackendError(
      "file_error",
      `${path} cannot be edited as text: it is not valid UTF-8 or has a line longer than the file API returns at once; change it with a command instead`,
    );
  }
  return { realPath, content };
}

/**
 * Removes a file through the file API, confined to the client's `root` (the worktree). The
 * agent removes a symlink itself, never its target, and answers `deleted: false` for a file
 * already gone, which counts as done: the patch wanted it gone.
 */
export async function deleteFile(files: FileClient, path: string): Promise<void> {
  try {
    await files.delete({ path });
  } catch (error) {
    throw fromWorkspaceError(error, `delete ${path}`);
  }
}
