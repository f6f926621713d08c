// Resolves `changesetTemplate.published` for one changeset.
import type { PublishedInput } from "./batch-spec-schema.ts";
import { matchesGlob } from "./glob.ts";

/** A changeset's publication state; null leaves it to the UI. */
export type PublishedState = boolean | "draft" | null;

/**
 * The published state for a changeset in `repositoryName` on `branch` (the rendered, trimmed
 * branch, without `refs/heads/`). A single value applies to every changeset; in a list of
 * `{pattern: value}` rules the last matching rule wins, and a pattern may end in `@branch` to
 * match only that branch. As in src-cli (`MatchWithSuffix`), the repository part is a glob and
 * the branch part is compared exactly; an empty branch part matches every branch. No matching
 * rule gives null.
 */
export function resolvePublished(
  published: PublishedInput | undefined,
  repositoryName: string,
  branch?: string,
): PublishedState {
  if (published === undefined || published === null) return null;
  if (!Array.isArray(published)) return published;
  let state: PublishedState = null;
  for (const rule of published) {
    for (const [pattern, value] of Object.entries(rule)) {
      // Repository names cannot contain "@"; branch names can, so split at the first one.
      const at = pattern.indexOf("@");
      const repositoryPattern = at < 0 ? pattern : pattern.slice(0, at);
      const branchPart = at < 0 ? "" : pattern.slice(at + 1);
      if (!matchesGlob(repositoryPattern, repositoryName)) continue;
      if (branchPart !== "" && branchPart !== branch) continue;
      state = value;
    }
  }
  return state;
}
