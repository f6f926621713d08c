/**
 * The message of anything thrown: an Error's message, anything else as a string. For turning a
 * caught `unknown` into text for a person, a log line or a model.
 */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The string `code` of a thrown Error (`ENOENT`, `EACCES`, `ESRCH`, or a library's own code such
 * as `ERR_CHILD_PROCESS_STDIO_MAXBUFFER`), or undefined when it has none. Node's `ErrnoException`
 * type only claims such a property; this checks it is there.
 */
export function errnoCode(error: unknown): string | undefined {
  if (error instanceof Error && "code" in error && typeof error.code === "string") {
    return error.code;
  }
  return undefined;
}
