import { execFile } from "node:child_process";
import type { GitChange, GitFileStatus, GitRepositoryState, GitUpstream } from "@deckhand/wire";

/** Where a worktree and its git directories are; for a linked worktree they differ. */
export interface GitRepositoryLocation {
  /** Real absolute path of the worktree's top level. */
  topLevel: string;
  /** This worktree's git dir: HEAD and index live here (`.git/worktrees/<name>` when linked). */
  gitDir: string;
  /** The shared git dir: refs, packed-refs and config live here. */
  commonDir: string;
}

/** Git failed or the directory is not in a worktree; `stderr` is git's own explanation. */
export class GitCommandError extends Error {
  readonly stderr: string;

  constructor(message: string, stderr: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "GitCommandError";
    this.stderr = stderr;
  }
}

/**
 * The environment git runs with. Variables that redirect git to another repository are dropped,
 * so an agent started from inside a git hook still looks at the directory it was asked about;
 * optional locks are off so that `git status` never rewrites the index, which would wake the
 * watch that ran it.
 */
function gitEnvironment(): NodeJS.ProcessEnv {
  const environment: NodeJS.ProcessEnv = {
    ...process.env,
    GIT_OPTIONAL_LOCKS: "0",
    GIT_TERMINAL_PROMPT: "0",
    LC_ALL: "C",
  };
  for (const name of ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"]) {
    delete environment[name];
  }
  return environment;
}

/** Runs git in `cwd`; resolves with standard output, rejects with a GitCommandError. */
export function runGit(
  cwd: string,
  args: string[],
  options: { input?: string; okExitCodes?: number[] } = {},
): Promise<string> {
  return new Promise((resolveRun, rejectRun) => {
    const child = execFile(
      "git",
      args,
      {
        cwd,
        env: gitEnvironment(),
        encoding: "utf8",
        // Status of a large worktree with many untracked files is big; a cut would misreport it.
        maxBuffer: 256 * 1024 * 1024,
        timeout: 60_000,
      },
      (error, stdout, stderr) => {
        const exitCode = error && typeof error.code === "number" ? error.code : null;
        if (error && !(exitCode !== null && options.okExitCodes?.includes(exitCode))) {
          rejectRun(
            new GitCommandError(
              `git ${args[0]} failed in ${cwd}: ${stderr.trim() || error.message}`,
              stderr,
              { cause: error },
            ),
          );
          return;
        }
        resolveRun(stdout);
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** Finds the worktree containing `directory`; rejects when there is none (or it is bare). */
export async function locateRepository(directory: string): Promise<GitRepositoryLocation> {
  const output = await runGit(directory, [
    "rev-parse",
    "--path-format=absolute",
    "--show-toplevel",
    "--git-dir",
    "--git-common-dir",
  ]);
  const [topLevel, gitDir, commonDir] = output.split("\n");
  if (!topLevel || !gitDir || !commonDir) {
    throw new GitCommandError(`${directory} is not inside a git worktree`, output);
  }
  return { topLevel, gitDir, commonDir };
}

const STATUS_BY_LETTER: Record<string, GitFileStatus> = {
  ".": "unmodified",
  M: "modified",
  T: "type_changed",
  A: "added",
  D: "deleted",
  R: "renamed",
  C: "copied",
  U: "unmerged",
};

function fileStatus(letter: string | undefined): GitFileStatus {
  return STATUS_BY_LETTER[letter ?? "."] ?? "modified";
}

/** `<fields> <path>`: the path is the rest of the record, spaces and all. */
function splitRecord(record: string, fieldCount: number): { fields: string[]; path: string } {
  const fields: string[] = [];
  let rest = record;
  for (let index = 0; index < fieldCount; index += 1) {
    const space = rest.indexOf(" ");
    fields.push(rest.slice(0, space));
    rest = rest.slice(space + 1);
  }
  return { fields, path: rest };
}

/**
 * Parses `git status --porcelain=v2 -z --branch` (records separated by NUL; a rename record is
 * followed by one more NUL-terminated field, the original path).
 */
export function parsePorcelainV2(output: string, topLevel: string): GitRepositoryState {
  const records = output.split("\0");
  let branch: string | null = null;
  let head: string | null = null;
  let upstreamName: string | null = null;
  let aheadBehind: { ahead: number; behind: number } | null = null;
  const changes: GitChange[] = [];
  for (let index = 0; index < records.length; index += 1) {
    const record = records[index]!;
    if (record.length === 0) continue;
    const kind = record[0];
    if (kind === "#") {
      const [, key, ...values] = record.split(" ");
      const value = values.join(" ");
      if (key === "branch.oid") head = value === "(initial)" ? null : value;
      else if (key === "branch.head") branch = value === "(detached)" ? null : value;
      else if (key === "branch.upstream") upstreamName = value;
      else if (key === "branch.ab") {
        const match = /^\+(\d+) -(\d+)$/.exec(value);
        if (match) aheadBehind = { ahead: Number(match[1]), behind: Number(match[2]) };
      }
    } else if (kind === "1" || kind === "2" || kind === "u") {
      // Fields before the path: 1 → 8, 2 → 9 (adds the rename score), u → 10.
      const fieldCount = kind === "1" ? 8 : kind === "2" ? 9 : 10;
      const { fields, path } = splitRecord(record, fieldCount);
      const letters = fields[1] ?? "..";
      const change: GitChange = {
        path,
        index: fileStatus(letters[0]),
        worktree: fileStatus(letters[1]),
        conflicted: kind === "u",
      };
      if (kind === "2") {
        index += 1;
        change.original_path = records[index] ?? "";
      }
      changes.push(change);
    } else if (kind === "?") {
      changes.push({
        path: record.slice(2),
        index: "untracked",
        worktree: "untracked",
        conflicted: false,
      });
    }
    // `!` (ignored) records are not requested; anything else is a newer git's extension.
  }
  const upstream: GitUpstream | null =
    upstreamName === null
      ? null
      : {
          name: upstreamName,
          ahead: aheadBehind?.ahead ?? null,
          behind: aheadBehind?.behind ?? null,
        };
  changes.sort((left, right) => (left.path < right.path ? -1 : left.path > right.path ? 1 : 0));
  return { root: topLevel, branch, head, upstream, changes };
}

/** The repository's state now, as the git watch reports it. */
export async function readRepositoryState(
  location: GitRepositoryLocation,
): Promise<GitRepositoryState> {
  const output = await runGit(location.topLevel, [
    "status",
    "--porcelain=v2",
    "-z",
    "--branch",
    "--untracked-files=all",
  ]);
  return parsePorcelainV2(output, location.topLevel);
}
