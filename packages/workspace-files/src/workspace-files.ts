import { constants, type Stats } from "node:fs";
import { type FileHandle, lstat, open, unlink } from "node:fs/promises";
import { errnoCode } from "@deckhand/errors";
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
} from "./atomic-write.ts";
import {
  isPathInsideRoot,
  resolveEntryInsideRoot,
  resolveInsideRoot,
  resolveSubRoot,
  type WorkspaceRoot,
  workspaceRootSync,
} from "./path-guard.ts";
import {
  type Confinement,
  LINUX_DESCRIPTOR_DIRECTORY,
  probeDescriptorDirectory,
} from "./pinned-directory.ts";
import { openEntry, openOrCreateParent, type PinnedEntry } from "./pinned-entry.ts";
import { BINARY_SNIFF_BYTES, readLineWindow } from "./read-lines.ts";
import {
  changedMeanwhile,
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
  /**
   * Where the kernel lists this process's open descriptors as links to their real paths
   * (default `/proc/self/fd`, Linux). Every directory and file the API opens is checked there
   * to be inside the root, and names are then reached through the open directory, so a process
   * swapping a directory for a link mid-request cannot redirect a read or write. When it does
   * not exist (macOS, Windows, no /proc mounted) or is `null`, those checks are skipped and
   * only the path guard applies.
   */
  descriptorDirectory?: string | null;
}

interface EditPlan extends PinnedEntry {
  target: string;
  original: string;
  content: string;
  mode: number;
}

interface OpenedFile extends PinnedEntry {
  handle: FileHandle;
  stats: Stats;
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

interface ReadHints {
  directory: string;
  special: string;
  missing: string;
}

/** What a reader sees for a failure while opening a file to read or edit. */
function readFailure(requested: string, path: string, hints: ReadHints, error: unknown): unknown {
  if (error instanceof WorkspaceFilesError) return error;
  const code = errnoCode(error);
  if (code === "ENOENT" || code === "ENOTDIR") {
    return fileNotFound(requested, path, hints.missing, error);
  }
  return unexpectedFileSystemError(error, "read", path);
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
 * `resolveWorkspacePath`) and every descriptor opened for it is checked to be inside it too
 * (see `PinnedDirectory`); reads are bounded, and writes replace files atomically.
 */
export class WorkspaceFiles {
  /** The root's real path; every path this instance touches is inside it. */
  readonly root: string;
  readonly maxReadBytes: number;
  readonly #root: WorkspaceRoot;
  readonly #renameFile: RenameFile | undefined;
  readonly #descriptorDirectory: string | null;
  #descriptors: Promise<string | null> | undefined;

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
    this.#descriptorDirectory =
      options.descriptorDirectory === undefined
        ? LINUX_DESCRIPTOR_DIRECTORY
        : options.descriptorDirectory;
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

  /** What descriptors opened for `requested` are held to; the platform is probed once. */
  async #confinement(limit: WorkspaceRoot, requested: string): Promise<Confinement> {
    this.#descriptors ??= probeDescriptorDirectory(this.#descriptorDirectory, this.#root.real);
    return { limit, requested, descriptors: await this.#descriptors };
  }

  /**
   * Opens `target` for reading, through its checked directory and never through a link, checks
   * the file's own descriptor is inside the limit, and turns what goes wrong into the errors a
   * reader sees; `hints` say what to do instead. The caller closes the handle and directory.
   */
  async #openRegularFile(
    limit: WorkspaceRoot,
    requested: string,
    target: string,
    hints: ReadHints,
  ): Promise<OpenedFile> {
    let entry: PinnedEntry;
    try {
      entry = await openEntry(await this.#confinement(limit, requested), target);
    } catch (error) {
      throw readFailure(requested, target, hints, error);
    }
    const { directory, name } = entry;
    const path = directory.pathOf(name);
    try {
      const before = await lstat(directory.entry(name));
      if (before.isDirectory()) throw notAFile(requested, path, "a directory", hints.directory);
      if (before.isSymbolicLink()) {
        throw changedMeanwhile("read", path, "it became a symbolic link after it was checked");
      }
      if (!before.isFile()) throw notAFile(requested, path, "a special file", hints.special);
      // O_NOFOLLOW refuses a link swapped in since the lstat, and O_NONBLOCK keeps a FIFO
      // swapped in from blocking the request.
      const handle = await open(
        directory.entry(name),
        constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
      );
      try {
        const stats = await handle.stat();
        if (!stats.isFile()) {
          throw notAFile(requested, path, "not a regular file", "only regular files can be read");
        }
        await directory.checkOpened(handle);
        return { directory, name, handle, stats };
      } catch (error) {
        await handle.close();
        throw error;
      }
    } catch (error) {
      await directory.close();
      throw readFailure(requested, path, hints, error);
    }
  }

  /**
   * Returns a window of lines: from `offset` (1-based, default 1), at most `limit` lines, at
   * most min(`max_bytes`, maxReadBytes) bytes, cut after a whole line when one fits.
   */
  async read(input: ReadFileRequest): Promise<ReadFileResponse> {
    const request = parseRequest(ReadFileRequestSchema, input);
    const limit = await this.#rootFor(request.root);
    const target = await resolveInsideRoot(limit, request.path);
    const { directory, name, handle, stats } = await this.#openRegularFile(
      limit,
      request.path,
      target,
      {
        directory: "read a file inside it, or list it with a process such as `ls`",
        special: "only regular files can be read",
        missing: "check the path, or list the directory with a process such as `ls`",
      },
    );
    const path = directory.pathOf(name);
    await directory.close();
    try {
      const offset = request.offset ?? 1;
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
        size_bytes: stats.size,
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
    const limit = await this.#rootFor(request.root);
    const target = await resolveInsideRoot(limit, request.path);
    const { directory, name } = await openOrCreateParent(
      await this.#confinement(limit, request.path),
      target,
    );
    const path = directory.pathOf(name);
    try {
      let mode: number | undefined;
      try {
        const stats = await lstat(directory.entry(name));
        if (stats.isDirectory()) {
          throw notAFile(
            request.path,
            path,
            "a directory",
            "write to a file path inside it instead",
          );
        }
        if (stats.isSymbolicLink()) {
          throw changedMeanwhile("write", path, "it became a symbolic link after it was checked");
        }
        if (!stats.isFile()) {
          throw notAFile(request.path, path, "a special file", "only regular files can be written");
        }
        mode = stats.mode & 0o7777;
      } catch (error) {
        if (error instanceof WorkspaceFilesError) throw error;
        if (errnoCode(error) !== "ENOENT") {
          throw unexpectedFileSystemError(error, "write", path);
        }
      }
      const data = Buffer.from(request.content, "utf8");
      try {
        await commitFile(await prepareFile(directory, name, data, mode), this.#renameFile);
      } catch (error) {
        throw unexpectedFileSystemError(error, "write", path);
      }
      await checkNotMovedOut([{ directory, name }], limit);
      return { path, bytes_written: data.length, created: mode === undefined };
    } finally {
      await directory.close();
    }
  }

  /**
   * Applies search/replace edits to one or more files, all or nothing: every new content is
   * computed before anything is written, and any failing edit means no file changes.
   */
  async edit(input: EditFilesRequest): Promise<EditFilesResponse> {
    const request = parseRequest(EditFilesRequestSchema, input);
    const limit = await this.#rootFor(request.root);
    // Keyed by real path, so two spellings of one file edit one evolving content.
    const plans = new Map<string, EditPlan>();
    try {
      const results: EditFilesResponse["files"] = [];
      const failures: string[] = [];
      for (const [fileIndex, file] of request.files.entries()) {
        const target = await resolveInsideRoot(limit, file.path);
        let plan = plans.get(target);
        if (plan === undefined) {
          const { text, mode, directory, name } = await this.#readForEdit(limit, file.path, target);
          plan = { directory, name, target, original: text, content: text, mode };
          plans.set(target, plan);
        }
        const path = plan.directory.pathOf(plan.name);
        for (const [editIndex, edit] of file.edits.entries()) {
          const { count, first } = matchPositions(plan.content, edit.search);
          if (count !== 1) {
            failures.push(
              `files[${fileIndex}].edits[${editIndex}] on ${describePath(file.path, path)}: the search text matches ${count} times, it must match exactly once; ${
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
        results.push({ path, edits_applied: file.edits.length });
      }
      if (failures.length > 0) {
        throw new WorkspaceFilesError("edit_failed", `no file was changed: ${failures.join("; ")}`);
      }
      const changed = [...plans.values()].filter((plan) => plan.content !== plan.original);
      await this.#replaceAll(changed);
      await checkNotMovedOut(changed, limit);
      return { files: results };
    } finally {
      await Promise.all([...plans.values()].map((plan) => plan.directory.close()));
    }
  }

  /**
   * Removes one file. A missing file is answered `deleted: false` rather than refused, so a
   * retried or repeated delete is harmless; a directory is refused (`not_a_file`). The last
   * component is not followed: deleting a symlink removes the link, never what it points to,
   * so a link whose target lies outside the root can still be removed safely.
   */
  async delete(input: DeleteFileRequest): Promise<DeleteFileResponse> {
    const request = parseRequest(DeleteFileRequestSchema, input);
    const limit = await this.#rootFor(request.root);
    const target = await resolveEntryInsideRoot(limit, request.path);
    const directoryHint =
      "delete the files inside it one by one, or remove it with a process such as `rm -r`";
    let entry: PinnedEntry;
    try {
      entry = await openEntry(await this.#confinement(limit, request.path), target);
    } catch (error) {
      if (error instanceof WorkspaceFilesError) throw error;
      const code = errnoCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") return { path: target, deleted: false };
      throw unexpectedFileSystemError(error, "delete", target);
    }
    const { directory, name } = entry;
    const path = directory.pathOf(name);
    try {
      let stats: Stats;
      try {
        stats = await lstat(directory.entry(name));
      } catch (error) {
        const code = errnoCode(error);
        if (code === "ENOENT" || code === "ENOTDIR") return { path, deleted: false };
        throw unexpectedFileSystemError(error, "delete", path);
      }
      if (stats.isDirectory()) throw notAFile(request.path, path, "a directory", directoryHint);
      try {
        await unlink(directory.entry(name));
      } catch (error) {
        const code = errnoCode(error);
        // Removed, or replaced by a directory, since the lstat above.
        if (code === "ENOENT") return { path, deleted: false };
        if (code === "EISDIR") throw notAFile(request.path, path, "a directory", directoryHint);
        throw unexpectedFileSystemError(error, "delete", path);
      }
      await directory.sync();
      return { path, deleted: true };
    } finally {
      await directory.close();
    }
  }

  async #readForEdit(
    limit: WorkspaceRoot,
    requested: string,
    target: string,
  ): Promise<PinnedEntry & { text: string; mode: number }> {
    const hints = {
      directory: "edit files inside it one by one",
      special: "only regular files can be edited",
      missing: "edit only changes existing files; create it with write",
    };
    const opened = await this.#openRegularFile(limit, requested, target, hints);
    const { directory, name, handle, stats } = opened;
    const path = directory.pathOf(name);
    try {
      let bytes: Buffer;
      try {
        bytes = await handle.readFile();
      } catch (error) {
        throw readFailure(requested, path, hints, error);
      } finally {
        await handle.close();
      }
      if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)) {
        throw binaryFile(
          requested,
          path,
          `looks binary (it has a NUL byte in its first ${BINARY_SNIFF_BYTES / 1024} KiB)`,
        );
      }
      let text: string;
      try {
        text = strictUtf8.decode(bytes);
      } catch (error) {
        // Decoding and re-encoding invalid UTF-8 would silently rewrite the bytes edits do not touch.
        throw binaryFile(requested, path, "is not valid UTF-8", error);
      }
      return { directory, name, text, mode: stats.mode & 0o7777 };
    } catch (error) {
      await directory.close();
      throw error;
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
        prepared.push(
          await prepareFile(
            plan.directory,
            plan.name,
            Buffer.from(plan.content, "utf8"),
            plan.mode,
          ),
        );
      }
    } catch (error) {
      await Promise.all(prepared.map(discardFile));
      const failed = plans[prepared.length]!;
      throw unexpectedFileSystemError(error, "write", failed.directory.pathOf(failed.name));
    }
    for (const [index, plan] of plans.entries()) {
      try {
        await commitFile(prepared[index]!, this.#renameFile);
      } catch (error) {
        await Promise.all(prepared.slice(index + 1).map(discardFile));
        const restored = await this.#restore(plans.slice(0, index));
        const failure = unexpectedFileSystemError(
          error,
          "replace",
          plan.directory.pathOf(plan.name),
        );
        // Only our own messages reach the client; anything else stays in the cause.
        const known = failure instanceof WorkspaceFilesError;
        const reason = known ? failure.message : `cannot replace ${plan.target}`;
        throw new WorkspaceFilesError(
          known ? failure.code : "internal",
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
          plan.directory,
          plan.name,
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

/**
 * After the renames: a directory moved out of the limit between its last check and the rename
 * received the new file there. That cannot be undone, only reported, and it is reported as a
 * conflict so the caller knows the file is not where it asked.
 */
async function checkNotMovedOut(entries: PinnedEntry[], limit: WorkspaceRoot): Promise<void> {
  const moved: string[] = [];
  for (const { directory, name } of entries) {
    const now = await directory.currentPath().catch(() => undefined);
    if (now !== undefined && !isPathInsideRoot(limit.real, now)) {
      moved.push(`${directory.pathOf(name)} (its directory is now ${now})`);
    }
  }
  if (moved.length > 0) {
    throw new WorkspaceFilesError(
      "conflict",
      `another process moved a directory out of the workspace root ${limit.real} while the request ran, so the new content of ${moved.join(", ")} was written there, outside the root; check what moves directories in the workspace`,
    );
  }
}
