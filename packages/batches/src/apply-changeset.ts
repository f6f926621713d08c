// From a changeset to a branch: one commit on the changeset's base, built with plumbing in a
// temporary index (nobody's working tree or index is touched), the branch moved by
// compare-and-swap, and pushed with a lease. Applying again replaces Deckhand's own commit and
// keeps the commits people made on top of it, or refuses naming them: a person's work is never
// dropped silently, on the branch or on the remote.
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { errorMessage } from "@deckhand/errors";
import { GitError, redactUrl, runGit } from "@deckhand/git";
import { type BatchChangeset, branchNameProblem } from "@deckhand/wire";
import { BatchesError } from "./batches-error.ts";
import { type RepositoryGitOptions, remoteFailure, repositoryGit } from "./repository-git.ts";
import type { WorkspaceRepository } from "./resolve-workspaces.ts";

/** What to do with commits a person made on the branch on top of Deckhand's commit. */
export type ApplyConflictPolicy = "refuse" | "rebase";

export interface ApplyChangesetOptions {
  /** Where the branch goes: a directory host's working copy or a URL host's cached mirror. */
  repository: WorkspaceRepository;
  changeset: BatchChangeset;
  /**
   * `createdCommit` of the last apply of this changeset, which the caller stores: the commit
   * that is Deckhand's to replace. Commits on top of it are a person's. Null or absent for a
   * first apply; a branch that exists then is only taken over when its one commit on the base
   * already has the changeset's tree (an apply whose result was not stored).
   */
  previousCommit?: string | null;
  /**
   * A person's commits on top of Deckhand's: `rebase` (the default) replays them on the new
   * commit, refusing when one conflicts; `refuse` refuses whenever there are any.
   */
  onConflict?: ApplyConflictPolicy;
  /**
   * Push the branch to the repository's `origin`. Defaults to true for a URL host (its mirror's
   * origin is the URL) and false for a directory host, which is pushed only when asked.
   */
  push?: boolean;
  /**
   * Variables for the git commands that reach origin (reading, fetching and pushing the branch):
   * a code host connection's token as an `http.<url>.extraHeader`, so the token is never in the
   * URL, a command line or a config file.
   */
  remoteEnvironment?: Readonly<Record<string, string>>;
  signal?: AbortSignal;
}

export interface AppliedChangeset {
  /** The tip Deckhand leaves the branch at: its commit, or the last kept commit on top. */
  commit: string;
  /** Deckhand's own commit on the base; store it and pass it back as `previousCommit`. */
  createdCommit: string;
  /** `created` (a new branch), `updated` (a new Deckhand commit), `unchanged` (none needed). */
  operation: "created" | "updated" | "unchanged";
  /** A person's commits on top of Deckhand's, as they are on the branch now, oldest first. */
  keptCommits: string[];
  /** The remote branch is at `commit` after the call (pushed now, or already there). */
  pushed: boolean;
}

/** The identity of Deckhand's commits when the changeset names no author and git has no user. */
const DECKHAND_COMMIT_IDENTITY: Identity = { name: "Deckhand", email: "deckhand@localhost" };

interface Identity {
  name: string;
  email: string;
}

interface CommitInfo {
  tree: string;
  parents: string[];
  author: Identity;
  message: string;
}

interface ForeignCommit {
  sha: string;
  short: string;
  subject: string;
  parents: string[];
}

interface Context {
  cwd: string;
  name: string;
  branch: string;
  ref: string;
  signal: AbortSignal | undefined;
  remoteEnvironment: Readonly<Record<string, string>> | undefined;
}

// Hooks are the user's, for their own commands: Deckhand's worktree, cherry-picks and pushes
// run none, and never record conflict resolutions into the user's rerere cache.
const quiet = ["-c", "core.hooksPath=/dev/null", "-c", "rerere.enabled=false"];
// Generous: a push or fetch of a large repository takes a while.
const remoteTimeoutMs = 30 * 60_000;
// The whole diff goes to git's standard input; bounded as the diff that produced it was.
const maximumDiffBytes = 512 * 1024 * 1024;

function git(
  context: Context,
  args: readonly string[],
  what: string,
  extra: RepositoryGitOptions = {},
) {
  return repositoryGit(context.cwd, args, `${what} (${context.name}, branch ${context.branch})`, {
    writes: true,
    signal: context.signal,
    ...extra,
  });
}

/**
 * Makes `changeset.branch` in the repository hold one commit of the changeset on its base,
 * pushes it when the repository has a remote (see `push`), and says what it did. Throws a
 * `BatchesError`: `branch_diverged` for a person's commits that cannot be kept (or with
 * `onConflict: "refuse"`), `branch_exists` for a branch Deckhand did not make,
 * `branch_checked_out` for a branch that would move while checked out in a working copy,
 * `push_failed`, `invalid_changeset` for a diff that does not apply, `revision_not_found` for a
 * base that is not in the repository. A refusal changes nothing.
 */
export async function applyChangeset(options: ApplyChangesetOptions): Promise<AppliedChangeset> {
  const { repository, changeset } = options;
  const onConflict = options.onConflict ?? "rebase";
  const context: Context = {
    cwd: repository.path,
    name: repository.name,
    branch: changeset.branch,
    ref: `refs/heads/${changeset.branch}`,
    signal: options.signal,
    remoteEnvironment: options.remoteEnvironment,
  };
  validate(context, changeset);
  const previous = options.previousCommit ?? undefined;
  // One git process resolves the base, the branch and Deckhand's last commit; one reads the
  // config this apply needs.
  const [baseCommit, local, resolvedPrevious] = await resolveCommits(context, [
    changeset.base_revision,
    context.ref,
    ...(previous === undefined ? [] : [previous]),
  ]);
  if (baseCommit !== changeset.base_revision) throw baseNotFound(context, changeset);
  const previousCommit = resolvedPrevious === previous ? previous : undefined;
  const config = await readConfig(context);
  const push = options.push ?? repository.host.type === "git";
  const remote = push ? originOf(context, config) : undefined;

  const known = new Set([local, previousCommit].filter((sha) => sha !== undefined));
  const remoteTip = remote === undefined ? undefined : await fetchRemoteTip(context, remote, known);
  const tip = await currentTip(context, {
    local,
    remote: remoteTip,
    mirror: repository.host.type === "git",
  });

  const base = changeset.base_revision;
  const committer = configuredIdentity(config) ?? DECKHAND_COMMIT_IDENTITY;
  const wanted: CommitInfo = {
    tree: await writeChangesetTree(context, base, changeset.diff),
    parents: [base],
    author: changeset.commit_author ?? committer,
    message: changeset.commit_message.endsWith("\n")
      ? changeset.commit_message
      : `${changeset.commit_message}\n`,
  };
  const makeCommit = () => commitTree(context, wanted, committer);
  const result =
    tip === undefined
      ? fresh(await makeCommit(), "created")
      : await reapply(context, {
          tip,
          wanted,
          makeCommit,
          committer,
          options,
          previousCommit,
          onConflict,
        });

  if (result.commit !== local) {
    await refuseIfCheckedOut(context);
    await moveBranch(context, local, result.commit);
  }
  if (remote === undefined) return { ...result, pushed: false };
  if (remoteTip !== result.commit) {
    try {
      await pushBranch(context, remote, remoteTip, result.commit);
    } catch (error) {
      // All or nothing: the branch goes back where it was, so the caller's stored commit and
      // the repository keep agreeing. Only if nobody moved it meanwhile.
      if (result.commit !== local) await moveBranch(context, result.commit, local).catch(() => {});
      throw error;
    }
  }
  return { ...result, pushed: true };
}

type Outcome = Omit<AppliedChangeset, "pushed">;

function fresh(commit: string, operation: "created" | "updated"): Outcome {
  return { commit, createdCommit: commit, operation, keptCommits: [] };
}

/**
 * The branch exists at `tip`: find Deckhand's commit on it, and keep it (unchanged) or replace
 * it, carrying a person's commits on top over; or refuse.
 */
async function reapply(
  context: Context,
  state: {
    tip: string;
    wanted: CommitInfo;
    makeCommit: () => Promise<string>;
    committer: Identity;
    options: ApplyChangesetOptions;
    /** `options.previousCommit` when it is in the repository. */
    previousCommit: string | undefined;
    onConflict: ApplyConflictPolicy;
  },
): Promise<Outcome> {
  const { tip, wanted, options } = state;
  const base = wanted.parents[0]!;
  const ours = await findDeckhandCommit(context, {
    tip,
    base,
    tree: wanted.tree,
    previous: state.previousCommit,
  });
  if (ours === undefined) {
    if (!(await isAncestor(context, tip, base))) throw foreignBranch(context, tip, options);
    // The branch points into the base's history: moving it to a child of the base drops nothing.
    return fresh(await state.makeCommit(), "updated");
  }
  const foreign = ours === tip ? [] : await commitsBetween(context, ours, tip);
  if (sameCommit(await readCommit(context, ours), wanted)) {
    return {
      commit: tip,
      createdCommit: ours,
      operation: "unchanged",
      keptCommits: foreign.map((commit) => commit.sha),
    };
  }
  if (foreign.length > 0) refuseUnlessReplayable(context, ours, foreign, state.onConflict);
  const created = await state.makeCommit();
  const kept = await replay(context, created, foreign, state.committer, ours);
  return {
    commit: kept.at(-1) ?? created,
    createdCommit: created,
    operation: "updated",
    keptCommits: kept,
  };
}

/** Refuses a changeset that cannot be applied, before any git process runs. */
function validate(context: Context, changeset: BatchChangeset): void {
  if (changeset.repository !== context.name) {
    throw new BatchesError(
      "invalid_changeset",
      `the changeset for branch ${changeset.branch} belongs to ${changeset.repository}, not to ${context.name} (${context.cwd}); apply it to its own repository`,
    );
  }
  if (!isBranchGitAccepts(changeset.branch)) {
    throw new BatchesError(
      "invalid_changeset",
      `the changeset's branch ${JSON.stringify(changeset.branch)} is not a valid git branch name; fix changesetTemplate.branch`,
    );
  }
  if (changeset.branch.replace(/^refs\/heads\//, "") === changeset.base_branch) {
    throw new BatchesError(
      "invalid_changeset",
      `the changeset's branch ${changeset.branch} is its base branch in ${context.name}; Deckhand commits a changeset on a branch of its own, never onto the branch it is based on; make changesetTemplate.branch a new name`,
    );
  }
  if (changeset.diff === "") {
    throw new BatchesError(
      "invalid_changeset",
      `the changeset for branch ${changeset.branch} of ${context.name} has no changes, so there is nothing to commit`,
    );
  }
}

function baseNotFound(context: Context, changeset: BatchChangeset): BatchesError {
  return new BatchesError(
    "revision_not_found",
    `the changeset's base commit ${changeset.base_revision} (${changeset.base_branch}) is not in ${context.name} at ${context.cwd}; resolve the workspaces again and re-run the steps`,
  );
}

/**
 * Whether `git check-ref-format refs/heads/BRANCH` accepts the branch and it does not start with
 * a dash: the rules of `--branch` (`branchNameProblem`), which refuse HEAD besides.
 */
export function isBranchGitAccepts(branch: string): boolean {
  return branch !== "" && (branch === "HEAD" || branchNameProblem(branch) === null);
}

/**
 * The full SHA of the commit each name resolves to, or undefined, in one git process: what
 * `git rev-parse --verify NAME^{commit}` says of each. A name git's input could not carry (a
 * line break) resolves to nothing.
 */
async function resolveCommits(
  context: Context,
  names: readonly string[],
): Promise<(string | undefined)[]> {
  const asked = names.map((name) => (/[\r\n]/.test(name) ? undefined : name));
  const lines = asked.flatMap((name) => (name === undefined ? [] : [`${name}^{commit}`]));
  if (lines.length === 0) return names.map(() => undefined);
  const { stdout } = await git(
    context,
    ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
    `resolving ${lines.length === 1 ? lines[0] : `${lines.length} revisions`}`,
    { input: `${lines.join("\n")}\n`, writes: false },
  );
  const answers = stdout.split("\n");
  let next = 0;
  return asked.map((name) => {
    if (name === undefined) return undefined;
    const [sha, type] = answers[next++]!.split(" ");
    return type === "commit" && /^[0-9a-f]{40,64}$/.test(sha!) ? sha : undefined;
  });
}

/** The full SHA of a commit, or undefined when the name resolves to none. */
async function resolveCommit(context: Context, name: string): Promise<string | undefined> {
  const [sha] = await resolveCommits(context, [name]);
  return sha;
}

async function isAncestor(context: Context, ancestor: string, of: string): Promise<boolean> {
  if (ancestor === of) return true;
  const { exitCode } = await git(
    context,
    ["merge-base", "--is-ancestor", ancestor, of],
    `comparing ${ancestor} with ${of}`,
    { allowedExitCodes: [1], writes: false },
  );
  return exitCode === 0;
}

/** What an apply reads of git's config (the repository's and the global one). */
interface ApplyConfig {
  originUrl?: string;
  originPushUrl?: string;
  userName?: string;
  userEmail?: string;
}

const configKeys: Record<string, keyof ApplyConfig> = {
  "remote.origin.url": "originUrl",
  "remote.origin.pushurl": "originPushUrl",
  "user.name": "userName",
  "user.email": "userEmail",
};

/** The four keys in one git process; the last value of a key wins, as `git config --get`. */
async function readConfig(context: Context): Promise<ApplyConfig> {
  const { stdout, exitCode } = await git(
    context,
    ["config", "--null", "--get-regexp", "^(remote\\.origin\\.(url|pushurl)|user\\.(name|email))$"],
    "reading the origin remote and the commit identity",
    { allowedExitCodes: [1], writes: false },
  );
  const config: ApplyConfig = {};
  if (exitCode !== 0) return config;
  for (const entry of stdout.split("\0")) {
    const split = entry.indexOf("\n");
    const field = configKeys[split < 0 ? entry : entry.slice(0, split)];
    if (field === undefined) continue;
    const value = split < 0 ? "" : entry.slice(split + 1).trim();
    if (value === "") delete config[field];
    else config[field] = value;
  }
  return config;
}

/** The repository's `user.name` and `user.email` (its own config or the global one). */
function configuredIdentity(config: ApplyConfig): Identity | undefined {
  const { userName: name, userEmail: email } = config;
  return name !== undefined && email !== undefined ? { name, email } : undefined;
}

interface Remote {
  /** The URLs git pushes and fetches with, credentials included: never shown. */
  urls: string[];
  /** The URL for messages. */
  shown: string;
}

function originOf(context: Context, config: ApplyConfig): Remote {
  const url = config.originUrl;
  if (url === undefined) {
    throw new BatchesError(
      "push_failed",
      `${context.name} (${context.cwd}) has no origin remote to push branch ${context.branch} to; add one (git remote add origin URL) or apply without pushing`,
    );
  }
  const pushUrl = config.originPushUrl;
  return { urls: pushUrl === undefined ? [url] : [url, pushUrl], shown: redactUrl(pushUrl ?? url) };
}

function remoteError(
  context: Context,
  remote: Remote,
  action: string,
  advice: string,
  error: unknown,
): BatchesError {
  const { detail, cause } = remoteFailure(remote.urls, error);
  return new BatchesError(
    "push_failed",
    `${action} branch ${context.branch} of ${context.name} ${action === "pushing" ? "to" : "from"} ${remote.shown} failed: ${detail}; ${advice}`,
    cause === undefined ? {} : { cause },
  );
}

/**
 * Where origin's branch is, with its commits fetched when they are not here (a person pushed
 * them): undefined when origin has no such branch. Fetched into a temporary ref (and nowhere
 * else, not even FETCH_HEAD), which is deleted again; the objects stay.
 */
async function fetchRemoteTip(
  context: Context,
  remote: Remote,
  known: ReadonlySet<string>,
): Promise<string | undefined> {
  const run = (args: string[]) =>
    runGit([...quiet, ...args], {
      cwd: context.cwd,
      timeoutMs: remoteTimeoutMs,
      ...(context.signal ? { signal: context.signal } : {}),
      ...(context.remoteEnvironment ? { environment: context.remoteEnvironment } : {}),
    });
  const advice = "check the network, the URL and the credentials, then apply again";
  let listed: string | undefined;
  try {
    const { stdout } = await run(["ls-remote", "origin", context.ref]);
    listed = stdout
      .split("\n")
      .map((line) => line.split("\t"))
      .find(([, ref]) => ref === context.ref)?.[0];
  } catch (error) {
    throw remoteError(context, remote, "reading", advice, error);
  }
  if (listed === undefined || known.has(listed)) return listed;
  if ((await resolveCommit(context, listed)) === listed) return listed;
  const temporary = `refs/deckhand/apply/${randomUUID()}`;
  try {
    await run([
      "fetch",
      "--quiet",
      "--no-tags",
      "--no-write-fetch-head",
      "--no-auto-maintenance",
      "--refmap=",
      "origin",
      `+${context.ref}:${temporary}`,
    ]);
    const fetched = await resolveCommit(context, temporary);
    if (fetched === undefined) throw new Error(`git fetch did not write ${temporary}`);
    return fetched;
  } catch (error) {
    throw remoteError(context, remote, "fetching", advice, error);
  } finally {
    await git(context, ["update-ref", "-d", temporary], "removing a temporary ref").catch(() => {});
  }
}

/**
 * The branch as it stands, from the local branch and origin's. A mirror's branches are copies
 * of the remote's, so the remote's wins; in a working copy the one ahead wins, and two that
 * diverged are refused (a person must reconcile them).
 */
async function currentTip(
  context: Context,
  branches: { local: string | undefined; remote: string | undefined; mirror: boolean },
): Promise<string | undefined> {
  const { local, remote, mirror } = branches;
  if (remote === undefined || remote === local) return local;
  if (mirror || local === undefined) return remote;
  if (await isAncestor(context, local, remote)) return remote;
  if (await isAncestor(context, remote, local)) return local;
  throw new BatchesError(
    "branch_diverged",
    `branch ${context.branch} of ${context.name} is at ${short(local)} here and at ${short(remote)} on origin, and neither contains the other; reconcile them by hand (pull or push), then apply again`,
  );
}

/** The tree of the base with the diff applied, built in a temporary index. */
async function writeChangesetTree(context: Context, base: string, diff: string): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), "deckhand-apply-"));
  const environment = { GIT_INDEX_FILE: join(directory, "index") };
  try {
    await git(context, ["read-tree", base], `reading ${base} into a temporary index`, {
      environment,
    });
    try {
      await git(
        context,
        ["apply", "--cached", "--binary", "--whitespace=nowarn", "-"],
        `applying the changeset to ${base}`,
        { environment, input: diff, maxOutputBytes: maximumDiffBytes },
      );
    } catch (error) {
      throw new BatchesError(
        "invalid_changeset",
        `the changeset's diff for branch ${context.branch} does not apply to its base ${short(base)} in ${context.name}; run the steps again to produce a fresh diff`,
        { cause: error },
      );
    }
    const { stdout } = await git(context, ["write-tree"], "writing the changeset's tree", {
      environment,
    });
    return stdout.trim();
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

function identityEnvironment(author: Identity, committer: Identity): Record<string, string> {
  return {
    GIT_AUTHOR_NAME: author.name,
    GIT_AUTHOR_EMAIL: author.email,
    GIT_COMMITTER_NAME: committer.name,
    GIT_COMMITTER_EMAIL: committer.email,
  };
}

async function commitTree(
  context: Context,
  commit: CommitInfo,
  committer: Identity,
): Promise<string> {
  const { stdout } = await git(
    context,
    [
      "commit-tree",
      "--no-gpg-sign",
      ...commit.parents.flatMap((parent) => ["-p", parent]),
      commit.tree,
    ],
    "writing Deckhand's commit",
    { input: commit.message, environment: identityEnvironment(commit.author, committer) },
  );
  return stdout.trim();
}

async function readCommit(context: Context, sha: string): Promise<CommitInfo> {
  const { stdout } = await git(context, ["cat-file", "commit", sha], `reading commit ${sha}`, {
    writes: false,
  });
  const split = stdout.indexOf("\n\n");
  const header = split < 0 ? stdout : stdout.slice(0, split);
  const info: CommitInfo = {
    tree: "",
    parents: [],
    author: { name: "", email: "" },
    message: split < 0 ? "" : stdout.slice(split + 2),
  };
  for (const line of header.split("\n")) {
    const space = line.indexOf(" ");
    const key = line.slice(0, space);
    const value = line.slice(space + 1);
    if (key === "tree") info.tree = value;
    else if (key === "parent") info.parents.push(value);
    else if (key === "author") {
      const parsed = /^(.*) <([^>]*)> \S+ \S+$/.exec(value);
      if (parsed) info.author = { name: parsed[1]!, email: parsed[2]! };
    }
  }
  return info;
}

/** Deckhand would write exactly this commit: same tree, base, author and message. */
function sameCommit(existing: CommitInfo, wanted: CommitInfo): boolean {
  return (
    existing.tree === wanted.tree &&
    existing.parents.length === 1 &&
    existing.parents[0] === wanted.parents[0] &&
    existing.author.name === wanted.author.name &&
    existing.author.email === wanted.author.email &&
    existing.message === wanted.message
  );
}

/**
 * Deckhand's commit on the branch: `previousCommit` when the tip contains it; otherwise the
 * branch's first commit on the base when its tree is the changeset's (an earlier apply whose
 * result the caller did not store, or that a person rebased onto); otherwise none.
 */
async function findDeckhandCommit(
  context: Context,
  branch: { tip: string; base: string; tree: string; previous: string | undefined },
): Promise<string | undefined> {
  const { previous } = branch;
  if (previous !== undefined && (await isAncestor(context, previous, branch.tip))) {
    return previous;
  }
  if (!(await isAncestor(context, branch.base, branch.tip)) || branch.base === branch.tip) {
    return undefined;
  }
  const { stdout } = await git(
    context,
    ["rev-list", "--first-parent", "--reverse", `${branch.base}..${branch.tip}`],
    "listing the branch's commits",
    { writes: false },
  );
  const first = stdout.split("\n")[0]!;
  const commit = await readCommit(context, first);
  return commit.tree === branch.tree &&
    commit.parents.length === 1 &&
    commit.parents[0] === branch.base
    ? first
    : undefined;
}

/** The commits on `tip` that are not on `from`, oldest first. */
async function commitsBetween(context: Context, from: string, tip: string) {
  const { stdout } = await git(
    context,
    ["log", "--reverse", "--format=%H%x00%h%x00%P%x00%s", `${from}..${tip}`],
    "listing the commits on top of Deckhand's",
    { writes: false },
  );
  return stdout
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line): ForeignCommit => {
      const [sha, abbreviated, parents, subject] = line.split("\0");
      return {
        sha: sha!,
        short: abbreviated!,
        parents: parents!.split(" ").filter((parent) => parent.length > 0),
        subject: subject!,
      };
    });
}

function short(sha: string): string {
  return sha.slice(0, 7);
}

function named(commits: readonly ForeignCommit[]): string {
  return commits.map((commit) => `${commit.short} "${commit.subject}"`).join(", ");
}

function refuseUnlessReplayable(
  context: Context,
  ours: string,
  foreign: readonly ForeignCommit[],
  onConflict: ApplyConflictPolicy,
): void {
  const where = `branch ${context.branch} of ${context.name}`;
  const count = foreign.length === 1 ? "a commit" : `${foreign.length} commits`;
  const merges = foreign.filter((commit) => commit.parents.length > 1);
  if (merges.length > 0) {
    throw new BatchesError(
      "branch_diverged",
      `${where} has ${count} on top of Deckhand's commit ${short(ours)} that Deckhand did not make: ${named(foreign)}; Deckhand cannot replay merge commits (${named(merges)}), so it left the branch alone; rebase the branch by hand onto the changeset's base without merges, or delete it, then apply again`,
    );
  }
  if (onConflict === "refuse") {
    throw new BatchesError(
      "branch_diverged",
      `${where} has ${count} on top of Deckhand's commit ${short(ours)} that Deckhand did not make: ${named(foreign)}; Deckhand left the branch alone; apply again with rebase to replay ${foreign.length === 1 ? "it" : "them"} on Deckhand's new commit, or rebase by hand onto the changeset's base, or delete the branch to drop ${foreign.length === 1 ? "it" : "them"}`,
    );
  }
}

/**
 * Replays `commits` on `onto` in a temporary detached worktree (git 2.39 has no `git replay`,
 * and `merge-tree` cannot take a merge base yet), keeping their authors and messages; the
 * replayed SHAs, oldest first. A conflict refuses, naming the commit, and leaves nothing
 * behind.
 */
async function replay(
  context: Context,
  onto: string,
  commits: readonly ForeignCommit[],
  committer: Identity,
  ours: string,
): Promise<string[]> {
  if (commits.length === 0) return [];
  // The worktree is the fresh directory itself, so its registration's name is unique too.
  const worktree = await mkdtemp(join(tmpdir(), "deckhand-replay-"));
  const environment = {
    GIT_COMMITTER_NAME: committer.name,
    GIT_COMMITTER_EMAIL: committer.email,
    // Git LFS files stay pointers: a replay needs no download, and commits pointers back.
    GIT_LFS_SKIP_SMUDGE: "1",
  };
  try {
    await git(
      context,
      [...quiet, "worktree", "add", "--quiet", "--detach", worktree, onto],
      "adding a temporary worktree to replay commits in",
      { environment },
    );
    const replayed: string[] = [];
    for (const commit of commits) {
      const inWorktree = { ...context, cwd: worktree };
      const { exitCode } = await git(
        inWorktree,
        [
          ...quiet,
          "cherry-pick",
          "--no-gpg-sign",
          "--keep-redundant-commits",
          "--allow-empty",
          commit.sha,
        ],
        `replaying ${commit.short} on Deckhand's new commit`,
        { environment, allowedExitCodes: [1] },
      );
      if (exitCode !== 0) {
        const { stdout } = await git(
          inWorktree,
          ["diff", "--name-only", "--diff-filter=U"],
          "listing conflicting files",
          { writes: false },
        );
        const files = stdout.split("\n").filter((file) => file.length > 0);
        await git(inWorktree, ["cherry-pick", "--abort"], "aborting the replay").catch(() => {});
        throw new BatchesError(
          "branch_diverged",
          `branch ${context.branch} of ${context.name} has ${commits.length === 1 ? "a commit" : `${commits.length} commits`} on top of Deckhand's commit ${short(ours)} that Deckhand did not make: ${named(commits)}; replaying ${commit.short} "${commit.subject}" on the new changes conflicts${files.length > 0 ? ` in ${files.join(", ")}` : ""}, so Deckhand left the branch alone; rebase ${commits.length === 1 ? "it" : "them"} by hand onto Deckhand's new commit ${short(onto)} (git rebase --onto ${onto} ${ours} ${context.branch}) and apply again, or delete the branch to drop ${commits.length === 1 ? "it" : "them"}`,
        );
      }
      replayed.push((await resolveCommit(inWorktree, "HEAD"))!);
    }
    return replayed;
  } finally {
    await git(
      context,
      ["worktree", "remove", "--force", worktree],
      "removing the temporary worktree",
    ).catch(() => {});
    await rm(worktree, { recursive: true, force: true });
  }
}

function foreignBranch(
  context: Context,
  tip: string,
  options: ApplyChangesetOptions,
): BatchesError {
  const previous = options.previousCommit ?? undefined;
  const why =
    previous === undefined
      ? "and Deckhand has no record of making it"
      : `and it does not contain Deckhand's last commit ${short(previous)}`;
  return new BatchesError(
    "branch_exists",
    `branch ${context.branch} already exists in ${context.name} at ${short(tip)}, ${why}; Deckhand does not overwrite a branch it did not make; rename changesetTemplate.branch, or delete or rename that branch, then apply again`,
  );
}

/** Refuses when the branch is checked out in the repository or any of its worktrees. */
async function refuseIfCheckedOut(context: Context): Promise<void> {
  const { stdout } = await git(
    context,
    ["worktree", "list", "--porcelain"],
    "listing the repository's worktrees",
    { writes: false },
  );
  let path = "";
  for (const line of stdout.split("\n")) {
    if (line.startsWith("worktree ")) path = line.slice("worktree ".length);
    if (line === `branch ${context.ref}`) {
      throw new BatchesError(
        "branch_checked_out",
        `branch ${context.branch} of ${context.name} is checked out in ${path}, and Deckhand does not move a checked-out branch under someone's files; switch that working copy to another branch, then apply again`,
      );
    }
  }
}

/** Moves the branch from `from` (undefined: it must not exist) to `to` (undefined: delete). */
async function moveBranch(
  context: Context,
  from: string | undefined,
  to: string | undefined,
): Promise<void> {
  const message = "deckhand: apply changeset";
  const args =
    to === undefined
      ? ["update-ref", "-m", message, "-d", context.ref, from ?? ""]
      : ["update-ref", "-m", message, "--create-reflog", context.ref, to, from ?? ""];
  try {
    await git(context, args, `moving branch ${context.branch}`);
  } catch (error) {
    throw new BatchesError(
      "branch_diverged",
      `branch ${context.branch} of ${context.name} could not be moved from ${from === undefined ? "nothing" : short(from)}: someone changed it while Deckhand was applying the changeset, or git could not lock it (${errorMessage(error)}); apply again`,
      { cause: error },
    );
  }
}

/**
 * Pushes `to` to origin's branch, only if origin's branch is still `expected` (absent when
 * undefined): a commit someone pushed meanwhile is never overwritten.
 */
async function pushBranch(
  context: Context,
  remote: Remote,
  expected: string | undefined,
  to: string,
): Promise<void> {
  try {
    await runGit(
      [
        ...quiet,
        // A mirror's origin pushes every ref; this push is of one branch.
        "-c",
        "remote.origin.mirror=false",
        "push",
        "--quiet",
        "--no-verify",
        `--force-with-lease=${context.ref}:${expected ?? ""}`,
        "origin",
        `${to}:${context.ref}`,
      ],
      {
        cwd: context.cwd,
        timeoutMs: remoteTimeoutMs,
        ...(context.signal ? { signal: context.signal } : {}),
        ...(context.remoteEnvironment ? { environment: context.remoteEnvironment } : {}),
      },
    );
  } catch (error) {
    const stale =
      error instanceof GitError && /stale info|fetch first|non-fast-forward/.test(error.stderr);
    throw remoteError(
      context,
      remote,
      "pushing",
      stale
        ? "someone pushed to the branch while Deckhand was applying; apply again so their commits are kept"
        : "check the network, the URL and the credentials, then apply again",
      error,
    );
  }
}
