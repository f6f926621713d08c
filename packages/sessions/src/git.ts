import { GitError, type GitResult, runGit } from "@deckhand/git";
import { SessionsError } from "./sessions-error.ts";

export type { GitResult };

/**
 * Variables for git commands that reach a repository's URL (cloning it, fetching from it): the
 * matching code host connection's credentials, passed to that one command and never written to
 * the clone's config; undefined for a URL that needs none.
 */
export type GitEnvironment = (url: string) => Readonly<Record<string, string>> | undefined;

/** The `git` options that pass a URL's credentials to one command, if it has any. */
export function gitCredentials(
  gitEnvironment: GitEnvironment | undefined,
  url: string,
): { environment?: Readonly<Record<string, string>> } {
  const environment = gitEnvironment?.(url);
  return environment === undefined ? {} : { environment };
}

/** The identity of the commits Deckhand makes on session branches. */
const DECKHAND_IDENTITY: Record<string, string> = {
  GIT_AUTHOR_NAME: "Deckhand",
  GIT_AUTHOR_EMAIL: "deckhand@localhost",
  GIT_COMMITTER_NAME: "Deckhand",
  GIT_COMMITTER_EMAIL: "deckhand@localhost",
};

/**
 * Runs git through @deckhand/git (clean, non-interactive environment); `allowedExitCodes` are
 * answers, not failures (`diff --no-index` exits 1 on a difference). `readOnly` is for commands
 * that only look, so they never take the index lock an agent in the worktree may need.
 */
export async function git(
  args: string[],
  options: {
    cwd?: string;
    allowedExitCodes?: number[];
    timeoutMs?: number;
    readOnly?: boolean;
    /** Written to git's standard input. */
    input?: string;
    maxOutputBytes?: number;
    /**
     * More variables for this one command: a code host connection's credentials for a clone or
     * fetch, as `GIT_CONFIG_*` (never written to the repository's config).
     */
    environment?: Readonly<Record<string, string>>;
  } = {},
): Promise<GitResult> {
  try {
    return await runGit(args, {
      cwd: options.cwd ?? process.cwd(),
      environment: { ...DECKHAND_IDENTITY, ...options.environment },
      ...(options.allowedExitCodes ? { allowedExitCodes: options.allowedExitCodes } : {}),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(options.readOnly ? { readOnly: true } : {}),
      ...(options.input === undefined ? {} : { input: options.input }),
      ...(options.maxOutputBytes === undefined ? {} : { maxOutputBytes: options.maxOutputBytes }),
    });
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    throw new SessionsError("git_failed", error.message, { cause: error });
  }
}

export async function repositoryRoot(path: string): Promise<string | null> {
  const result = await git(["rev-parse", "--show-toplevel"], {
    cwd: path,
    allowedExitCodes: [128],
  }).catch(() => null);
  return result && result.exitCode === 0 ? result.stdout.trim() : null;
}

/** The branch HEAD points at, or null when HEAD is detached. */
export async function currentBranch(repository: string): Promise<string | null> {
  const result = await git(["symbolic-ref", "--quiet", "--short", "HEAD"], {
    cwd: repository,
    allowedExitCodes: [1, 128],
  });
  return result.exitCode === 0 ? result.stdout.trim() : null;
}

export async function resolveCommit(repository: string, ref: string): Promise<string | null> {
  const result = await git(["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], {
    cwd: repository,
    allowedExitCodes: [1, 128],
  });
  return result.exitCode === 0 ? result.stdout.trim() : null;
}

/**
 * The branches a session can start from: the local ones, then `origin`'s that have no local
 * branch of the same name (a clone checks out only its default), each by its short name.
 */
export async function startingBranches(repository: string): Promise<string[]> {
  const result = await git(
    ["for-each-ref", "--format=%(refname)", "refs/heads/", "refs/remotes/origin/"],
    { cwd: repository, readOnly: true },
  );
  const local: string[] = [];
  const remote: string[] = [];
  for (const ref of result.stdout.split("\n")) {
    if (ref.startsWith("refs/heads/")) local.push(ref.slice("refs/heads/".length));
    else if (ref.startsWith("refs/remotes/origin/") && ref !== "refs/remotes/origin/HEAD")
      remote.push(ref.slice("refs/remotes/origin/".length));
  }
  const names = new Set(local);
  return [...local, ...remote.filter((name) => !names.has(name))];
}

export async function branchExists(repository: string, branch: string): Promise<boolean> {
  const result = await git(["show-ref", "--verify", "--quiet", `refs/heads/${branch}`], {
    cwd: repository,
    allowedExitCodes: [1],
  });
  return result.exitCode === 0;
}

/** One changed path of a worktree against its HEAD, untracked files included. */
export interface ChangedPath {
  path: string;
  /** `added` is untracked or newly added, `deleted` is gone from the worktree. */
  change: "added" | "modified" | "deleted";
}

/** Where a worktree's HEAD is and what differs from it, from one `git status`. */
export interface WorktreeStatus {
  /** The branch HEAD points at; null when HEAD is detached. */
  branch: string | null;
  /** HEAD's commit; null on a branch with no commit yet. */
  head: string | null;
  changes: ChangedPath[];
}

/**
 * One `git status` of a worktree (porcelain v2 with its branch headers): its branch, its commit
 * and its changed paths, so the work after an agent's turn needs one git process, not three.
 * Read-only: it never takes the index lock an agent in the worktree may need.
 */
export async function worktreeStatus(worktree: string): Promise<WorktreeStatus> {
  const { stdout } = await git(
    [
      "status",
      "--porcelain=v2",
      "--branch",
      "--no-ahead-behind",
      "-z",
      "--untracked-files=all",
      "--no-renames",
    ],
    { cwd: worktree, readOnly: true },
  );
  return parseWorktreeStatus(stdout);
}

/** Fields before the path of each porcelain v2 record kind (see git-status(1)). */
const FIELDS_BEFORE_PATH: Record<string, number> = { "1": 8, "2": 9, u: 10, "?": 1, "!": 1 };

/** Parses `git status --porcelain=v2 --branch -z`. */
export function parseWorktreeStatus(output: string): WorktreeStatus {
  const status: WorktreeStatus = { branch: null, head: null, changes: [] };
  const records = output.split("\0");
  for (let index = 0; index < records.length; index += 1) {
    const record = records[index]!;
    if (record.startsWith("# branch.oid ")) {
      const oid = record.slice("# branch.oid ".length);
      status.head = oid === "(initial)" ? null : oid;
      continue;
    }
    if (record.startsWith("# branch.head ")) {
      const head = record.slice("# branch.head ".length);
      status.branch = head === "(detached)" ? null : head;
      continue;
    }
    const kind = record.slice(0, 1);
    const fieldCount = FIELDS_BEFORE_PATH[kind];
    if (fieldCount === undefined) continue;
    // A rename or copy record is followed by its original path (none with --no-renames).
    if (kind === "2") index += 1;
    if (kind === "!") continue;
    let pathStart = 0;
    for (let field = 0; field < fieldCount; field += 1) {
      pathStart = record.indexOf(" ", pathStart) + 1;
    }
    const path = record.slice(pathStart);
    const letters = kind === "?" ? "??" : record.slice(2, 4);
    const change =
      letters === "??" || letters.includes("A")
        ? "added"
        : letters.includes("D")
          ? "deleted"
          : "modified";
    status.changes.push({ path, change });
  }
  return status;
}

/** The worktree's changed paths against its HEAD, untracked files included. */
export async function changedPaths(worktree: string): Promise<ChangedPath[]> {
  return (await worktreeStatus(worktree)).changes;
}

/** Unified diff of one path: the worktree against HEAD, or against nothing for a new file. */
export async function diffPath(worktree: string, change: ChangedPath): Promise<string> {
  if (change.change === "added") {
    const tracked = await git(["ls-files", "--error-unmatch", "--", change.path], {
      cwd: worktree,
      allowedExitCodes: [1],
    });
    if (tracked.exitCode !== 0) {
      const result = await git(
        ["diff", "--no-index", "--no-color", "--", "/dev/null", change.path],
        {
          cwd: worktree,
          allowedExitCodes: [1],
        },
      );
      return result.stdout;
    }
  }
  const result = await git(["diff", "--no-color", "HEAD", "--", change.path], {
    cwd: worktree,
    readOnly: true,
  });
  return result.stdout;
}

/** Commits exactly one path (whatever its change) on the worktree's branch; returns the commit. */
export async function commitPath(worktree: string, path: string, message: string): Promise<string> {
  await git(["add", "--all", "--", path], { cwd: worktree });
  await git(["commit", "--quiet", "--no-verify", "-m", message, "--", path], { cwd: worktree });
  return (await git(["rev-parse", "HEAD"], { cwd: worktree })).stdout.trim();
}

/** Puts one path back as HEAD has it: restores modified or deleted files, removes new ones. */
export async function restorePath(worktree: string, path: string): Promise<void> {
  const inHead = await git(["cat-file", "-e", `HEAD:${path}`], {
    cwd: worktree,
    allowedExitCodes: [1, 128],
  });
  if (inHead.exitCode === 0) {
    await git(["checkout", "HEAD", "--", path], { cwd: worktree });
  } else {
    await git(["rm", "--cached", "--quiet", "--ignore-unmatch", "--", path], { cwd: worktree });
    await git(["clean", "--force", "--quiet", "--", path], { cwd: worktree });
  }
}

/** Whether `ancestor` is `descendant` or one of its ancestors. */
export async function isAncestor(
  repository: string,
  ancestor: string,
  descendant: string,
): Promise<boolean> {
  const result = await git(["merge-base", "--is-ancestor", ancestor, descendant], {
    cwd: repository,
    allowedExitCodes: [1],
  });
  return result.exitCode === 0;
}

/** One commit of a range, as `git log` tells it. */
export interface CommitSummary {
  sha: string;
  subject: string;
  body: string;
}

/** The commits reachable from `to` but not from `from`, oldest first. */
export async function commitsBetween(
  repository: string,
  from: string,
  to: string,
): Promise<CommitSummary[]> {
  const { stdout } = await git(
    ["log", "--reverse", "--first-parent", "--format=%H%x00%s%x00%b%x1e", `${from}..${to}`],
    { cwd: repository },
  );
  return stdout
    .split("\x1e")
    .map((record) => record.replace(/^\n/, ""))
    .filter((record) => record.length > 0)
    .map((record) => {
      const [sha = "", subject = "", body = ""] = record.split("\0");
      return { sha, subject, body: body.trimEnd() };
    });
}

/** Moves the worktree's branch to `commit`, keeping every change since as staged changes. */
export async function resetSoft(worktree: string, commit: string): Promise<void> {
  await git(["reset", "--soft", "--quiet", commit], { cwd: worktree });
}

/**
 * Applies a `git diff --binary` (as a batch workspace's result has it) to the worktree's index
 * and files, and commits it on the worktree's branch with hooks off; returns the commit.
 */
export async function commitDiff(worktree: string, diff: string, message: string): Promise<string> {
  await git(["apply", "--binary", "--index", "--whitespace=nowarn", "-"], {
    cwd: worktree,
    input: diff,
  });
  await git(["commit", "--quiet", "--no-verify", "-m", message], {
    cwd: worktree,
  });
  return (await git(["rev-parse", "HEAD"], { cwd: worktree })).stdout.trim();
}

/**
 * Everything between two commits as one `git diff --binary`: full blob ids (so the diff can be
 * merged three ways onto a newer base), renames detected, and `a/` and `b/` prefixes whatever
 * the user's git config says, so `git apply` takes it.
 */
export async function diffBetween(repository: string, from: string, to: string): Promise<string> {
  const { stdout } = await git(
    [
      "diff",
      "--binary",
      "--full-index",
      "-M",
      "--no-color",
      "--no-ext-diff",
      "--src-prefix=a/",
      "--dst-prefix=b/",
      from,
      to,
      "--",
    ],
    { cwd: repository, readOnly: true, maxOutputBytes: 512 * 1024 * 1024 },
  );
  return stdout;
}
