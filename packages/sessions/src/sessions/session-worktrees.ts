// A session's worktree: a git worktree of the project's repository on the session's own branch,
// in the worktrees directory (inside the workspace agent's root, so its APIs reach it).
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { CreateSessionRequest } from "@deckhand/wire";
import { commitDiff, type GitEnvironment, git, gitCredentials, resolveCommit } from "../git.ts";
import { SessionsError } from "../sessions-error.ts";
import type { ProjectRow } from "../store/project-rows.ts";

/** The commit a session starts from: a given one, its base branch's, or the default branch's. */
export async function baseCommitFor(
  project: ProjectRow,
  request: Pick<CreateSessionRequest, "base_branch">,
  baseCommit: string | undefined,
  gitEnvironment: GitEnvironment | undefined,
): Promise<string> {
  const repository = project.repositoryPath!;
  let commit: string | null;
  if (baseCommit !== undefined) {
    commit = await commitInProject(project, baseCommit, gitEnvironment);
  } else if (request.base_branch !== undefined) {
    commit = await resolveCommit(repository, request.base_branch);
    if (commit === null) {
      throw new SessionsError(
        "invalid_request",
        `base_branch ${JSON.stringify(request.base_branch)} is no branch or commit in ${repository}; name one it has, or leave base_branch out for ${project.defaultBranch}`,
      );
    }
  } else {
    commit = await resolveCommit(repository, project.defaultBranch);
  }
  if (commit === null) {
    throw new SessionsError(
      "conflict",
      `the project's default branch ${project.defaultBranch} no longer resolves to a commit`,
    );
  }
  return commit;
}

/** The full SHA of `commit` in the project's repository, fetched from origin for a clone. */
async function commitInProject(
  project: ProjectRow,
  commit: string,
  gitEnvironment: GitEnvironment | undefined,
): Promise<string> {
  const repository = project.repositoryPath!;
  let found = await resolveCommit(repository, commit);
  if (found === null && project.repositoryUrl !== null) {
    await git(["fetch", "--quiet", "origin"], {
      cwd: repository,
      timeoutMs: 15 * 60_000,
      ...gitCredentials(gitEnvironment, project.repositoryUrl),
    }).catch(() => {});
    found = await resolveCommit(repository, commit);
  }
  if (found === null) {
    throw new SessionsError(
      "conflict",
      `commit ${commit} is not in the repository of project ${project.id} (${repository})${project.repositoryUrl === null ? "" : ", not even after fetching its origin"}; fetch it into that repository, or start from another commit`,
    );
  }
  return found;
}

/**
 * Adds the session's worktree at `<worktreesDir>/<sessionId>` on a new `branch` from
 * `baseCommit`, and commits `initialCommit` on it when it has a diff; returns its path. Nothing
 * is left behind when this fails.
 */
export async function addSessionWorktree(options: {
  repository: string;
  worktreesDir: string;
  sessionId: string;
  branch: string;
  baseCommit: string;
  initialCommit: { diff: string; message: string } | undefined;
}): Promise<string> {
  const { repository, branch } = options;
  await mkdir(options.worktreesDir, { recursive: true });
  const path = join(options.worktreesDir, options.sessionId);
  try {
    await git(["worktree", "add", "--quiet", "-b", branch, path, options.baseCommit], {
      cwd: repository,
    });
  } catch (error) {
    // The branch name is the user's: git refusing it (a ref in the way, such as `a` for
    // `a/b`) is a conflict with the repository to resolve by naming another branch.
    if (!(SessionsError.isInstance(error) && error.code === "git_failed")) throw error;
    throw new SessionsError(
      "conflict",
      `cannot create branch ${branch} for the session: ${error.message}; choose another branch name`,
      { cause: error },
    );
  }
  const initial = options.initialCommit;
  if (initial !== undefined && initial.diff !== "") {
    try {
      await commitDiff(path, initial.diff, initial.message);
    } catch (error) {
      await removeWorktree(repository, path, branch, true);
      throw error;
    }
  }
  return path;
}

/** Removes a worktree (its files too), and its branch when `deleteBranch`; failures are ignored. */
export async function removeWorktree(
  repository: string,
  path: string,
  branch: string,
  deleteBranch: boolean,
): Promise<void> {
  await git(["worktree", "remove", "--force", path], { cwd: repository }).catch(() =>
    rm(path, { recursive: true, force: true }),
  );
  await git(["worktree", "prune"], { cwd: repository }).catch(() => {});
  if (deleteBranch) await git(["branch", "-D", branch], { cwd: repository }).catch(() => {});
}
