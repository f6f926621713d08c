// Glob patterns as batch specs use them (`matches`, `published` rules, `workspaces[].in`), with
// @deckhand/glob's matcher: gobwas/glob syntax without separators, which is what Sourcegraph
// compiles these patterns with, so `*` also matches `/`. Matching takes time linear in the text
// (no backtracking), so no pattern in a spec can stall whoever evaluates it.
import { compileGlob as compileSharedGlob, type Glob, GlobError } from "@deckhand/glob";
import { BatchSpecError } from "./batch-spec-error.ts";

/** Compiles a glob once; throws `BatchSpecError` `invalid_glob` for a malformed pattern. */
export function compileGlob(pattern: string): Glob {
  try {
    return compileSharedGlob(pattern);
  } catch (error) {
    if (GlobError.isInstance(error)) {
      throw new BatchSpecError("invalid_glob", error.message, { cause: error });
    }
    throw error;
  }
}

/** True when `text` matches the whole glob `pattern`. */
export function matchesGlob(pattern: string, text: string): boolean {
  return compileGlob(pattern).matches(text);
}
