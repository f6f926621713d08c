import { realpathSync, statSync } from "node:fs";
import { lstat, readlink, realpath, stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, resolve, sep } from "node:path";
import { errnoCode } from "@deckhand/errors";
import {
  changedMeanwhile,
  unexpectedFileSystemError,
  WorkspaceFilesError,
} from "./workspace-files-error.ts";

/** Linux gives up after 40 links (ELOOP); so do we, so a link cycle cannot hang a request. */
const MAX_SYMBOLIC_LINKS = 40;

/** A workspace root as configured and as the file system really names it. */
export interface WorkspaceRoot {
  /** The root as given, made absolute: absolute request paths may start with it. */
  configured: string;
  /** Its real path, symlinks resolved once: every accepted path is inside it. */
  real: string;
}

/**
 * Lexical containment: `path` is `root` or below it. Both must be absolute and normalized.
 * Comparing against `root + separator` is what rejects sibling prefixes like `<root>-evil`.
 */
export function isPathInsideRoot(root: string, path: string): boolean {
  if (path === root) return true;
  const prefix = root.endsWith(sep) ? root : `${root}${sep}`;
  return path.startsWith(prefix);
}

function rootError(root: string, error: unknown): WorkspaceFilesError {
  return new WorkspaceFilesError(
    "invalid_request",
    `workspace root ${root} is not an existing directory (${errnoCode(error) ?? String(error)}); create it or point the file API at another directory`,
    { cause: error },
  );
}

/** Resolves a root once, synchronously: a constructor cannot await. */
export function workspaceRootSync(root: string): WorkspaceRoot {
  const configured = resolve(root);
  let real: string;
  try {
    real = realpathSync(configured);
  } catch (error) {
    throw rootError(configured, error);
  }
  if (!statSync(real).isDirectory()) throw rootError(configured, new Error("ENOTDIR"));
  return { configured, real };
}

/** Resolves a root: its real path, which must be an existing directory. */
export async function workspaceRoot(root: string): Promise<WorkspaceRoot> {
  const configured = resolve(root);
  try {
    const real = await realpath(configured);
    if (!(await stat(real)).isDirectory()) throw new Error("ENOTDIR");
    return { configured, real };
  } catch (error) {
    throw rootError(configured, error);
  }
}

function checkPathText(path: string, root: WorkspaceRoot): void {
  if (path.length === 0) {
    throw new WorkspaceFilesError(
      "invalid_request",
      `path is empty; pass a file path relative to the workspace root ${root.real}`,
    );
  }
  if (path.includes("\0")) {
    throw new WorkspaceFilesError(
      "invalid_request",
      `path ${JSON.stringify(path)} contains a NUL byte, which no file name can contain; remove it`,
    );
  }
}

function isMissing(error: unknown): boolean {
  const code = errnoCode(error);
  return code === "ENOENT" || code === "ENOTDIR";
}

function tooManyLinks(path: string, cause?: unknown): WorkspaceFilesError {
  return new WorkspaceFilesError(
    "invalid_request",
    `path "${path}" goes through too many symbolic links (a link cycle?); fix the links or use the real path`,
    { cause },
  );
}

/**
 * The path the kernel would reach, with every symlink resolved, for paths that do not exist
 * yet too: the existing part is resolved component by component and the missing rest is
 * appended. A dangling symlink is followed to where it points, because writing through it
 * would create its target, which may lie outside the root.
 */
async function physicalPath(absolute: string, requested: string): Promise<string> {
  try {
    return await realpath(absolute);
  } catch (error) {
    if (errnoCode(error) === "ELOOP") throw tooManyLinks(requested, error);
    if (!isMissing(error)) throw unexpectedFileSystemError(error, "resolve", absolute);
  }
  let current: string = sep;
  let pending = absolute.split(sep).filter((segment) => segment.length > 0);
  let links = 0;
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (name === ".") continue;
    if (name === "..") {
      current = dirname(current);
      continue;
    }
    const next = join(current, name);
    let isLink: boolean;
    try {
      isLink = (await lstat(next)).isSymbolicLink();
    } catch (error) {
      if (isMissing(error)) return join(next, ...pending);
      throw unexpectedFileSystemError(error, "resolve", next);
    }
    if (!isLink) {
      current = next;
      continue;
    }
    links += 1;
    if (links > MAX_SYMBOLIC_LINKS) throw tooManyLinks(requested);
    let target: string;
    try {
      target = await readlink(next);
    } catch (error) {
      // EINVAL: no longer a link since the lstat above.
      if (errnoCode(error) === "EINVAL") {
        throw changedMeanwhile("resolve", next, "it stopped being a symbolic link", error);
      }
      throw unexpectedFileSystemError(error, "resolve", next);
    }
    if (isAbsolute(target)) current = sep;
    pending = [...target.split(sep).filter((segment) => segment.length > 0), ...pending];
  }
  return current;
}

/**
 * `path` made absolute against the root, `..` applied to the text, and spelled under the
 * root's real path; throws `path_outside_root` before touching the file system when it is not
 * inside the root as configured or as really named.
 */
function lexicalPath(root: WorkspaceRoot, path: string, label: string): string {
  checkPathText(path, root);
  const candidate = resolve(root.real, path);
  if (isPathInsideRoot(root.real, candidate)) return candidate;
  if (!isPathInsideRoot(root.configured, candidate)) {
    // Rejected before touching the file system, so probing outside the root learns nothing.
    throw new WorkspaceFilesError(
      "path_outside_root",
      `${label} "${path}" is outside the workspace root ${root.real} (it resolves to ${candidate}); use a path relative to the root, such as "src/index.ts", or an absolute path starting with ${root.real}`,
    );
  }
  return join(root.real, candidate.slice(root.configured.length));
}

function throughLinkOutside(
  root: WorkspaceRoot,
  path: string,
  label: string,
  physical: string,
): WorkspaceFilesError {
  return new WorkspaceFilesError(
    "path_outside_root",
    `${label} "${path}" leads through a symbolic link to ${physical}, outside the workspace root ${root.real}; the file API only reaches files inside the root, so use a path whose links stay inside it`,
  );
}

/**
 * The real absolute path `path` names inside an already resolved root; throws
 * `path_outside_root` when it, or any symlink on the way, leads outside. `label` names the
 * request field in messages.
 *
 * `..` is applied to the text first, as a shell user expects, and the result is then resolved
 * physically, so `link/../x` means `<root>/x` even when `link` points elsewhere; what is
 * returned is symlink-free, so operating on it cannot leave the root by a link.
 */
export async function resolveInsideRoot(
  root: WorkspaceRoot,
  path: string,
  label = "path",
): Promise<string> {
  const physical = await physicalPath(lexicalPath(root, path, label), path);
  if (!isPathInsideRoot(root.real, physical)) {
    throw throughLinkOutside(root, path, label, physical);
  }
  return physical;
}

/**
 * Like `resolveInsideRoot`, except that the last component is not followed: the answer is the
 * directory entry itself (its parent's real path plus its name), so deleting it removes a
 * symlink rather than what the link points to, wherever that is. The root itself is answered
 * as is.
 */
export async function resolveEntryInsideRoot(root: WorkspaceRoot, path: string): Promise<string> {
  const candidate = lexicalPath(root, path, "path");
  if (candidate === root.real) return root.real;
  const parent = await physicalPath(dirname(candidate), path);
  if (!isPathInsideRoot(root.real, parent)) throw throughLinkOutside(root, path, "path", parent);
  return join(parent, basename(candidate));
}

/**
 * A directory inside `root` (relative to it, or absolute and inside it) as a root of its own,
 * guarded like any path: symlinks on the way are resolved and must stay inside `root`. Used to
 * narrow one request to, say, a session worktree. Throws `invalid_request` when it is not an
 * existing directory.
 */
export async function resolveSubRoot(root: WorkspaceRoot, subRoot: string): Promise<WorkspaceRoot> {
  const real = await resolveInsideRoot(root, subRoot, "root");
  try {
    if (!(await stat(real)).isDirectory()) throw new Error("ENOTDIR");
  } catch (error) {
    throw new WorkspaceFilesError(
      "invalid_request",
      `root "${subRoot}" (${real}) is not an existing directory (${errnoCode(error) ?? "ENOTDIR"}); pass a directory inside the workspace root ${root.real}, or leave root out`,
      { cause: error },
    );
  }
  // Absolute request paths may then start with the sub-root as spelled under the configured
  // root (or as given, when absolute), as they may with the agent's root.
  return { configured: resolve(root.configured, subRoot), real };
}

/**
 * Resolves `path` (relative to `root`, or absolute and inside it) to its real absolute path
 * inside the root's real path. Throws WorkspaceFilesError `path_outside_root` for anything that
 * escapes, by `..`, by an absolute path or by a symlink anywhere on the way, and
 * `invalid_request` for an empty path, a NUL byte or a missing root. Paths that do not exist
 * yet are allowed: their nearest existing ancestor is what gets checked.
 */
export async function resolveWorkspacePath(root: string, path: string): Promise<string> {
  return resolveInsideRoot(await workspaceRoot(root), path);
}
