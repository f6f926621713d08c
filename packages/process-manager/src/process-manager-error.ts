import { DeckhandError, type ErrorCode } from "@deckhand/wire";

/**
 * The one error type of this package. `code` is the stable wire code a caller branches on; the
 * message says what went wrong and what to do next, because its reader is often an LLM.
 */
export class ProcessManagerError extends DeckhandError<ErrorCode> {
  // Typed `string` because ProcessClientError names itself.
  static override readonly errorName: string = "ProcessManagerError";
}
