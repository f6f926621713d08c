import { isAbsolute, resolve } from "node:path";
import { isPathInsideRoot } from "@deckhand/workspace-files";
import { AgentBackendError } from "../../errors.ts";

export interface WorktreePathOptions {
  /** Accept an absolute path that lies inside the worktree (patches only take relative paths). */
  allowAbsolute?: boolean;
}

/**
 * The absolute path `path` names inside the worktree, checked lexically (`..` included).
 * Symbolic links are checked by the workspace agent's own guard when the path is used.
 * Throws AgentBackendError `path_outside_worktree`.
 */
export function resolveWorktreePath(
  worktreeRoot: string,
  path: string,
  options: WorktreePathOptions = {},
): string {
  const root = resolve(worktreeRoot);
  if (path.length === 0 || path.includes("\0")) {
    throw new AgentBackendError(
      "path_outside_worktree",
      `path ${JSON.stringify(path)} is not a usable file path; pass a path relative to the worktree, such as "src/index.ts"`,
    );
  }
  if (isAbsolute(path) && options.allowAbsolute !== true) {
    throw new AgentBackendError(
      "path_outside_worktree",
      `path "${path}" is absolute; patch paths must be relative to the worktree ${root}, such as "src/index.ts"`,
    );
  }
  const absolute = resolve(root, path);
  if (!isPathInsideRoot(root, absolute)) {
    throw new AgentBackendError(
      "path_outside_worktree",
      `path "${path}" is outside the worktree ${root} (it resolves to ${absolute}); only files inside the worktree can be changed`,
    );
  }
  return absolute;
}

/** Whether `path` (relative, or absolute when `allowAbsolute`) stays inside the worktree. */
export function isInsideWorktree(
  worktreeRoot: string,
  path: string,
  options: WorktreePathOptions = {},
): boolean {
  try {
    resolveWorktreePath(worktreeRoot, path, options);
    return true;
  } catch {
    return false;
  }
}

/** `absolute` relative to the worktree, for messages to the model; `.` for the root itself. */
export function worktreeRelative(worktreeRoot: string, absolute: string): string {
  const root = resolve(worktreeRoot);
  if (absolute === root) return ".";
  return isPathInsideRoot(root, absolute) ? absolute.slice(root.length + 1) : absolute;
}
