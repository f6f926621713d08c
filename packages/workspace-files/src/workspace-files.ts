import { constants, type Stats } from "node:fs";
import {
  type FileHandle,
  lstat,
  mkdir,
  open,
  readFile,
  realpath,
  stat,
  unlink,
} from "node:fs/promises";
import { dirname } from "node:path";
import { describeZodError } from "@deckhand/http-kit";
import { quoteShellWord } from "@deckhand/shell";
import {
  type DeleteFileRequest,
  DeleteFileRequestSchema,
  type DeleteFileResponse,
  type EditFilesRequest,
  EditFilesRequestSchema,
  type EditFilesResponse,
  type ReadFileRequest,
  ReadFileRequestSchema,
  type ReadFileResponse,
  type WriteFileRequest,
  WriteFileRequestSchema,
  type WriteFileResponse,
} from "@deckhand/wire";
import type { z } from "zod";
import {
  commitFile,
  discardFile,
  type PreparedFile,
  prepareFile,
  type RenameFile,
  syncDirectory,
} from "./atomic-write.ts";
import {
  isPathInsideRoot,
  resolveEntryInsideRoot,
  resolveInsideRoot,
  resolveSubRoot,
  type WorkspaceRoot,
  workspaceRootSync,
} from "./path-guard.ts";
import { BINARY_SNIFF_BYTES, readLineWindow } from "./read-lines.ts";
import {
  systemErrorCode,
  unexpectedFileSystemError,
  WorkspaceFilesError,
} from "./workspace-files-error.ts";

/** Enough for a large source file while keeping one answer a reasonable share of an LLM context. */
export const DEFAULT_MAX_READ_BYTES = 256 * 1024;

export interface WorkspaceFilesOptions {
  /** Directory every path is confined to. It must exist; symlinks in it are resolved once. */
  root: string;
  /** Cap on the content one read returns, whatever `max_bytes` asks. Default 256 KiB. */
  maxReadBytes?: number;
  /**
   * Replaces `fs.promises.rename` for the final step of every write. Tests use it to make a
   * write fail after the new content is on disk but before it replaces the old file.
   */
  renameFile?: RenameFile;
}

interface EditPlan {
  target: string;
  original: string;
  content: string;
  mode: number;
}

function parseRequest<Schema extends z.ZodType>(schema: Schema, value: unknown): z.output<Schema> {
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new WorkspaceFilesError("invalid_request", describeZodError(result.error), {
      cause: result.error,
    });
  }
  return result.data;
}

function describePath(requested: string, absolute: string): string {
  return requested === absolute ? absolute : `"${requested}" (${absolute})`;
}

function fileNotFound(requested: string, absolute: string, hint: string, cause?: unknown) {
  return new WorkspaceFilesError(
    "file_not_found",
    `${describePath(requested, absolute)} does not exist; ${hint}`,
    { cause },
  );
}

function notAFile(requested: string, absolute: string, what: string, hint: string) {
  return new WorkspaceFilesError(
    "not_a_file",
    `${describePath(requested, absolute)} is ${what}, not a regular file; ${hint}`,
  );
}

function binaryFile(requested: string, absolute: string, reason: string, cause?: unknown) {
  return new WorkspaceFilesError(
    "binary_file",
    `${describePath(requested, absolute)} ${reason}, so it cannot be handled as text; inspect it with a process instead, such as \`xxd ${quoteShellWord(absolute)} | head\``,
    { cause },
  );
}

/**
 * Runs `read` once `path` is known to be a regular file, and turns what goes wrong (in the
 * check or in `read`) into the errors a reader sees; `hints` say what to do instead.
 */
async function readRegularFile<T>(
  requested: string,
  path: string,
  hints: { directory: string; special: string; missing: string },
  read: (stats: Stats) => Promise<T>,
): Promise<T> {
  try {
    const stats = await stat(path);
    if (stats.isDirectory()) throw notAFile(requested, path, "a directory", hints.directory);
    if (!stats.isFile()) throw notAFile(requested, path, "a special file", hints.special);
    return await read(stats);
  } catch (error) {
    if (error instanceof WorkspaceFilesError) throw error;
    const code = systemErrorCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") {
      throw fileNotFound(requested, path, hints.missing, error);
    }
    throw unexpectedFileSystemError(error, "read", path);
  }
}

/** How often `search` occurs in `text`, overlapping occurrences included, and where first. */
function matchPositions(text: string, search: string): { count: number; first: number } {
  let count = 0;
  let first = -1;
  for (let index = text.indexOf(search); index !== -1; index = text.indexOf(search, index + 1)) {
    if (count === 0) first = index;
    count += 1;
  }
  return { count, first };
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
const lenientUtf8 = new TextDecoder("utf-8");

/**
 * The workspace agent's file API: every path is confined to the root (see
 * `resolveWorkspacePath`), reads are bounded, and writes replace files atomically.
 */
export class WorkspaceFiles {
  /** The root's real path; every path this instance touches is inside it. */
  readonly root: string;
  readonly maxReadBytes: number;
  readonly #root: WorkspaceRoot;
  readonly #renameFile: RenameFile | undefined;

  constructor(options: WorkspaceFilesOptions) {
    const maxReadBytes = options.maxReadBytes ?? DEFAULT_MAX_READ_BYTES;
    if (!Number.isInteger(maxReadBytes) || maxReadBytes < 1) {
      throw new WorkspaceFilesError(
        "invalid_request",
        `maxReadBytes must be a positive integer, got ${maxReadBytes}`,
      );
    }
    this.#root = workspaceRootSync(options.root);
    this.root = this.#root.real;
    this.maxReadBytes = maxReadBytes;
    this.#renameFile = options.renameFile;
  }

  /**
   * The real absolute path of `path` inside the root, or inside `root` (a directory inside the
   * root) when given; see `resolveWorkspacePath`.
   */
  async resolve(path: string, root?: string): Promise<string> {
    return resolveInsideRoot(await this.#rootFor(root), path);
  }

  /**
   * The guard's limit for one request: the agent's root, or the narrower `root` the request
   * names, resolved on every request because a worktree can be removed or replaced at any time.
   */
  #rootFor(root: string | undefined): Promise<WorkspaceRoot> {
    return root === undefined ? Promise.resolve(this.#root) : resolveSubRoot(this.#root, root);
  }

  /**
   * Returns a window of lines: from `offset` (1-based, default 1), at most `limit` lines, at
   * most min(`max_bytes`, maxReadBytes) bytes, cut after a whole line when one fits.
   */
  async read(input: ReadFileRequest): Promise<ReadFileResponse> {
    const request = parseRequest(ReadFileRequestSchema, input);
    const path = await this.resolve(request.path, request.root);
    const handle = await this.#openForRead(request.path, path);
    try {
      const offset = request.offset ?? 1;
      const size = (await handle.stat()).size;
      const slice = await readLineWindow(handle, {
        offset,
        limit: request.limit,
        maxBytes: Math.min(request.max_bytes ?? this.maxReadBytes, this.maxReadBytes),
      });
      if (slice.content === null) {
        throw binaryFile(
          request.path,
          path,
          `looks binary (it has a NUL byte in its first ${BINARY_SNIFF_BYTES / 1024} KiB)`,
        );
      }
      if (offset > Math.max(slice.totalLines, 1)) {
        throw new WorkspaceFilesError(
          "invalid_request",
          `offset ${offset} is past the end of ${describePath(request.path, path)}, which has ${slice.totalLines} lines; pass an offset from 1 to ${Math.max(slice.totalLines, 1)}`,
        );
      }
      const after = offset + slice.lines;
      const nextOffset = after <= slice.totalLines ? after : null;
      return {
        path,
        content: lenientUtf8.decode(slice.content),
        size_bytes: size,
        total_lines: slice.totalLines,
        offset,
        lines: slice.lines,
        truncated: slice.cutMidLine || nextOffset !== null,
        next_offset: nextOffset,
      };
    } finally {
      await handle.close();
    }
  }

  /**
   * Replaces (or creates) a file atomically: the content goes to a temporary file beside it,
   * is flushed, then renamed over it, so readers see the old or the new file, never a mix.
   */
  async write(input: WriteFileRequest): Promise<WriteFileResponse> {
    const request = parseRequest(WriteFileRequestSchema, input);
    const root = await this.#rootFor(request.root);
    const target = await resolveInsideRoot(root, request.path);
    await this.#createParents(root, request.path, dirname(target));
    let mode: number | undefined;
    try {
      const stats = await lstat(target);
      if (stats.isDirectory()) {
        throw notAFile(
          request.path,
          target,
          "a directory",
          "write to a file path inside it instead",
        );
      }
      if (!stats.isFile()) {
        throw notAFile(request.path, target, "a special file", "only regular files can be written");
      }
      mode = stats.mode & 0o7777;
    } catch (error) {
      if (error instanceof WorkspaceFilesError) throw error;
      if (systemErrorCode(error) !== "ENOENT") {
        throw unexpectedFileSystemError(error, "write", target);
      }
    }
    const data = Buffer.from(request.content, "utf8");
    try {
      await commitFile(await prepareFile(target, data, mode), this.#renameFile);
    } catch (error) {
      throw unexpectedFileSystemError(error, "write", target);
    }
    return { path: target, bytes_written: data.length, created: mode === undefined };
  }

  /**
   * Applies search/replace edits to one or more files, all or nothing: every new content is
   * computed before anything is written, and any failing edit means no file changes.
   */
  async edit(input: EditFilesRequest): Promise<EditFilesResponse> {
    const request = parseRequest(EditFilesRequestSchema, input);
    const root = await this.#rootFor(request.root);
    // Keyed by real path, so two spellings of one file edit one evolving content.
    const plans = new Map<string, EditPlan>();
    const results: EditFilesResponse["files"] = [];
    const failures: string[] = [];
    for (const [fileIndex, file] of request.files.entries()) {
      const target = await resolveInsideRoot(root, file.path);
      let plan = plans.get(target);
      if (plan === undefined) {
        const { text, mode } = await this.#readForEdit(file.path, target);
        plan = { target, original: text, content: text, mode };
        plans.set(target, plan);
      }
      for (const [editIndex, edit] of file.edits.entries()) {
        const { count, first } = matchPositions(plan.content, edit.search);
        if (count !== 1) {
          failures.push(
            `files[${fileIndex}].edits[${editIndex}] on ${describePath(file.path, target)}: the search text matches ${count} times, it must match exactly once; ${
              count === 0
                ? "copy it exactly from the current file (read it first; whitespace and indentation count), with enough surrounding context to be unique, remembering that earlier edits in this request apply first"
                : "add surrounding context (neighbouring lines) to the search text to make it unique"
            }`,
          );
          continue;
        }
        plan.content =
          plan.content.slice(0, first) +
          edit.replace +
          plan.content.slice(first + edit.search.length);
      }
      results.push({ path: target, edits_applied: file.edits.length });
    }
    if (failures.length > 0) {
      throw new WorkspaceFilesError("edit_failed", `no file was changed: ${failures.join("; ")}`);
    }
    await this.#replaceAll([...plans.values()].filter((plan) => plan.content !== plan.original));
    return { files: results };
  }

  /**
   * Removes one file. A missing file is answered `deleted: false` rather than refused, so a
   * retried or repeated delete is harmless; a directory is refused (`not_a_file`). The last
   * component is not followed: deleting a symlink removes the link, never what it points to,
   * so a link whose target lies outside the root can still be removed safely.
   */
  async delete(input: DeleteFileRequest): Promise<DeleteFileResponse> {
    const request = parseRequest(DeleteFileRequestSchema, input);
    const root = await this.#rootFor(request.root);
    const target = await resolveEntryInsideRoot(root, request.path);
    const directoryHint =
      "delete the files inside it one by one, or remove it with a process such as `rm -r`";
    let stats: Stats;
    try {
      stats = await lstat(target);
    } catch (error) {
      const code = systemErrorCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") return { path: target, deleted: false };
      throw unexpectedFileSystemError(error, "delete", target);
    }
    if (stats.isDirectory()) throw notAFile(request.path, target, "a directory", directoryHint);
    try {
      await unlink(target);
    } catch (error) {
      const code = systemErrorCode(error);
      // Removed, or replaced by a directory, since the lstat above.
      if (code === "ENOENT") return { path: target, deleted: false };
      if (code === "EISDIR") throw notAFile(request.path, target, "a directory", directoryHint);
      throw unexpectedFileSystemError(error, "delete", target);
    }
    await syncDirectory(dirname(target));
    return { path: target, deleted: true };
  }

  async #openForRead(requested: string, path: string): Promise<FileHandle> {
    const handle = await readRegularFile(
      requested,
      path,
      {
        directory: "read a file inside it, or list it with a process such as `ls`",
        special: "only regular files can be read",
        missing: "check the path, or list the directory with a process such as `ls`",
      },
      // The path was checked symlink-free; O_NOFOLLOW refuses a link swapped in since then,
      // and O_NONBLOCK keeps a FIFO swapped in from blocking the request.
      () => open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK),
    );
    if (!(await handle.stat()).isFile()) {
      await handle.close();
      throw notAFile(requested, path, "not a regular file", "only regular files can be read");
    }
    return handle;
  }

  async #readForEdit(requested: string, path: string): Promise<{ text: string; mode: number }> {
    const { bytes, mode } = await readRegularFile(
      requested,
      path,
      {
        directory: "edit files inside it one by one",
        special: "only regular files can be edited",
        missing: "edit only changes existing files; create it with write",
      },
      async (stats) => ({
        mode: stats.mode & 0o7777,
        bytes: await readFile(path, { flag: constants.O_RDONLY | constants.O_NOFOLLOW }),
      }),
    );
    if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)) {
      throw binaryFile(
        requested,
        path,
        `looks binary (it has a NUL byte in its first ${BINARY_SNIFF_BYTES / 1024} KiB)`,
      );
    }
    try {
      return { text: strictUtf8.decode(bytes), mode };
    } catch (error) {
      // Decoding and re-encoding invalid UTF-8 would silently rewrite the bytes edits do not touch.
      throw binaryFile(requested, path, "is not valid UTF-8", error);
    }
  }

  /** Creates missing directories top-down, checking each one lands inside the root. */
  async #createParents(root: WorkspaceRoot, requested: string, directory: string): Promise<void> {
    const missing: string[] = [];
    for (let current = directory; ; current = dirname(current)) {
      try {
        const stats = await stat(current);
        if (!stats.isDirectory()) {
          throw new WorkspaceFilesError(
            "not_a_file",
            `${current} is a file, so "${requested}" cannot be created below it; choose another path or remove that file first`,
          );
        }
        break;
      } catch (error) {
        if (error instanceof WorkspaceFilesError) throw error;
        const code = systemErrorCode(error);
        if (code !== "ENOENT" && code !== "ENOTDIR") {
          throw unexpectedFileSystemError(error, "create the directory", current);
        }
        // Creating the root itself would quietly recreate a workspace that was removed.
        if (current === root.real || !isPathInsideRoot(root.real, current)) {
          throw new WorkspaceFilesError(
            "file_not_found",
            `the workspace root ${root.real} no longer exists; recreate it or restart the agent`,
            { cause: error },
          );
        }
        missing.unshift(current);
      }
    }
    for (const created of missing) {
      try {
        await mkdir(created);
      } catch (error) {
        if (systemErrorCode(error) !== "EEXIST") {
          throw unexpectedFileSystemError(error, "create the directory", created);
        }
      }
      // Another process may have put a symlink there in the meantime; check it like any path.
      let real: string;
      try {
        real = await realpath(created);
      } catch (error) {
        throw unexpectedFileSystemError(error, "create the directory", created);
      }
      if (real !== created) {
        throw new WorkspaceFilesError(
          "path_outside_root",
          `directory ${created} became a symbolic link to ${real} while ${requested} was being written; nothing was written, check who changes that directory`,
        );
      }
    }
  }

  /**
   * Two phases, so a failure costs as little as possible: every new content is flushed to a
   * temporary file first (a failure there changes nothing), then the renames run back to back.
   * If a rename fails, the files already replaced get their old content back.
   */
  async #replaceAll(plans: EditPlan[]): Promise<void> {
    const prepared: PreparedFile[] = [];
    try {
      for (const plan of plans) {
        prepared.push(await prepareFile(plan.target, Buffer.from(plan.content, "utf8"), plan.mode));
      }
    } catch (error) {
      await Promise.all(prepared.map(discardFile));
      throw unexpectedFileSystemError(error, "write", plans[prepared.length]!.target);
    }
    for (const [index, plan] of plans.entries()) {
      try {
        await commitFile(prepared[index]!, this.#renameFile);
      } catch (error) {
        await Promise.all(prepared.slice(index + 1).map(discardFile));
        const restored = await this.#restore(plans.slice(0, index));
        const failure = unexpectedFileSystemError(error, "replace", plan.target);
        // Only our own messages reach the client; anything else stays in the cause.
        const reason =
          failure instanceof WorkspaceFilesError
            ? failure.message
            : `cannot replace ${plan.target}`;
        throw new WorkspaceFilesError(
          "internal",
          restored.length === index
            ? `${reason}; the files already replaced were restored, so no file was changed`
            : `${reason}; could not restore ${plans
                .slice(0, index)
                .filter((done) => !restored.includes(done))
                .map((done) => done.target)
                .join(", ")}, which now hold the edited content; every other file is unchanged`,
          { cause: error },
        );
      }
    }
  }

  async #restore(plans: EditPlan[]): Promise<EditPlan[]> {
    const restored: EditPlan[] = [];
    for (const plan of plans) {
      try {
        const prepared = await prepareFile(
          plan.target,
          Buffer.from(plan.original, "utf8"),
          plan.mode,
        );
        await commitFile(prepared, this.#renameFile);
        restored.push(plan);
      } catch {
        // Reported by the caller, which names every file left with the edited content.
      }
    }
    return restored;
  }
}
