// `on: - repository: NAME`: which configured repository a spec means.
import { editDistance } from "@deckhand/batch-spec";
import { BatchesError } from "./batches-error.ts";
import type { Repository } from "./repositories.ts";

function describe(repository: Repository): string {
  const where = repository.url ?? repository.path;
  return repository.originName !== undefined && repository.originName !== repository.name
    ? `${repository.name} (${where}, origin ${repository.originName})`
    : `${repository.name} (${where})`;
}

/**
 * The one repository whose name on its host, or whose origin remote, is `name`. Throws
 * `repository_ambiguous` listing every match when several are, and `repository_not_found`
 * listing the closest names when none is.
 */
export function findRepository(repositories: readonly Repository[], name: string): Repository {
  const wanted = name.replace(/\.git$/, "").replace(/\/+$/, "");
  const matches = repositories.filter(
    (repository) => repository.name === wanted || repository.originName === wanted,
  );
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1) {
    throw new BatchesError(
      "repository_ambiguous",
      `repository ${name} matches ${matches.length} repositories: ${matches.map(describe).join("; ")}; remove all but one from the code hosts, or name one by its path below its code host directory`,
    );
  }
  if (repositories.length === 0) {
    throw new BatchesError(
      "repository_not_found",
      `repository ${name} not found: no code host offers any repository; configure a code host or pass a directory of repositories`,
    );
  }
  const closest = repositories
    .map((repository) => ({
      repository,
      distance: Math.min(
        editDistance(wanted, repository.name),
        repository.originName === undefined
          ? Number.POSITIVE_INFINITY
          : editDistance(wanted, repository.originName),
      ),
    }))
    .sort(
      (left, right) =>
        left.distance - right.distance || left.repository.name.localeCompare(right.repository.name),
    )
    .slice(0, 5)
    .map(({ repository }) => describe(repository));
  throw new BatchesError(
    "repository_not_found",
    `repository ${name} not found on the configured code hosts; the closest are: ${closest.join("; ")}`,
  );
}
