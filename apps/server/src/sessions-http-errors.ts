import { HttpError } from "@deckhand/http-kit";
import { SessionsError, type SessionsErrorCode } from "@deckhand/sessions";
import type { ErrorCode } from "@deckhand/wire";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/**
 * The one place session-domain errors become HTTP answers: each code's status and the stable
 * wire code the client sees. `null` is the server's own failure (git breaking on this machine),
 * answered as an unexpected error: a 500 whose details go to the log, not to the client.
 */
const HTTP_BY_CODE: Record<
  SessionsErrorCode,
  { status: ContentfulStatusCode; code: ErrorCode } | null
> = {
  not_found: { status: 404, code: "not_found" },
  invalid_request: { status: 400, code: "invalid_request" },
  conflict: { status: 409, code: "conflict" },
  busy: { status: 409, code: "conflict" },
  git_failed: null,
};

/** A SessionsError as the HttpError the routes answer with; any other value as it is. */
export function sessionsErrorToHttp(error: unknown): unknown {
  if (!SessionsError.isInstance(error)) return error;
  const http = HTTP_BY_CODE[error.code];
  if (http === null) return error;
  return new HttpError(http.status, http.code, error.message, { cause: error });
}
