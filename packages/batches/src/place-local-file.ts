// A local step has no container to mount `files` and `mount` into, so they are placed on this
// machine at the path the spec gives. Only paths inside the system's temporary directory are
// allowed (the common `/tmp/script.py`), never an existing file, so a spec cannot overwrite
// anything; steps of workspaces running side by side that use the same path take turns. Files
// are placed through the file API's guard (@deckhand/workspace-files `placeNewEntry`): a
// symlink anywhere on the path that leads out of the temporary directory is refused, and the
// file is created through its checked, open directory, never through a link.
import { tmpdir } from "node:os";
import { isAbsolute, resolve } from "node:path";
import { type PlacedEntry, placeNewEntry, WorkspaceFilesError } from "@deckhand/workspace-files";
import { BatchesError } from "./batches-error.ts";

const holders = new Map<string, Promise<void>>();

function refused(
  target: string,
  stepIndex: number,
  temporaryDirectory: string,
  error: unknown,
): unknown {
  if (!WorkspaceFilesError.isInstance(error)) return error;
  if (error.code === "path_outside_root") {
    return new BatchesError(
      "invalid_step_file",
      `step ${stepIndex} places ${target}, which a local run can only create inside ${temporaryDirectory}, and it leads outside (by its own path, or through a symbolic link on the way): use a path there whose directories are not links elsewhere, or run the step in a container`,
      { cause: error },
    );
  }
  if (error.code === "conflict") {
    return new BatchesError(
      "invalid_step_file",
      `step ${stepIndex} places ${target}, which already exists on this machine; a local run never overwrites a file: choose another path`,
      { cause: error },
    );
  }
  return error;
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
  if (!isAbsolute(target)) {
    throw new BatchesError(
      "invalid_step_file",
      `step ${stepIndex} places ${target}, which a local run can only create inside ${temporaryDirectory}; use an absolute path there or run the step in a container`,
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
  let placed: PlacedEntry;
  try {
    placed = await placeNewEntry({
      root: temporaryDirectory,
      path,
      content: kind === "copy" ? { copyOf: source } : { linkTo: source },
    });
  } catch (error) {
    holders.delete(path);
    release();
    throw refused(target, stepIndex, temporaryDirectory, error);
  }
  return async () => {
    try {
      await placed.remove();
    } finally {
      holders.delete(path);
      release();
    }
  };
}
