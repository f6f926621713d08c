import { DeckhandError } from "@deckhand/wire";

export type BatchesErrorCode =
  /** The code host configuration does not parse: a missing directory, a malformed URL. */
  | "invalid_code_host"
  /** A git URL host could not be cloned into the cache or fetched; the cause is the GitError. */
  | "clone_failed"
  /** An `on: - repository:` names no configured repository. */
  | "repository_not_found"
  /** An `on: - repository:` names several configured repositories; the message lists them. */
  | "repository_ambiguous"
  /** A `branch`/`branches` entry, or a default branch, does not resolve to a commit. */
  | "revision_not_found"
  /** `repositoriesMatchingQuery` does not parse, or uses a part of the language Deckhand lacks. */
  | "invalid_query"
  /** A `workspaces` configuration cannot be applied (malformed glob, two configurations apply). */
  | "invalid_workspace_configuration"
  /** A step's `if:` fails to evaluate for a workspace (a template error). */
  | "invalid_step_condition"
  /** Git failed while reading a repository (listing files, searching, checking out). */
  | "git_failed"
  /** A step could not be prepared or its result could not be used (a template, an output). */
  | "step_failed"
  /** A step must run in a container and no container runtime works on this machine. */
  | "container_runtime_unavailable"
  /** A step's `files` or `mount` cannot be placed for a local run; the message says why. */
  | "invalid_step_file"
  /** `<data-dir>/config.json` cannot be read for batch jobs; the message names the key. */
  | "invalid_config"
  /** A submitted batch spec does not validate; the message lists every located problem. */
  | "invalid_spec"
  /** No run, workspace or step with the id asked for. */
  | "not_found"
  /** The run or workspace is in a state that does not allow this (still running, say). */
  | "conflict"
  /** A workspace job was given up by its worker (shutdown, lost lease) and will run again. */
  | "interrupted"
  /**
   * A changeset template does not render, two changesets share a branch in one repository, or
   * a changeset's diff does not apply to its base.
   */
  | "invalid_changeset"
  /**
   * A changeset's branch has commits Deckhand did not make on top of its own, and they cannot be
   * kept (a replay conflicts, a merge, or the caller asked to refuse); the message names each.
   */
  | "branch_diverged"
  /** A changeset's branch exists and Deckhand did not make it; it is not overwritten. */
  | "branch_exists"
  /** A changeset's branch would have to move while checked out in a working copy or worktree. */
  | "branch_checked_out"
  /** Reading, fetching or pushing a changeset's branch on the remote failed. */
  | "push_failed"
  /**
   * A `codingAgent` step cannot run: its agent type is unknown or has no version, model or
   * install source configured, the run has no model-provider access or job id, or the step does
   * not render. The message names what to set.
   */
  | "coding_agent_unavailable"
  /** A changeset cannot be published: its repository matches no code host connection. */
  | "publish_failed"
  /** A changeset hook could not run, or its steps failed. */
  | "hook_failed";

/**
 * The one error type @deckhand/batches throws. `code` is stable for callers to branch on; the
 * message says what went wrong and what to do. `isInstance` also recognises errors made by
 * another copy of this package (two versions installed side by side, or another realm), where
 * `instanceof` would say no.
 */
export class BatchesError extends DeckhandError<BatchesErrorCode> {
  static override readonly errorName = "BatchesError";
}
