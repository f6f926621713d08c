/**
 * What went wrong, stably: the server's routes map each code to an HTTP status, other callers
 * branch on it. `busy` is an operation refused because the session is doing something that
 * cannot be interleaved with it; `git_failed` is git itself failing on the server's machine.
 */
export type SessionsErrorCode =
  | "not_found"
  | "conflict"
  | "invalid_request"
  | "busy"
  | "git_failed";

const MARKER = "deckhand.sessions.error";
const MARKER_SYMBOL = Symbol.for(MARKER);

/**
 * The one error type this package throws on purpose. The message says what went wrong and what
 * to do next. `isInstance` recognises it across realms and duplicated copies of the package
 * (a registry-wide symbol marks it), where `instanceof` would not.
 */
export class SessionsError extends Error {
  readonly [MARKER_SYMBOL] = true;
  readonly code: SessionsErrorCode;

  constructor(code: SessionsErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SessionsError";
    this.code = code;
  }

  static isInstance(error: unknown): error is SessionsError {
    return (
      typeof error === "object" &&
      error !== null &&
      MARKER_SYMBOL in error &&
      (error as Record<symbol, unknown>)[MARKER_SYMBOL] === true
    );
  }
}
