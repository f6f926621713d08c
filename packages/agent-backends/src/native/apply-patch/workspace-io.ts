import type { ProcessClient } from "@deckhand/process-manager";
import type { FileClient } from "@deckhand/workspace-files";
import { AgentBackendError } from "../../errors.ts";
import { quoteShellWord } from "../safety/shell-words.ts";

/** A whole file as read through the workspace agent, with its real (symlink-free) path. */
export interface WholeFile {
  realPath: string;
  content: string;
}

function errorCode(error: unknown): string | undefined {
  if (error instanceof Error && "code" in error && typeof error.code === "string") {
    return error.code;
  }
  return undefined;
}

/** A workspace-agent failure as this package's error, keeping the agent's message for the model. */
export function fromWorkspaceError(error: unknown, action: string): AgentBackendError {
  if (error instanceof AgentBackendError) return error;
  const code = errorCode(error);
  const message = error instanceof Error ? error.message : String(error);
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
 * are not UTF-8) is refused: rewriting it from that text would corrupt it.
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
      if (errorCode(error) === "file_not_found") return null;
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
 * Removes a file through the process API: the file API has no delete. `realPath` must come from
 * the agent's own answer (read or write), so it is already symlink-free and inside its root.
 */
export async function deleteFile(processes: ProcessClient, realPath: string): Promise<void> {
  let result: Awaited<ReturnType<ProcessClient["run"]>>;
  try {
    result = await processes.run(
      { command: `rm -f -- ${quoteShellWord(realPath)}` },
      { timeoutMs: 30_000 },
    );
  } catch (error) {
    throw new AgentBackendError(
      "process_error",
      `cannot delete ${realPath}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (result.output.exit_code !== 0) {
    throw new AgentBackendError(
      "file_error",
      `cannot delete ${realPath}: rm exited with ${result.output.exit_code ?? "no exit code"}: ${result.output.output.trim().slice(0, 500)}`,
    );
  }
}
