import type { ErrorCode } from "@deckhand/wire";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/**
 * The one table of the HTTP statuses each wire error code is answered with, for every Deckhand
 * HTTP API (server, workspace agent, model-provider proxy) and every router in them. A router
 * maps its package's error to a wire code; the status comes from here, so one code never means
 * two statuses in two places.
 *
 * The first status is the code's status (`httpStatusOf`). Any further one is a more precise status
 * HTTP has for the same meaning, which a handler may pick where it applies, because clients and
 * proxies act on it: 426 for a plain request to a WebSocket endpoint (`invalid_request`), 412 for
 * a failed `If-Match` (`conflict`), 503 for an agent that is shutting down and 400 for a watch
 * path the file system refuses (`internal`).
 */
export const ERROR_CODE_HTTP_STATUSES = {
  invalid_json: [400],
  invalid_request: [400, 426],
  unauthorized: [401],
  not_found: [404],
  conflict: [409, 412],
  too_many_processes: [429],
  rate_limited: [429],
  upstream_unavailable: [502],
  // Payment Required: agent CLIs retry a 429 (a budget does not refill by waiting) but show a
  // 402's message and stop.
  budget_exceeded: [402],
  path_outside_root: [403],
  file_not_found: [404],
  not_a_file: [400],
  edit_failed: [422],
  binary_file: [415],
  body_too_large: [413],
  uri_too_long: [414],
  headers_too_large: [431],
  host_not_allowed: [403],
  origin_not_allowed: [403],
  unsupported_media_type: [415],
  internal: [500, 503, 400],
} as const satisfies Record<ErrorCode, readonly [ContentfulStatusCode, ...ContentfulStatusCode[]]>;

type StatusTable = typeof ERROR_CODE_HTTP_STATUSES;

/** Every status an answer with this code may have (the code's status and its precise forms). */
export type HttpStatusOf<Code extends ErrorCode> = StatusTable[Code][number];

/** The status an error with this code is answered with. */
export function httpStatusOf<Code extends ErrorCode>(code: Code): StatusTable[Code][0] {
  return ERROR_CODE_HTTP_STATUSES[code][0];
}

/** Whether an answer may carry this status with this code (for checks of what was answered). */
export function isHttpStatusOf(code: ErrorCode, status: number): boolean {
  return (ERROR_CODE_HTTP_STATUSES[code] as readonly number[]).includes(status);
}
