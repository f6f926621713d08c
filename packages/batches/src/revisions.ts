// Branches to commits. A workspace always runs at a commit SHA, resolved once, so every step
// and every executor sees the same tree even when the branch moves meanwhile.
import { branchFromFiles, headFromFiles } from "@deckhand/git";
import { BatchesError } from "./batches-error.ts";
import type { Repository } from "./repositories.ts";
import { repositoryGit } from "./repository-git.ts";

export interface ResolvedRevision {
  /** The branch name, without `refs/heads/`. */
  branch: string;
  /** The commit SHA the branch points at. */
  revision: string;
}

async function commitOf(repository: Repository, ref: string, signal?: AbortSignal) {
  const { stdout, exitCode } = await repositoryGit(
    repository.path,
    ["rev-parse", "--verify", "--quiet", "--end-of-options", `${ref}^{commit}`],
    `resolving ${ref} in ${repository.name}`,
    { allowedExitCodes: [1], signal },
  );
  return exitCode === 0 ? stdout.trim() : undefined;
}

async function branchNames(repository: Repository, signal?: AbortSignal): Promise<string[]> {
  const { stdout } = await repositoryGit(
    repository.path,
    ["for-each-ref", "--format=%(refname:short)", "refs/heads"],
    `listing the branches of ${repository.name}`,
    { signal },
  );
  return stdout.split("\n").filter((line) => line.length > 0);
}

/**
 * The repository's default branch and its commit: the branch HEAD names (in a cached mirror,
 * the remote's default branch). Throws `revision_not_found` for a detached HEAD or an empty
 * repository.
 */
export async function resolveDefaultBranch(
  repository: Repository,
  signal?: AbortSignal,
): Promise<ResolvedRevision> {
  // No git process for the usual layout, a HEAD naming a branch whose ref file (or packed-refs)
  // holds its commit: read where git would read them, on every call, so a moved branch is seen.
  const fromFiles = headFromFiles(repository.path);
  if (fromFiles !== undefined && fromFiles.refs.length === 1) {
    return { branch: fromFiles.refs[0]!.slice("refs/heads/".length), revision: fromFiles.commit };
  }
  // One git process otherwise for a HEAD naming a branch with a commit: rev-parse takes its
  // arguments in order, so HEAD's commit comes first, then (once --symbolic-full-name is on) the
  // ref HEAD names. Anything else is asked again the long way, which says what is wrong.
  const both = await repositoryGit(
    repository.path,
    ["rev-parse", "HEAD^{commit}", "--symbolic-full-name", "HEAD"],
    `reading the default branch of ${repository.name}`,
    { allowedExitCodes: [128], signal },
  );
  const [revision, ref] = both.stdout.trim().split("\n");
  if (both.exitCode === 0 && revision !== undefined && ref?.startsWith("refs/heads/")) {
    return { branch: ref.slice("refs/heads/".length), revision };
  }
  return defaultBranchOneByOne(repository, signal);
}

async function defaultBranchOneByOne(
  repository: Repository,
  signal?: AbortSignal,
): Promise<ResolvedRevision> {
  const { stdout, exitCode } = await repositoryGit(
    repository.path,
    ["symbolic-ref", "--quiet", "--short", "HEAD"],
    `reading the default branch of ${repository.name}`,
    { allowedExitCodes: [1], signal },
  );
  if (exitCode !== 0) {
    throw new BatchesError(
      "revision_not_found",
      `${repository.name} (${repository.path}) has a detached HEAD, so it has no default branch; name the branch with \`branch:\` in the spec`,
    );
  }
  const branch = stdout.trim();
  const revision = await commitOf(repository, `refs/heads/${branch}`, signal);
  if (revision === undefined) {
    throw new BatchesError(
      "revision_not_found",
      `${repository.name} has no commit on its default branch ${branch}; commit something first`,
    );
  }
  return { branch, revision };
}

/**
 * The commit of `branch` in the repository: a local branch, or else (in a working copy) the
 * origin's remote-tracking branch. Throws `revision_not_found` listing the branches there are.
 */
export async function resolveBranch(
  repository: Repository,
  branch: string,
  signal?: AbortSignal,
): Promise<ResolvedRevision> {
  const name = branch.replace(/^refs\/heads\//, "");
  // A local branch the files hold needs no git process; anything else is git's to find.
  const fromFiles = branchFromFiles(repository.path, name);
  if (fromFiles !== undefined) return { branch: name, revision: fromFiles };
  for (const ref of [`refs/heads/${name}`, `refs/remotes/origin/${name}`]) {
    const revision = await commitOf(repository, ref, signal);
    if (revision !== undefined) return { branch: name, revision };
  }
  const branches = await branchNames(repository, signal);
  const listed =
    branches.length === 0 ? "it has none" : `it has ${branches.slice(0, 20).join(", ")}`;
  throw new BatchesError(
    "revision_not_found",
    `branch ${name} does not exist in ${repository.name}; ${listed}${branches.length > 20 ? ", ..." : ""}`,
  );
}
