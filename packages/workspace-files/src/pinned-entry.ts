import { lstat, mkdir } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { errnoCode } from "@deckhand/errors";
import { isPathInsideRoot } from "./path-guard.ts";
import { type Confinement, PinnedDirectory } from "./pinned-directory.ts";
import {
  changedMeanwhile,
  unexpectedFileSystemError,
  WorkspaceFilesError,
} from "./workspace-files-error.ts";

/** A directory entry reached through its open, checked directory. */
export interface PinnedEntry {
  directory: PinnedDirectory;
  /** The entry's name in it; `.` when the entry is the limit itself. */
  name: string;
}

/**
 * Opens the directory holding `target` (a path the guard returned) and checks where it
 * really is; the root itself is answered as entry `.` of itself. Throws the file system's
 * error when the directory cannot be opened.
 */
export async function openEntry(confinement: Confinement, target: string): Promise<PinnedEntry> {
  if (target === confinement.limit.real) {
    return { directory: await PinnedDirectory.open(target, confinement), name: "." };
  }
  return {
    directory: await PinnedDirectory.open(dirname(target), confinement),
    name: basename(target),
  };
}

/**
 * Opens the directory `target` goes in, creating missing directories top-down: each is made
 * inside its checked parent and opened by name without following a link, so none can land
 * outside the root. A removed root is not recreated.
 */
export async function openOrCreateParent(
  confinement: Confinement,
  target: string,
): Promise<PinnedEntry> {
  const { limit, requested } = confinement;
  if (target === limit.real) return openEntry(confinement, target);
  const missing: string[] = [];
  let directory: PinnedDirectory;
  for (let current = dirname(target); ; current = dirname(current)) {
    try {
      directory = await PinnedDirectory.open(current, confinement);
      break;
    } catch (error) {
      if (error instanceof WorkspaceFilesError) throw error;
      const code = errnoCode(error);
      if (code !== "ENOENT" && code !== "ENOTDIR") {
        throw unexpectedFileSystemError(error, "create the directory", current);
      }
      // Creating the root itself would quietly recreate a workspace that was removed.
      if (current === limit.real || !isPathInsideRoot(limit.real, current)) {
        throw new WorkspaceFilesError(
          "file_not_found",
          `the workspace root ${limit.real} no longer exists; recreate it or restart the agent`,
          { cause: error },
        );
      }
      missing.unshift(basename(current));
    }
  }
  for (const name of missing) {
    const created = directory.pathOf(name);
    try {
      try {
        await mkdir(directory.entry(name));
      } catch (error) {
        if (errnoCode(error) !== "EEXIST") throw error;
      }
      const child = await directory.child(name);
      await directory.close();
      directory = child;
    } catch (error) {
      if (error instanceof WorkspaceFilesError) {
        await directory.close();
        throw error;
      }
      const code = errnoCode(error);
      // A link refused by O_NOFOLLOW gives ENOTDIR rather than ELOOP along with O_DIRECTORY.
      const isLink =
        code === "ENOTDIR" &&
        (await lstat(directory.entry(name)).then(
          (stats) => stats.isSymbolicLink(),
          () => false,
        ));
      await directory.close();
      if (code === "ENOTDIR" && !isLink) {
        throw new WorkspaceFilesError(
          "not_a_file",
          `${created} is a file, so "${requested}" cannot be created below it; choose another path or remove that file first`,
        );
      }
      if (code === "ELOOP" || isLink) {
        throw changedMeanwhile(
          "create the directory",
          created,
          "it became a symbolic link, which is never followed there; nothing was written",
          error,
        );
      }
      throw unexpectedFileSystemError(error, "create the directory", created);
    }
  }
  return { directory, name: basename(target) };
}
