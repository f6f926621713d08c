import { DeckhandError } from "@deckhand/wire";

export type GlobErrorCode = "invalid_glob";

/** The one error type this package throws: a malformed pattern, and what is wrong with it. */
export class GlobError extends DeckhandError<GlobErrorCode> {
  static override readonly errorName = "GlobError";
}
