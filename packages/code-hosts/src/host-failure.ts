// Turns what a client library throws (octokit's RequestError, a failed Response, a network
// error) into one CodeHostError with a stable code, so callers never branch on library types.
import { errorMessage } from "@deckhand/errors";
import { CodeHostError, type CodeHostErrorCode } from "./code-host-error.ts";
import { type CodeHostConnection, connectionName } from "./connection.ts";

/**
 * Whether a value is a fetch Response. Not `instanceof Response`: a server in the same process
 * may replace the global `Response` (`@hono/node-server` does, for speed), and then the native
 * fetch's answers are no instance of the global class.
 */
export function isResponse(value: unknown): value is Response {
  if (value instanceof Response) return true;
  if (typeof value !== "object" || value === null || value instanceof Error) return false;
  const candidate = value as { status?: unknown; headers?: { get?: unknown }; text?: unknown };
  return (
    typeof candidate.status === "number" &&
    typeof candidate.headers?.get === "function" &&
    typeof candidate.text === "function"
  );
}

/** The error code for an HTTP status that the policy did not retry away. */
export function codeForStatus(status: number): CodeHostErrorCode {
  if (status === 401 || status === 403) return "unauthorized";
  if (status === 404 || status === 410) return "not_found";
  if (status === 405 || status === 409 || status === 422) return "conflict";
  if (status === 429) return "rate_limited";
  if (status >= 500) return "host_unavailable";
  return "unexpected_response";
}

/** The host's own explanation in an error body: `message`, `error`, `error.message`. */
export function hostMessage(body: unknown): string | undefined {
  if (typeof body === "string") return body.trim() === "" ? undefined : body.trim().slice(0, 500);
  if (typeof body !== "object" || body === null) return undefined;
  const record = body as Record<string, unknown>;
  for (const key of ["message", "error_description", "error"]) {
    const value = record[key];
    if (typeof value === "string" && value !== "") return value;
    if (typeof value === "object" && value !== null) {
      const inner = hostMessage(value);
      if (inner !== undefined) return inner;
    }
    if (Array.isArray(value) && value.length > 0) return value.map(String).join("; ");
  }
  return undefined;
}

function statusOf(error: unknown): number | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const status = (error as { status?: unknown }).status;
  return typeof status === "number" && status >= 100 ? status : undefined;
}

function findCodeHostError(error: unknown): CodeHostError | undefined {
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 6; depth += 1) {
    if (CodeHostError.isInstance(current)) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * A CodeHostError for a failed operation: one the policy threw (found through `cause`), or one
 * made from the HTTP status and the host's message that `details` gives.
 */
export function hostFailure(
  error: unknown,
  connection: string,
  operation: string,
  details: { status?: number; body?: unknown } = {},
): CodeHostError {
  const known = findCodeHostError(error);
  if (known !== undefined) return known;
  const status = details.status ?? statusOf(error);
  if (status === undefined) {
    return new CodeHostError(
      "host_unavailable",
      `${operation} on ${connection} failed: ${errorMessage(error)}`,
      { connection },
      { cause: error },
    );
  }
  const said = hostMessage(details.body) ?? (error instanceof Error ? error.message : undefined);
  return new CodeHostError(
    codeForStatus(status),
    `${operation} on ${connection} failed with HTTP ${status}${said ? `: ${said}` : ""}`,
    { connection, status },
    { cause: error },
  );
}

/** The error for an operation a kind of host does not have. */
export function unsupported(connection: CodeHostConnection, what: string): CodeHostError {
  return new CodeHostError(
    "unsupported",
    `${connectionName(connection)} (${connection.type}) cannot ${what}`,
    { connection: connectionName(connection) },
  );
}
