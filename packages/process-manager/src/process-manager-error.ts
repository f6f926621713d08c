import type { ErrorCode } from "@deckhand/wire";

/**
 * The one error type of this package. `code` is the stable wire code a caller branches on; the
 * message says what went wrong and what to do next, because its reader is often an LLM.
 */
export class ProcessManagerError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ProcessManagerError";
    this.code = code;
  }
}
