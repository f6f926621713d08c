/** Bad command-line usage: the command prints the message and its usage, and exits 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
