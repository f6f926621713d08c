import { DeckhandError } from "@deckhand/wire";

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

/**
 * The one error type this package throws on purpose. The message says what went wrong and what
 * to do next; `SessionsError.isInstance` recognises it across realms and duplicated copies of the
 * package (DeckhandError's registry-wide markers), where `instanceof` would not.
 */
export class SessionsError extends DeckhandError<SessionsErrorCode> {
  static override readonly errorName = "SessionsError";
}
