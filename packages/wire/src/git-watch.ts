import { z } from "zod";
import { ErrorResponseSchema } from "./errors.ts";

/**
 * The workspace agent's git watch (`GET /api/v0/git/watch`, a WebSocket): a `snapshot` frame with
 * the repository's state, then a `change` frame each time that state differs from the last one
 * sent. Every state frame carries the whole state, not a diff, so a client never has to merge
 * and a dropped connection is repaired by reconnecting.
 */

/** The query of the upgrade request. */
export const GitWatchQuerySchema = z.object({
  /**
   * A directory inside the agent's root, relative to it or absolute; the repository containing
   * it is watched. The agent root itself when absent.
   */
  path: z.string().min(1).optional(),
});
export type GitWatchQuery = z.infer<typeof GitWatchQuerySchema>;

/**
 * One side (index or worktree) of a path's status, from the `XY` letters of
 * `git status --porcelain=v2`: `.` is `unmodified`, `M` `modified`, `T` `type_changed`, `A`
 * `added`, `D` `deleted`, `R` `renamed`, `C` `copied`, `U` `unmerged`; untracked paths have
 * `untracked` on both sides.
 */
export const GitFileStatusSchema = z.enum([
  "unmodified",
  "modified",
  "type_changed",
  "added",
  "deleted",
  "renamed",
  "copied",
  "unmerged",
  "untracked",
]);
export type GitFileStatus = z.infer<typeof GitFileStatusSchema>;

/** A path that differs from HEAD, in the index, in the worktree, or both. */
export const GitChangeSchema = z.object({
  /** Relative to the repository's top level, `/`-separated, as git prints it. */
  path: z.string(),
  /** For a rename or copy: the path it came from. */
  original_path: z.string().optional(),
  /** Staged status (HEAD against the index). */
  index: GitFileStatusSchema,
  /** Unstaged status (the index against the worktree). */
  worktree: GitFileStatusSchema,
  /** An unresolved merge conflict. */
  conflicted: z.boolean(),
});
export type GitChange = z.infer<typeof GitChangeSchema>;

/** The upstream of the current branch, when it has one. */
export const GitUpstreamSchema = z.object({
  /** e.g. `origin/main`. */
  name: z.string(),
  /** Commits on the branch that the upstream lacks; null when the upstream ref is gone. */
  ahead: z.number().int().min(0).nullable(),
  /** Commits on the upstream that the branch lacks; null when the upstream ref is gone. */
  behind: z.number().int().min(0).nullable(),
});
export type GitUpstream = z.infer<typeof GitUpstreamSchema>;

/** What the watch reports; two states are equal exactly when their JSON is. */
export const GitRepositoryStateSchema = z.object({
  /** Real absolute path of the worktree's top level. */
  root: z.string(),
  /** The checked-out branch (`main`, not `refs/heads/main`); null when HEAD is detached. */
  branch: z.string().nullable(),
  /** The commit HEAD points to (full hex id); null on a branch with no commit yet. */
  head: z.string().nullable(),
  upstream: GitUpstreamSchema.nullable(),
  /** Changed, staged and untracked paths (ignored ones never), sorted by path. */
  changes: z.array(GitChangeSchema),
});
export type GitRepositoryState = z.infer<typeof GitRepositoryStateSchema>;

/** How the agent notices changes: file-system events, or polling when those are unavailable. */
export const GitWatchModeSchema = z.enum(["events", "polling"]);
export type GitWatchMode = z.infer<typeof GitWatchModeSchema>;

export const GitWatchFrameSchema = z.discriminatedUnion("type", [
  /** Always the first frame. */
  z.object({
    type: z.literal("snapshot"),
    state: GitRepositoryStateSchema,
    mode: GitWatchModeSchema,
  }),
  /** The state changed since the last frame. */
  z.object({ type: z.literal("change"), state: GitRepositoryStateSchema }),
  /** The watch cannot go on (e.g. the repository was removed); the socket closes after it. */
  z.object({ type: z.literal("error"), error: ErrorResponseSchema.shape.error }),
]);
export type GitWatchFrame = z.infer<typeof GitWatchFrameSchema>;
