// A workspace's files on disk: a git worktree of the repository (the cached mirror of a URL
// host, the working copy of a directory host) at the workspace's commit. Nothing is cloned or
// downloaded again; with onlyFetchWorkspace only the workspace's directory (and, as git's cone
// mode has it, the files at the repository root) is written out.
import { join } from "node:path";
import { repositoryGit } from "./repository-git.ts";
import type { Workspace } from "./resolve-workspaces.ts";

export interface WorkspaceCheckout {
  /** The worktree: the repository at the workspace's revision, detached. */
  directory: string;
  /** Where the steps run: the workspace's path inside the worktree. */
  workspaceDirectory: string;
  /** Removes the worktree and its registration in the repository. */
  remove(): Promise<void>;
}

function git(cwd: string, args: readonly string[], what: string, signal?: AbortSignal) {
  return repositoryGit(cwd, args, what, { writes: true, signal });
}

/**
 * Checks the workspace out into `directory` (which must not exist or be empty) as a detached
 * worktree at `workspace.revision`; sparse, in cone mode, when the workspace asks for only its
 * own directory. The repository's own working copy and branches are left alone.
 */
export async function checkoutWorkspace(
  workspace: Workspace,
  directory: string,
  options: { signal?: AbortSignal } = {},
): Promise<WorkspaceCheckout> {
  const repositoryPath = workspace.repository.path;
  const sparse = workspace.onlyFetchWorkspace && workspace.path !== "";
  const what = `checking out ${workspace.repository.name}@${workspace.revision} into ${directory}`;
  const add = ["worktree", "add", "--quiet", "--detach"];
  if (sparse) add.push("--no-checkout");
  await git(repositoryPath, [...add, directory, workspace.revision], what, options.signal);
  const remove = async () => {
    await git(
      repositoryPath,
      ["worktree", "remove", "--force", directory],
      `removing ${directory}`,
    );
  };
  try {
    if (sparse) {
      await git(directory, ["sparse-checkout", "set", "--cone", "--", workspace.path], what);
      // The worktree was added without files; this writes out what the sparse patterns allow.
      await git(directory, ["read-tree", "-mu", "HEAD"], what, options.signal);
    }
  } catch (error) {
    await remove().catch(() => {});
    throw error;
  }
  return {
    directory,
    workspaceDirectory: workspace.path === "" ? directory : join(directory, workspace.path),
    remove,
  };
}
