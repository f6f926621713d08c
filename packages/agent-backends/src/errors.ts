import { DeckhandError } from "@deckhand/wire";

/**
 * Stable codes of AgentBackendError. Callers branch on these, never on messages, because a
 * message is written for its reader (often a model) and may change.
 */
export const AGENT_BACKEND_ERROR_CODES = [
  /** Tool arguments (or a tool name) the model sent do not fit the tool's schema. */
  "invalid_arguments",
  "unknown_tool",
  /** A patch is not in the apply_patch format; the message names the line. */
  "patch_parse_failed",
  /** A patch is well formed but does not fit the files (a hunk, a missing or existing file). */
  "patch_mismatch",
  /** Writing a checked patch failed; the files already written were put back. */
  "patch_apply_failed",
  /** A path leads outside the worktree, or is absolute where only relative paths are allowed. */
  "path_outside_worktree",
  /** The workspace agent's file API refused or failed a request. */
  "file_error",
  /** The workspace agent's process API refused or failed a request. */
  "process_error",
  /** A search/replace edit does not fit the file. */
  "edit_failed",
  /** A model request failed for good (after its retries); ModelClientError's `kind` says how. */
  "model_request_failed",
  /** A backend was given options it cannot work with (the native agent without a model proxy). */
  "invalid_options",
  /** A call needs a live agent session: call `ensureSession` first (again after `closeSession`). */
  "no_session",
  /** The backend was disposed; make a new one. */
  "disposed",
  /** An ACP agent could not be started: spawn, `initialize` or the session setup failed. */
  "agent_start_failed",
  /** A prompt arrived while the backend was still running another turn. */
  "turn_in_progress",
  /** A permission answer names a request that is not pending (answered, cancelled, unknown). */
  "unknown_permission_request",
  /** The caller's AbortSignal fired; the work was stopped. */
  "aborted",
  "internal",
] as const;

export type AgentBackendErrorCode = (typeof AGENT_BACKEND_ERROR_CODES)[number];

/** The one error type of @deckhand/agent-backends. */
export class AgentBackendError extends DeckhandError<AgentBackendErrorCode> {
  // Typed `string` because its subclasses (PatchParseError, ModelClientError) name themselves.
  static override readonly errorName: string = "AgentBackendError";
}

/** A patch that does not parse; `line` is 1-based in the patch text as given. */
export class PatchParseError extends AgentBackendError {
  static override readonly errorName: string = "PatchParseError";
  readonly line: number;

  constructor(line: number, message: string) {
    super("patch_parse_failed", `invalid patch: line ${line}: ${message}`);
    this.line = line;
  }
}
