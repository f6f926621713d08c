import { BatchesError, type BatchesErrorCode } from "@deckhand/batches";
import { HttpError, httpStatusOf } from "@deckhand/http-kit";
import type { ErrorCode } from "@deckhand/wire";

/**
 * The one place batch-engine codes become wire codes (statuses from http-kit's one map). A spec
 * that does not validate, or whose repositories cannot be resolved, is the client's to fix: 400
 * with the located problems. `null` is this machine's failure (git breaking, a clone that fails
 * for the server), answered as an unexpected error whose details go to the log.
 */
const WIRE_CODE: Record<BatchesErrorCode, ErrorCode | null> = {
  invalid_spec: "invalid_request",
  invalid_code_host: "invalid_request",
  invalid_query: "invalid_request",
  invalid_workspace_configuration: "invalid_request",
  invalid_step_condition: "invalid_request",
  invalid_changeset: "invalid_request",
  invalid_step_file: "invalid_request",
  repository_not_found: "not_found",
  repository_ambiguous: "invalid_request",
  revision_not_found: "invalid_request",
  not_found: "not_found",
  conflict: "conflict",
  clone_failed: "upstream_unavailable",
  container_runtime_unavailable: "invalid_request",
  git_failed: null,
  invalid_config: null,
  step_failed: null,
  interrupted: null,
  branch_diverged: "conflict",
  branch_exists: "conflict",
  branch_checked_out: "conflict",
  push_failed: "upstream_unavailable",
  coding_agent_unavailable: "invalid_request",
  publish_failed: "invalid_request",
  hook_failed: null,
};

/** A BatchesError as the HttpError the routes answer with; any other value as it is. */
export function batchesErrorToHttp(error: unknown): unknown {
  if (!BatchesError.isInstance(error)) return error;
  const code = WIRE_CODE[error.code];
  if (code === null) return error;
  return new HttpError(httpStatusOf(code), code, error.message, { cause: error });
}
