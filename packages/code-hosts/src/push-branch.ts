// Pushing a changeset's branch to its code host over https. The token travels only in git's
// `http.<url>.extraHeader`, set through GIT_CONFIG_COUNT/KEY/VALUE in git's environment: never in
// argv (which `ps` shows every user), in the URL (which git prints and stores) or in a config
// file. The push is leased, so commits a person added to the branch are never overwritten.
import { basicAuthGitEnvironment, GitError, runGit } from "@deckhand/git";
import { rememberSecrets } from "@deckhand/secrets";
import { CodeHostError, type RemoteCommit } from "./code-host-error.ts";
import { type CodeHostConnection, connectionName, gitUserOf } from "./connection.ts";
import { readConnectionToken } from "./host-fetch.ts";
import { cloneUrl } from "./remote-url.ts";

export interface PushBranchOptions {
  connection: CodeHostConnection;
  /** The repository on the host (`owner/name`), as `resolveRepository` gives it. */
  repository: string;
  /** A directory of the local repository that holds `commit`. */
  localPath: string;
  /** The commit to push, as a SHA or a local ref. */
  commit: string;
  /** The branch on the host. */
  branch: string;
  /**
   * What the remote branch must point at now for the push to go ahead: the commit Deckhand
   * pushed there last, or null when the branch must not exist yet. Anything else on the remote
   * was pushed by someone else, and the push is refused with `push_rejected`.
   */
  expectedRemoteCommit: string | null;
  /** Where the token is read from; process.env by default. */
  environment?: Readonly<Record<string, string | undefined>>;
  /** The URL to push to; by default the connection's https clone URL of the repository. */
  remoteUrl?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface PushBranchResult {
  /** The commit the remote branch points at now. */
  remoteCommit: string;
  /** False when the branch already pointed at the commit and nothing was sent. */
  pushed: boolean;
}

/**
 * The environment that hands git the token for one URL only: an `Authorization` header for
 * requests under the repository's URL (not for a redirect elsewhere), and no credential helper,
 * so a stored credential is neither used nor overwritten. Exported for the other git commands
 * that reach a connection's repositories (cloning and fetching a mirror, a leased push of one's
 * own); throws `token_missing` when the variable is unset.
 */
export function gitAuthEnvironment(
  connection: CodeHostConnection,
  url: string,
  environment: Readonly<Record<string, string | undefined>> | undefined,
): Record<string, string> {
  const token = readConnectionToken(connection, environment);
  const credentials = basicAuthGitEnvironment(url, gitUserOf(connection), token);
  rememberSecrets([credentials.encoded]);
  return credentials.environment;
}

/** The lines of `git push --porcelain` for one ref: `<flag>\t<from>:<to>\t<summary>`. */
function porcelainFlag(stdout: string, ref: string): { flag: string; summary: string } | undefined {
  for (const line of stdout.split("\n")) {
    const [flag, refs, summary = ""] = line.split("\t");
    if (flag !== undefined && refs?.endsWith(`:${ref}`)) return { flag, summary };
  }
  return undefined;
}

async function git(
  args: string[],
  options: PushBranchOptions,
  environment: Record<string, string>,
) {
  return runGit(args, {
    cwd: options.localPath,
    environment,
    allowedExitCodes: [1],
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  });
}

/** The commits on the fetched remote branch that pushing `commit` would drop. */
async function foreignCommits(
  options: PushBranchOptions,
  environment: Record<string, string>,
  url: string,
  ref: string,
): Promise<RemoteCommit[]> {
  const fetched = await git(["fetch", "--quiet", "--no-tags", url, ref], options, environment);
  if (fetched.exitCode !== 0) return [];
  const exclude = [options.commit];
  if (options.expectedRemoteCommit !== null) {
    // Deckhand's own last push is no one else's work; it may be gone if the branch was replaced.
    const known = await git(
      ["cat-file", "-e", `${options.expectedRemoteCommit}^{commit}`],
      options,
      {},
    );
    if (known.exitCode === 0) exclude.push(options.expectedRemoteCommit);
  }
  const log = await git(
    ["log", "--format=%H%x09%an <%ae>%x09%s", "FETCH_HEAD", "--not", ...exclude, "--"],
    options,
    {},
  );
  return log.stdout
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => {
      const [sha = "", author = "", subject = ""] = line.split("\t");
      return { sha, author, subject };
    });
}

/**
 * Pushes `commit` to `branch` on the host with `--force-with-lease`: the remote branch is
 * replaced only if it still points at `expectedRemoteCommit` (or, for null, does not exist). If
 * someone pushed to it meanwhile, nothing is overwritten and a `push_rejected` CodeHostError
 * names their commits (`remoteCommits`). A refused token is `unauthorized`, a missing one
 * `token_missing`; other failures are `push_failed` with git's message.
 */
export async function pushBranch(options: PushBranchOptions): Promise<PushBranchResult> {
  const name = connectionName(options.connection);
  const url = options.remoteUrl ?? cloneUrl(options.connection, options.repository);
  const environment = gitAuthEnvironment(options.connection, url, options.environment);
  const ref = `refs/heads/${options.branch}`;
  const lease = `--force-with-lease=${ref}:${options.expectedRemoteCommit ?? ""}`;
  let result: Awaited<ReturnType<typeof git>>;
  try {
    result = await git(
      ["push", "--porcelain", "--no-verify", lease, url, `${options.commit}:${ref}`],
      options,
      environment,
    );
  } catch (error) {
    const detail = GitError.isInstance(error)
      ? error.stderr.trim() || error.message
      : String(error);
    throw pushFailure(options, detail, error);
  }
  const line = porcelainFlag(result.stdout, ref);
  if (result.exitCode === 0 && line !== undefined) {
    const resolved = await git(["rev-parse", `${options.commit}^{commit}`], options, {});
    return { remoteCommit: resolved.stdout.trim(), pushed: line.flag !== "=" };
  }
  if (
    line?.flag === "!" &&
    /stale info|fetch first|non-fast-forward|already exists/.test(line.summary)
  ) {
    const commits = await foreignCommits(options, environment, url, ref);
    const listed = commits
      .slice(0, 10)
      .map((commit) => `${commit.sha.slice(0, 12)} ${commit.author} "${commit.subject}"`)
      .join("; ");
    const more = commits.length > 10 ? ` and ${commits.length - 10} more` : "";
    const what =
      commits.length === 0
        ? "was changed by someone else"
        : `has ${commits.length} commit${commits.length === 1 ? "" : "s"} Deckhand did not push: ${listed}${more}`;
    throw new CodeHostError(
      "push_rejected",
      `${options.branch} on ${options.repository} (${name}) ${what}; nothing was overwritten. Bring those changes into the changeset, or delete the branch, then publish again`,
      { connection: name, remoteCommits: commits },
    );
  }
  const detail = result.stderr.trim() || line?.summary || `git exited with ${result.exitCode}`;
  throw pushFailure(options, detail, undefined);
}

/** A failed push: `unauthorized` when the host refused the token, `push_failed` otherwise. */
function pushFailure(options: PushBranchOptions, detail: string, cause: unknown): CodeHostError {
  const name = connectionName(options.connection);
  // Refused credentials make git ask for a user name, which it may not (no terminal prompts).
  if (/could not read Username|Authentication failed|error: 40[13]/.test(detail)) {
    return new CodeHostError(
      "unauthorized",
      `${name} refused the token in ${options.connection.tokenEnv} for pushing to ${options.repository}: ${detail}`,
      { connection: name },
      { cause },
    );
  }
  return new CodeHostError(
    "push_failed",
    `pushing ${options.branch} to ${options.repository} on ${name} failed: ${detail}`,
    { connection: name },
    { cause },
  );
}
