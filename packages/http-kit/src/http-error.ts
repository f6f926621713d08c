import type { ErrorCode } from "@deckhand/wire";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/**
 * The one error type Deckhand HTTP handlers throw. It carries the status and the stable code
 * the client sees; the message must say what went wrong and what to do next.
 */
export class HttpError extends Error {
  readonly status: ContentfulStatusCode;
  readonly code: ErrorCode;

  constructor(
    status: ContentfulStatusCode,
    code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "HttpError";
    this.status = status;
    this.code = code;
  }
}
