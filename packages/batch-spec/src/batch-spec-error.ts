import { DeckhandError } from "@deckhand/wire";

/** Stable codes of BatchSpecError; problems inside a spec are diagnostics, with codes of their own. */
export type BatchSpecErrorCode =
  /** A function was called with a value it cannot take (a cache key part, a CLI option). */
  | "invalid_argument"
  /** The spec file cannot be read. */
  | "unreadable_spec"
  /** A render call's input does not fit its schema. */
  | "invalid_render_input"
  | "invalid_agent_type"
  | "unknown_agent_type"
  | "duplicate_agent_type"
  | "unsupported_platform"
  | "invalid_env_name"
  | "invalid_glob"
  | "invalid_stage_path"
  /** A value given to the shell contains a NUL character, which no shell can pass on. */
  | "shell_nul_character"
  | "template_syntax"
  | "template_unknown_variable"
  | "template_unknown_function"
  /** A template function failed while rendering. */
  | "template_error";

/**
 * The one error type @deckhand/batch-spec throws. Validation problems in a spec are returned as
 * diagnostics instead; this is for calls that cannot produce a result at all (a template that
 * fails while rendering, a render with an unsupported platform, a registry conflict). `code` is
 * stable so callers can branch on it; the message says what went wrong and what to do next.
 */
export class BatchSpecError extends DeckhandError<BatchSpecErrorCode> {
  static override readonly errorName = "BatchSpecError";
  /**
   * Where in the input the problem is, as a UTF-16 offset, when the input is a template. Callers
   * that know where the template sits in a file turn it into a line and column.
   */
  readonly offset: number | undefined;

  constructor(
    code: BatchSpecErrorCode,
    message: string,
    options?: { cause?: unknown; offset?: number },
  ) {
    super(code, message, options);
    this.offset = options?.offset;
  }
}
