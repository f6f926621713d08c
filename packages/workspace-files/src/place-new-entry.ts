// One new file or symlink placed inside a directory through the file API's guard, for callers
// other than the file API (a local batch step's `files` and `mount`, under the system's
// temporary directory). The path is resolved with every symlink on the way and must stay inside
// the root; missing directories are created inside their checked parents; the entry is created
// through its open, checked directory with O_EXCL and O_NOFOLLOW, so an existing file, a link
// planted at the name or a directory swapped for a link meanwhile is refused, never written
// through. It is removed the same way.
import { constants } from "node:fs";
import { open, readFile, stat, symlink, unlink } from "node:fs/promises";
import { errnoCode } from "@deckhand/errors";
import { isPathInsideRoot, resolveEntryInsideRoot, workspaceRoot } from "./path-guard.ts";
import { LINUX_DESCRIPTOR_DIRECTORY, probeDescriptorDirectory } from "./pinned-directory.ts";
import { openOrCreateParent } from "./pinned-entry.ts";
import { WorkspaceFilesError } from "./workspace-files-error.ts";

export interface PlaceNewEntryOptions {
  /** The directory the entry must end up inside (really, symlinks resolved). */
  root: string;
  /** Where, relative to the root or absolute and inside it. */
  path: string;
  /** A copy of this file's content (and permission bits), or a symlink pointing at this path. */
  content: { copyOf: string } | { linkTo: string };
  /** As `WorkspaceFilesOptions.descriptorDirectory`: `/proc/self/fd` by default. */
  descriptorDirectory?: string | null;
}

/** An entry `placeNewEntry` created; `remove` deletes it through the same checked directory. */
export interface PlacedEntry {
  /** Its real path. */
  readonly path: string;
  remove(): Promise<void>;
}

// Created, never reused: an existing name (someone else's file, or a link planted there) fails.
const CREATE_FRESH =
  constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

function alreadyExists(path: string, cause: unknown): WorkspaceFilesError {
  return new WorkspaceFilesError(
    "conflict",
    `${path} already exists; nothing was written, so choose a path that does not exist yet`,
    { cause },
  );
}

/**
 * Creates a new file (a copy) or symlink at `path` inside `root`. Throws WorkspaceFilesError:
 * `path_outside_root` when the path, or a symlink anywhere on it, leads outside the root (nothing
 * is created then, not even a directory), `conflict` when something already exists there.
 */
export async function placeNewEntry(options: PlaceNewEntryOptions): Promise<PlacedEntry> {
  const root = await workspaceRoot(options.root);
  // The last component is not followed: whatever is there already (a link included) is refused.
  const target = await resolveEntryInsideRoot(root, options.path);
  const descriptorDirectory =
    options.descriptorDirectory === undefined
      ? LINUX_DESCRIPTOR_DIRECTORY
      : options.descriptorDirectory;
  const confinement = {
    limit: root,
    requested: options.path,
    descriptors: await probeDescriptorDirectory(descriptorDirectory, root.real),
  };
  const { directory, name } = await openOrCreateParent(confinement, target);
  const path = directory.pathOf(name);
  try {
    if ("copyOf" in options.content) {
      const source = options.content.copyOf;
      const [data, mode] = await Promise.all([
        readFile(source),
        stat(source).then((stats) => stats.mode & 0o777),
      ]);
      const handle = await open(directory.entry(name), CREATE_FRESH, mode);
      try {
        await directory.checkOpened(handle);
        await handle.writeFile(data);
        await handle.chmod(mode);
      } catch (error) {
        await handle.close();
        await unlink(directory.entry(name)).catch(() => {});
        throw error;
      }
      await handle.close();
    } else {
      await symlink(options.content.linkTo, directory.entry(name));
      // The link was made through the checked directory; it must still be inside the root.
      const now = await directory.currentPath();
      if (now !== undefined && !isPathInsideRoot(root.real, now)) {
        await unlink(directory.entry(name)).catch(() => {});
        throw new WorkspaceFilesError(
          "conflict",
          `another process moved the directory of ${path} out of ${root.real} while the link was made; it was removed again, retry`,
        );
      }
    }
  } catch (error) {
    await directory.close();
    if (errnoCode(error) === "EEXIST") throw alreadyExists(path, error);
    throw error;
  }
  return {
    path,
    remove: async () => {
      try {
        await unlink(directory.entry(name));
      } catch (error) {
        if (errnoCode(error) !== "ENOENT") throw error;
      } finally {
        await directory.close();
      }
    },
  };
}
