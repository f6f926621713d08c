import { randomBytes } from "node:crypto";
import { open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

export type RenameFile = (from: string, to: string) => Promise<void>;

/**
 * A hidden name next to the target, so the rename stays on one file system (and is atomic),
 * and leftovers from a crash are recognisable. The target's name is shortened so the temp
 * name stays under the usual 255-byte limit.
 */
export function temporaryPathFor(target: string): string {
  const name = Buffer.from(basename(target)).subarray(0, 100).toString();
  return join(dirname(target), `.${name}.deckhand-${randomBytes(6).toString("hex")}.tmp`);
}

export interface PreparedFile {
  temporaryPath: string;
  target: string;
}

/**
 * Writes `data` to a fresh temporary file beside `target` and flushes it to disk; the target
 * is not touched yet. `mode` is the target's current mode when it exists, so replacing a file
 * keeps it executable or private. On failure the temporary file is removed.
 */
export async function prepareFile(
  target: string,
  data: Buffer,
  mode: number | undefined,
): Promise<PreparedFile> {
  const temporaryPath = temporaryPathFor(target);
  // "wx" fails if the name exists, so the temp file is never someone else's file or link.
  const handle = await open(temporaryPath, "wx", mode ?? 0o666);
  try {
    await handle.writeFile(data);
    // The open mode is filtered by the umask; an explicit chmod restores the exact old mode.
    if (mode !== undefined) await handle.chmod(mode);
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => {});
    await rm(temporaryPath, { force: true });
    throw error;
  }
  try {
    await handle.close();
  } catch (error) {
    await rm(temporaryPath, { force: true });
    throw error;
  }
  return { temporaryPath, target };
}

/** Flushes a directory entry change (the rename), so it survives a power loss. */
export async function syncDirectory(directory: string): Promise<void> {
  try {
    const handle = await open(directory, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Some file systems cannot fsync a directory; the data itself is already on disk.
  }
}

/** Moves a prepared file over its target; the temporary file is removed if that fails. */
export async function commitFile(
  prepared: PreparedFile,
  renameFile: RenameFile = rename,
): Promise<void> {
  try {
    await renameFile(prepared.temporaryPath, prepared.target);
  } catch (error) {
    await rm(prepared.temporaryPath, { force: true });
    throw error;
  }
  await syncDirectory(dirname(prepared.target));
}

export async function discardFile(prepared: PreparedFile): Promise<void> {
  await rm(prepared.temporaryPath, { force: true });
}
