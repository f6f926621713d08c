import { HttpError, httpStatusOf } from "@deckhand/http-kit";
import { SessionsError, type SessionsErrorCode } from "@deckhand/sessions";
import type { ErrorCode } from "@deckhand/wire";

/**
 * The one place session-domain codes become wire codes; each wire code's status comes from
 * http-kit's one map. `null` is the server's own failure (git breaking on this machine),
 * answered as an unexpected error: a 500 whose details go to the log, not to the client.
 */
const WIRE_CODE: Record<SessionsErrorCode, ErrorCode | null> = {
  not_found: "not_found",
  invalid_request: "invalid_request",
  conflict: "conflict",
  busy: "conflict",
  git_failed: null,
};

/** A SessionsError as the HttpError the routes answer with; any other value as it is. */
export function sessionsErrorToHttp(error: unknown): unknown {
  if (!SessionsError.isInstance(error)) return error;
  const code = WIRE_CODE[error.code];
  if (code === null) return error;
  return new HttpError(httpStatusOf(code), code, error.message, { cause: error });
}
