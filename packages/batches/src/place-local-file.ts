// A local step has no container to mount `files` and `mount` into, so they are placed on this
// machine at the path the spec gives. Only paths inside the system's temporary directory are
// allowed (the common `/tmp/script.py`), never an existing file, so a spec cannot overwrite
// anything; steps of workspaces running side by side that use the same path take turns.
import { constants } from "node:fs";
import { copyFile, mkdir, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, relative, resolve } from "node:path";
import { errnoCode } from "@deckhand/errors";
import { BatchesError } from "./batches-error.ts";

const holders = new Map<string, Promise<void>>();

function inside(directory: string, path: string): boolean {
  const inner = relative(directory, path);
  return inner !== "" && !inner.startsWith("..") && !isAbsolute(inner);
}

/**
 * Puts `source` at `target` until the returned release is called: a copy for a step's `files`
 * (written to a private temporary file first), a symlink for a `mount` from the spec directory.
 */
export async function placeLocalFile(
  target: string,
  source: string,
  stepIndex: number,
  kind: "copy" | "link" = "copy",
): Promise<() => Promise<void>> {
  const path = resolve(target);
  const temporaryDirectory = resolve(tmpdir());
  if (!isAbsolute(target) || !inside(temporaryDirectory, path)) {
    throw new BatchesError(
      "invalid_step_file",
      `step ${stepIndex} places ${target}, which a local run can only create inside ${temporaryDirectory}; use a path there or run the step in a container`,
    );
  }
  // Wait for any other step using the same path, then hold it.
  while (holders.has(path)) await holders.get(path);
  let release!: () => void;
  holders.set(
    path,
    new Promise((resolvePromise) => {
      release = resolvePromise;
    }),
  );
  const free = async () => {
    await rm(path, { force: true });
    holders.delete(path);
    release();
  };
  try {
    await mkdir(dirname(path), { recursive: true });
    if (kind === "copy") await copyFile(source, path, constants.COPYFILE_EXCL);
    else await symlink(source, path);
  } catch (error) {
    holders.delete(path);
    release();
    if (errnoCode(error) === "EEXIST") {
      throw new BatchesError(
        "invalid_step_file",
        `step ${stepIndex} places ${target}, which already exists on this machine; a local run never overwrites a file: choose another path`,
      );
    }
    throw error;
  }
  return free;
}
