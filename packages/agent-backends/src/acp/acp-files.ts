import { isAbsolute } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { errnoCode, errorMessage } from "@deckhand/errors";
import type { FileClient } from "@deckhand/workspace-files";
import { AgentBackendError } from "../errors.ts";
import { resolveWorktreePath } from "../native/safety/worktree-path.ts";

/** The agent's error for a failed client request: a JSON-RPC error with a message it can show. */
export function toRequestError(error: unknown, action: string): acp.RequestError {
  if (error instanceof acp.RequestError) return error;
  const code = errnoCode(error);
  const message = errorMessage(error);
  if (code === "file_not_found" || code === "not_found") {
    return new acp.RequestError(-32002, `Resource not found: cannot ${action}: ${message}`);
  }
  if (
    code === "path_outside_worktree" ||
    code === "path_outside_root" ||
    code === "invalid_request" ||
    code === "invalid_arguments" ||
    code === "not_a_file" ||
    code === "binary_file"
  ) {
    return acp.RequestError.invalidParams(undefined, `cannot ${action}: ${message}`);
  }
  return acp.RequestError.internalError(undefined, `cannot ${action}: ${message}`);
}

/**
 * An absolute path from the agent, checked to lie inside the worktree. ACP paths are absolute;
 * a relative one is refused rather than guessed at.
 */
export function agentPath(worktreePath: string, path: string): string {
  if (!isAbsolute(path)) {
    throw new AgentBackendError(
      "path_outside_worktree",
      `path "${path}" is relative; ACP paths are absolute, inside the worktree ${worktreePath}`,
    );
  }
  return resolveWorktreePath(worktreePath, path, { allowAbsolute: true });
}

/**
 * Serves `fs/read_text_file` and `fs/write_text_file` through the workspace agent's file API.
 * The check made here is lexical; `files` is built with the worktree as its `root`, so the
 * agent's guard resolves symlinks against the worktree, not just its own (wider) root, and a
 * link in the worktree to another directory under that root is refused.
 */
export class AcpFiles {
  readonly #files: FileClient;
  readonly #worktreePath: string;

  constructor(files: FileClient, worktreePath: string) {
    this.#files = files;
    this.#worktreePath = worktreePath;
  }

  async read(params: acp.ReadTextFileRequest): Promise<acp.ReadTextFileResponse> {
    const action = `read ${params.path}`;
    try {
      const path = agentPath(this.#worktreePath, params.path);
      let offset = params.line ?? 1;
      let remaining = params.limit ?? null;
      let content = "";
      // The file API pages large files; ACP wants the whole window in one answer.
      for (;;) {
        const answer = await this.#files.read({
          path,
          offset,
          ...(remaining === null ? {} : { limit: remaining }),
        });
        content += answer.content;
        if (remaining !== null) remaining -= answer.lines;
        if (answer.next_offset === null || answer.lines === 0) break;
        if (remaining !== null && remaining <= 0) break;
        offset = answer.next_offset;
      }
      return { content };
    } catch (error) {
      throw toRequestError(error, action);
    }
  }

  async write(params: acp.WriteTextFileRequest): Promise<acp.WriteTextFileResponse> {
    try {
      const path = agentPath(this.#worktreePath, params.path);
      await this.#files.write({ path, content: params.content });
      return {};
    } catch (error) {
      throw toRequestError(error, `write ${params.path}`);
    }
  }
}
