import { DeckhandError } from "@deckhand/wire";

export type HeadTailErrorCode = "invalid_cursor" | "invalid_limit" | "invalid_options";

/**
 * The one error type this package throws. Every instance comes from a caller passing a value
 * the buffer cannot honour, so the message names the value and what would be accepted.
 */
export class HeadTailError extends DeckhandError<HeadTailErrorCode> {
  static override readonly errorName = "HeadTailError";
}
