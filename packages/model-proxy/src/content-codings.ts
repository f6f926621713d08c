/**
 * The codings a `Content-Encoding` header lists, lower-cased and without `identity`, in the
 * order to undo them: the last one applied first.
 */
export function codingsToUndo(contentEncoding: string | undefined): string[] {
  return (contentEncoding ?? "")
    .split(",")
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== "" && coding !== "identity")
    .reverse();
}
