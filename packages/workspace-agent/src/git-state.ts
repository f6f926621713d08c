import { GitError, runGit as runGitCommand } from "@deckhand/git";
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

/**
 * Runs git in `cwd` through @deckhand/git; resolves with standard output, rejects with a
 * GitError carrying git's stderr. Everything here only reads, so optional locks are off: `git
 * status` never rewrites the index, which would wake the watch that ran it.
 */
export async function runGit(
  cwd: string,
  args: string[],
  options: { input?: string; okExitCodes?: number[] } = {},
): Promise<string> {
  const { stdout } = await runGitCommand(args, {
    cwd,
    readOnly: true,
    timeoutMs: 60_000,
    // Status of a large worktree with many untracked files is big; a cut would misreport it.
    maxOutputBytes: 256 * 1024 * 1024,
    ...(options.input === undefined ? {} : { input: options.input }),
    ...(options.okExitCodes ? { allowedExitCodes: options.okExitCodes } : {}),
  });
  return stdout;
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
    throw new GitError("unexpected_output", `${directory} is not inside a git worktree`, {
      args: ["rev-parse"],
      cwd: directory,
      exitCode: 0,
      stderr: "",
    });
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
