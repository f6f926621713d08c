import { constants } from "node:fs";
import { type FileHandle, open, readlink } from "node:fs/promises";
import { join } from "node:path";
import { isPathInsideRoot, type WorkspaceRoot } from "./path-guard.ts";
import { WorkspaceFilesError } from "./workspace-files-error.ts";

/**
 * Where Linux lists this process's open descriptors: `<directory>/<fd>` is a link to the real
 * path of what the descriptor opened, and `<directory>/<fd>/<name>` reaches `name` inside that
 * very directory, wherever it has been moved and whatever its old path now leads to.
 */
export const LINUX_DESCRIPTOR_DIRECTORY = "/proc/self/fd";

/** Linux appends this to the link of a descriptor whose file or directory was removed. */
const REMOVED_SUFFIX = " (deleted)";

// Not every platform defines it (Windows); opening then simply does not insist on a directory.
const O_DIRECTORY = constants.O_DIRECTORY ?? 0;

/** Probes already run, by descriptor directory: the answer is the same for every root. */
const probes = new Map<string, Promise<string | null>>();

/**
 * `directory` when it really lists this process's descriptors by real path (checked once per
 * process by opening `probe`, an existing directory, and reading its link back), `null`
 * otherwise: no such directory (macOS, Windows, a container without /proc) or it was turned
 * off.
 */
export function probeDescriptorDirectory(
  directory: string | null,
  probe: string,
): Promise<string | null> {
  if (directory === null) return Promise.resolve(null);
  let probed = probes.get(directory);
  if (probed === undefined) {
    probed = probeOnce(directory, probe);
    probes.set(directory, probed);
  }
  return probed;
}

async function probeOnce(directory: string, probe: string): Promise<string | null> {
  try {
    const handle = await open(probe, constants.O_RDONLY | O_DIRECTORY);
    try {
      return (await readlink(`${directory}/${handle.fd}`)) === probe ? directory : null;
    } finally {
      await handle.close();
    }
  } catch {
    return null;
  }
}

/** What every descriptor opened for one request is held to. */
export interface Confinement {
  /** The directory every opened file and directory must really be inside. */
  limit: WorkspaceRoot;
  /** The path the request named, for messages. */
  requested: string;
  /** From `probeDescriptorDirectory`; `null` means descriptors cannot be checked. */
  descriptors: string | null;
}

/**
 * The real path of what `handle` opened, checked to be inside the limit; `undefined` when
 * descriptors cannot be checked on this platform.
 */
async function checkDescriptor(
  handle: FileHandle,
  confinement: Confinement,
): Promise<string | undefined> {
  if (confinement.descriptors === null) return undefined;
  const real = await readlink(`${confinement.descriptors}/${handle.fd}`);
  if (isPathInsideRoot(confinement.limit.real, real)) return real;
  // A removed entry is named by its last path plus a suffix, so one removed inside the root
  // is still inside; the suffix is never stripped, or an outside directory literally named
  // "<root> (deleted)" would pass.
  if (real.endsWith(REMOVED_SUFFIX)) {
    throw new WorkspaceFilesError(
      "conflict",
      `"${confinement.requested}" was removed by another process while it was being opened; nothing was read or changed, retry`,
    );
  }
  throw new WorkspaceFilesError(
    "path_outside_root",
    `path "${confinement.requested}" led to ${real}, outside the workspace root ${confinement.limit.real}, once opened: a directory on it was moved or replaced by a symbolic link after the path was checked, so nothing was read or changed; the file API only reaches files inside the root`,
  );
}

/**
 * An open directory whose real path was checked to be inside the limit. Names inside it are
 * reached through its descriptor (`entry`), so a directory on its old path being swapped for
 * a link afterwards cannot redirect them: the classic `openat` defence, which Node offers only
 * through the descriptor directory. Without one, entries are plain paths and nothing is
 * rechecked (the behaviour before descriptors were checked).
 */
export class PinnedDirectory {
  readonly #handle: FileHandle;
  readonly #confinement: Confinement;
  /** Its real path when it was opened; answers and messages name entries below it. */
  readonly real: string;

  private constructor(handle: FileHandle, confinement: Confinement, real: string) {
    this.#handle = handle;
    this.#confinement = confinement;
    this.real = real;
  }

  /**
   * Opens the directory `path` (already checked by the path guard) and checks where it really
   * is. Throws the file system's error when it cannot be opened (ENOENT, ENOTDIR, ELOOP with
   * `O_NOFOLLOW` in `flags`), `path_outside_root` when it is outside the limit.
   */
  static async open(path: string, confinement: Confinement, flags = 0): Promise<PinnedDirectory> {
    const handle = await open(path, constants.O_RDONLY | O_DIRECTORY | flags);
    try {
      return new PinnedDirectory(
        handle,
        confinement,
        (await checkDescriptor(handle, confinement)) ?? path,
      );
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** A path that reaches `name` in this very directory (`.` is the directory itself). */
  entry(name: string): string {
    if (this.#confinement.descriptors === null) return this.pathOf(name);
    return `${this.#confinement.descriptors}/${this.#handle.fd}/${name}`;
  }

  /** `name`'s real path as of opening, for answers and messages. */
  pathOf(name: string): string {
    return name === "." ? this.real : join(this.real, name);
  }

  /** The subdirectory `name`, never through a link: a link there fails with ELOOP. */
  child(name: string): Promise<PinnedDirectory> {
    return PinnedDirectory.open(this.entry(name), this.#confinement, constants.O_NOFOLLOW);
  }

  /** Throws `path_outside_root` when this directory has been moved out of the limit since. */
  async check(): Promise<void> {
    await checkDescriptor(this.#handle, this.#confinement);
  }

  /** Throws `path_outside_root` when `handle`, opened through `entry`, is not inside the limit. */
  async checkOpened(handle: FileHandle): Promise<void> {
    await checkDescriptor(handle, this.#confinement);
  }

  /** Where this directory is now, or `undefined` when descriptors cannot be checked. */
  async currentPath(): Promise<string | undefined> {
    if (this.#confinement.descriptors === null) return undefined;
    return readlink(`${this.#confinement.descriptors}/${this.#handle.fd}`);
  }

  /** Flushes entry changes (a rename), so they survive a power loss. */
  async sync(): Promise<void> {
    try {
      await this.#handle.sync();
    } catch {
      // Some file systems cannot fsync a directory; the data itself is already on disk.
    }
  }

  async close(): Promise<void> {
    await this.#handle.close().catch(() => {});
  }
}
