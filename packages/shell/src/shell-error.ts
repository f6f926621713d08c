import { DeckhandError } from "@deckhand/wire";

export type ShellErrorCode = "nul_character";

/**
 * The one error type this package throws. Every instance comes from a value no shell word can
 * carry, so the message says which and what to do instead.
 */
export class ShellError extends DeckhandError<ShellErrorCode> {
  static override readonly errorName = "ShellError";
}
