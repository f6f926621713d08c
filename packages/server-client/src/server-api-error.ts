import type { ErrorCode, ErrorResponseSchema } from "@deckhand/wire";
import { DeckhandError } from "@deckhand/wire/no-schemas";

/**
 * What a call failed with: the server's own stable code (`{error: {code, message}}`), or one of
 * the client's when the server gave no such answer.
 */
export type ServerApiErrorCode =
  | ErrorCode
  /** No answer at all: the server is down, or the address is wrong. `status` is 0. */
  | "unreachable"
  /** An answer that is not the route's (a proxy's error page, another program, another version). */
  | "unexpected_answer";

/**
 * The one error a server client call throws. `code` is stable for callers to branch on; `status`
 * is the HTTP status, 0 when no answer came.
 */
export class ServerApiError extends DeckhandError<ServerApiErrorCode> {
  static override readonly errorName = "ServerApiError";
  readonly status: number;

  constructor(
    status: number,
    code: ServerApiErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.status = status;
  }
}

/** The text of an answer read as JSON, or `undefined` when it is not JSON. */
export function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * The error an answer carries: the server's `{error: {code, message}}` when it is one, else an
 * `unexpected_answer` that quotes the start of what came back. The schema is the caller's:
 * the client loads the package's schemas while its request is out.
 */
export function answeredError(
  request: { method: string; path: string },
  status: number,
  text: string,
  errorSchema: typeof ErrorResponseSchema,
): ServerApiError {
  const decoded = errorSchema.safeParse(jsonOf(text));
  if (decoded.success) {
    return new ServerApiError(status, decoded.data.error.code, decoded.data.error.message);
  }
  const quoted = text.trim() === "" ? "" : `: ${text.slice(0, 200)}`;
  return new ServerApiError(
    status,
    "unexpected_answer",
    `${request.method} ${request.path} answered ${status}${quoted}`,
  );
}

/** Why a fetch got no answer, in a word or two: `ECONNREFUSED`, `getaddrinfo ENOTFOUND x`. */
export function unreachableReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === "string") return cause.code;
  if (typeof cause?.message === "string") return cause.message;
  return error instanceof Error ? error.message : String(error);
}
