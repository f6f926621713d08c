import { DeckhandError, type ErrorCode } from "@deckhand/wire";
import type { HttpStatusOf } from "./error-status.ts";

/**
 * The one error type Deckhand HTTP handlers throw. It carries the status and the stable code
 * the client sees; the message must say what went wrong and what to do next. The status must be
 * one the status map allows for the code (`new HttpError(409, "conflict", …)`; a 404 there does
 * not compile); `httpStatusOf(code)` gives it for a code known only at run time.
 */
export class HttpError<Code extends ErrorCode = ErrorCode> extends DeckhandError<Code> {
  static override readonly errorName = "HttpError";
  readonly status: HttpStatusOf<Code>;

  constructor(
    status: HttpStatusOf<Code>,
    code: Code,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.status = status;
  }
}
