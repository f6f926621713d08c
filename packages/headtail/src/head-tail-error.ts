export type HeadTailErrorCode = "invalid_cursor" | "invalid_limit" | "invalid_options";

/**
 * The one error type this package throws. Every instance comes from a caller passing a value
 * the buffer cannot honour, so the message names the value and what would be accepted.
 */
export class HeadTailError extends Error {
  readonly code: HeadTailErrorCode;

  constructor(code: HeadTailErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "HeadTailError";
    this.code = code;
  }
}
