import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import type { PinnedDirectory } from "./pinned-directory.ts";

export type RenameFile = (from: string, to: string) => Promise<void>;

/**
 * A hidden name next to the target, so the rename stays on one file system (and is atomic),
 * and leftovers from a crash are recognisable. The target's name is shortened so the temp
 * name stays under the usual 255-byte limit.
 */
export function temporaryNameFor(name: string): string {
  const shortened = Buffer.from(name).subarray(0, 100).toString();
  return `.${shortened}.deckhand-${randomBytes(6).toString("hex")}.tmp`;
}

export interface PreparedFile {
  directory: PinnedDirectory;
  temporaryName: string;
  name: string;
}

// Created, never reused: an existing name (someone else's file, or a link planted there) fails.
const CREATE_FRESH =
  constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Writes `data` to a fresh temporary file beside `name` in `directory` and flushes it to disk;
 * the target is not touched yet. The temporary file is created through the pinned directory and
 * checked to be inside the limit before a byte is written. `mode` is the target's current mode
 * when it exists, so replacing a file keeps it executable or private. On failure the temporary
 * file is removed, through the same directory, wherever that directory now is.
 */
export async function prepareFile(
  directory: PinnedDirectory,
  name: string,
  data: Buffer,
  mode: number | undefined,
): Promise<PreparedFile> {
  const temporaryName = temporaryNameFor(name);
  const handle = await open(directory.entry(temporaryName), CREATE_FRESH, mode ?? 0o666);
  try {
    await directory.checkOpened(handle);
    await handle.writeFile(data);
    // The open mode is filtered by the umask; an explicit chmod restores the exact old mode.
    if (mode !== undefined) await handle.chmod(mode);
    await handle.sync();
    await handle.close();
  } catch (error) {
    await handle.close().catch(() => {});
    await rm(directory.entry(temporaryName), { force: true });
    throw error;
  }
  return { directory, temporaryName, name };
}

/**
 * Moves a prepared file over its target, both named inside the pinned directory, so the
 * rename cannot be redirected through a link swapped in on the directory's path; the directory
 * is checked to still be inside the limit just before. The temporary file is removed if that
 * fails.
 */
export async function commitFile(
  prepared: PreparedFile,
  renameFile: RenameFile = rename,
): Promise<void> {
  const { directory } = prepared;
  try {
    await directory.check();
    await renameFile(directory.entry(prepared.temporaryName), directory.entry(prepared.name));
  } catch (error) {
    await discardFile(prepared);
    throw error;
  }
  await directory.sync();
}

export async function discardFile(prepared: PreparedFile): Promise<void> {
  await rm(prepared.directory.entry(prepared.temporaryName), { force: true });
}
