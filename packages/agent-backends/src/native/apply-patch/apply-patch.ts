import { errorMessage } from "@deckhand/errors";
import type { FileClient } from "@deckhand/workspace-files";
import { AgentBackendError } from "../../errors.ts";
import { resolveWorktreePath, worktreeRelative } from "../safety/worktree-path.ts";
import { applyChunks } from "./compute-update.ts";
import { type PatchOperation, parsePatch } from "./parse-patch.ts";
import { deleteFile, fromWorkspaceError, readWholeFile } from "./workspace-io.ts";

/** What one file of a patch came to. Paths are relative to the worktree. */
export interface PatchFileChange {
  kind: "add" | "update" | "delete";
  path: string;
  /** For an update with `*** Move to:`, where the file went. */
  movedTo: string | null;
}

/** A file before and after a whole patch; null content means the file does not exist. */
export interface PatchFileState {
  /** Absolute path inside the worktree, as the patch named it. */
  path: string;
  original: string | null;
  final: string | null;
}

export interface PatchPlan {
  changes: PatchFileChange[];
  /** Every file the patch touches, in the order first touched; unchanged files included. */
  files: PatchFileState[];
}

/** Reads a file's current content (null when missing); `path` is absolute. */
export type PatchFileReader = (path: string) => Promise<string | null>;

/**
 * Works out what a parsed patch does without changing anything: every file is read once, each
 * operation applies to the content the earlier ones left, and any hunk or file that does not
 * fit throws AgentBackendError (`patch_mismatch`, `path_outside_worktree`) before anything is
 * written.
 */
export async function planPatch(
  operations: readonly PatchOperation[],
  worktreeRoot: string,
  read: PatchFileReader,
): Promise<PatchPlan> {
  if (operations.length === 0) {
    throw new AgentBackendError(
      "patch_mismatch",
      "the patch has no file operations; add '*** Add File:', '*** Update File:' or '*** Delete File:' sections",
    );
  }
  const states = new Map<string, PatchFileState>();
  const current = async (path: string): Promise<PatchFileState> => {
    let state = states.get(path);
    if (state === undefined) {
      const original = await read(path);
      state = { path, original, final: original };
      states.set(path, state);
    }
    return state;
  };
  const resolvePath = (path: string) => resolveWorktreePath(worktreeRoot, path);
  const changes: PatchFileChange[] = [];
  for (const operation of operations) {
    const path = resolvePath(operation.path);
    const relative = worktreeRelative(worktreeRoot, path);
    const where = `'${operation.path}' (patch line ${operation.line})`;
    if (operation.kind === "add") {
      // Like Codex, adding a file that exists replaces it.
      (await current(path)).final = operation.contents;
      changes.push({ kind: "add", path: relative, movedTo: null });
      continue;
    }
    const state = await current(path);
    if (state.final === null) {
      throw new AgentBackendError(
        "patch_mismatch",
        `cannot ${operation.kind} ${where}: the file does not exist${state.original !== null ? " any more (an earlier part of this patch removed it)" : ""}; check the path${operation.kind === "update" ? ", or use '*** Add File:' to create it" : ""}. No file was changed.`,
      );
    }
    if (operation.kind === "delete") {
      state.final = null;
      changes.push({ kind: "delete", path: relative, movedTo: null });
      continue;
    }
    const updated = applyChunks(state.final, operation.chunks, operation.path);
    if (operation.moveTo === null) {
      state.final = updated;
      changes.push({ kind: "update", path: relative, movedTo: null });
      continue;
    }
    const destination = resolvePath(operation.moveTo);
    if (destination === path) {
      state.final = updated;
    } else {
      state.final = null;
      (await current(destination)).final = updated;
    }
    changes.push({
      kind: "update",
      path: relative,
      movedTo: worktreeRelative(worktreeRoot, destination),
    });
  }
  return { changes, files: [...states.values()] };
}

export interface ApplyPatchOptions {
  /**
   * Every read, write and delete goes through it; built with the worktree as its `root`, so the
   * workspace agent confines them to the worktree, symlinks resolved.
   */
  files: FileClient;
  worktreeRoot: string;
  /** Checked until the first write; once writing starts the patch is finished or undone. */
  signal?: AbortSignal | undefined;
}

export interface ApplyPatchResult {
  changes: PatchFileChange[];
  /** Codex-style: `A path`, `M path`, `M from -> to`, `D path`, one line each. */
  summary: string;
}

interface Committed {
  state: PatchFileState;
  /**
   * Where to undo it: the agent's real path of a written file, or the path the patch named for
   * a deleted one (the file API deletes a symlink itself, so that is what went).
   */
  realPath: string;
}

function summarize(changes: readonly PatchFileChange[]): string {
  const lines = changes.map((change) => {
    if (change.kind === "add") return `A ${change.path}`;
    if (change.kind === "delete") return `D ${change.path}`;
    return change.movedTo === null ? `M ${change.path}` : `M ${change.path} -> ${change.movedTo}`;
  });
  return `Success. Updated the following files:\n${lines.join("\n")}`;
}

/**
 * Applies a patch in the Codex apply_patch format through the workspace agent, all or nothing:
 * every affected file is read and every hunk checked before the first write, and if a write or
 * delete fails, what was already done is undone.
 */
export async function applyPatch(
  patch: string,
  options: ApplyPatchOptions,
): Promise<ApplyPatchResult> {
  const operations = parsePatch(patch);
  const plan = await planPatch(operations, options.worktreeRoot, async (path) => {
    if (options.signal?.aborted) {
      throw new AgentBackendError("aborted", "the patch was interrupted before any file changed");
    }
    const file = await readWholeFile(options.files, path);
    if (file === null) return null;
    return file.content;
  });
  if (options.signal?.aborted) {
    throw new AgentBackendError("aborted", "the patch was interrupted before any file changed");
  }
  const changed = plan.files.filter((state) => state.final !== state.original);
  const writes = changed.filter((state) => state.final !== null);
  const deletes = changed.filter((state) => state.final === null);
  const committed: Committed[] = [];
  try {
    for (const state of writes) {
      const written = await options.files
        .write({ path: state.path, content: state.final! })
        .catch((error: unknown) => {
          throw fromWorkspaceError(error, `write ${state.path}`);
        });
      committed.push({ state, realPath: written.path });
    }
    for (const state of deletes) {
      // The named path, not the file a symlink leads to: deleting `link.txt` removes the link,
      // as `git apply` and Codex do, rather than a file the patch never named.
      await deleteFile(options.files, state.path);
      committed.push({ state, realPath: state.path });
    }
  } catch (error) {
    const notRestored = await rollBack(committed, options);
    const reason = errorMessage(error);
    throw new AgentBackendError(
      "patch_apply_failed",
      notRestored.length === 0
        ? `applying the patch failed (${reason}); every file already changed was restored, so no file was changed`
        : `applying the patch failed (${reason}); could not restore ${notRestored.join(", ")}, which may hold the patched content; every other file is unchanged`,
      { cause: error },
    );
  }
  return { changes: plan.changes, summary: summarize(plan.changes) };
}

/** Undoes committed steps, newest first; answers the paths it could not restore. */
async function rollBack(committed: readonly Committed[], options: ApplyPatchOptions) {
  const failed: string[] = [];
  for (const { state, realPath } of [...committed].reverse()) {
    try {
      if (state.original === null) await deleteFile(options.files, realPath);
      else await options.files.write({ path: realPath, content: state.original });
    } catch {
      failed.push(worktreeRelative(options.worktreeRoot, state.path));
    }
  }
  return failed;
}
