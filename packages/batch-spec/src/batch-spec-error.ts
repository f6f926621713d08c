/**
 * The one error type @deckhand/batch-spec throws. Validation problems in a spec are returned as
 * diagnostics instead; this is for calls that cannot produce a result at all (a template that
 * fails while rendering, a render with an unsupported platform, a registry conflict). `code` is
 * stable so callers can branch on it; the message says what went wrong and what to do next.
 */
export class BatchSpecError extends Error {
  readonly code: string;
  /**
   * Where in the input the problem is, as a UTF-16 offset, when the input is a template. Callers
   * that know where the template sits in a file turn it into a line and column.
   */
  readonly offset: number | undefined;

  constructor(code: string, message: string, options?: { cause?: unknown; offset?: number }) {
    super(message, options);
    this.name = "BatchSpecError";
    this.code = code;
    this.offset = options?.offset;
  }
}
