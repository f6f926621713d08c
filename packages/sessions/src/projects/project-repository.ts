// The repository behind a project: a checkout on the server's machine, or a clone of a URL into
// the projects directory, and the branch its sessions start from by default.
import { mkdir, rm, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  currentBranch,
  type GitEnvironment,
  git,
  gitCredentials,
  repositoryRoot,
  resolveCommit,
} from "../git.ts";
import { SessionsError } from "../sessions-error.ts";

/** The top-level directory of the checkout at `path`; an `invalid_request` when there is none. */
export async function checkoutRoot(path: string): Promise<string> {
  const given = resolve(path);
  const root = await stat(given)
    .then((info) => (info.isDirectory() ? repositoryRoot(given) : null))
    .catch(() => null);
  if (root === null) {
    throw new SessionsError(
      "invalid_request",
      `repository_path ${JSON.stringify(path)} is not a git repository on the server's machine; give the path of a checkout (git init or git clone first)`,
    );
  }
  return root;
}

/**
 * Clones `url` into `<projectsDir>/<id>`; an `invalid_request` that does not name the server's
 * directories when git cannot (the log keeps them, in the cause).
 */
export async function cloneProject(
  url: string,
  projectsDir: string,
  id: string,
  gitEnvironment: GitEnvironment | undefined,
): Promise<string> {
  await mkdir(projectsDir, { recursive: true });
  const repositoryPath = join(projectsDir, id);
  try {
    await git(["clone", "--quiet", "--", url, repositoryPath], {
      timeoutMs: 15 * 60_000,
      ...gitCredentials(gitEnvironment, url),
    });
  } catch (error) {
    await rm(repositoryPath, { recursive: true, force: true });
    // Git may name the clone's directory (in the server's data directory); the client
    // sees "the project directory" instead, the log keeps the path (cause).
    const reason = (error as Error).message
      .replaceAll(repositoryPath, "the project directory")
      .replaceAll(projectsDir, "the projects directory");
    throw new SessionsError(
      "invalid_request",
      `could not clone repository_url: ${reason}; check the URL and that this machine can reach it`,
      { cause: error },
    );
  }
  return repositoryPath;
}

/**
 * The branch a project's sessions start from: the requested one, else the checked-out one. With
 * `preferBranch`, a requested branch the repository lacks gives way to the checked-out one.
 */
export async function defaultBranchOf(
  repositoryPath: string,
  requested: string | undefined,
  preferBranch: boolean,
): Promise<string> {
  const current = await currentBranch(repositoryPath);
  let defaultBranch = requested ?? current;
  if (
    preferBranch &&
    requested !== undefined &&
    current !== null &&
    (await resolveCommit(repositoryPath, requested)) === null
  ) {
    defaultBranch = current;
  }
  if (defaultBranch === null) {
    throw new SessionsError(
      "invalid_request",
      "the repository's HEAD is detached, so its default branch is unknown; pass default_branch",
    );
  }
  if ((await resolveCommit(repositoryPath, defaultBranch)) === null) {
    throw new SessionsError(
      "invalid_request",
      `default_branch ${JSON.stringify(defaultBranch)} has no commit in the repository; commit something first or name another branch`,
    );
  }
  return defaultBranch;
}
