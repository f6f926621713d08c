// Answers a parsed repositoriesMatchingQuery for one repository at one commit, with git alone:
// `git ls-tree` for file-name filters, `git grep` for content patterns. No checkout is needed.
import type { Repository } from "./repositories.ts";
import { nulSeparated, repositoryGit } from "./repository-git.ts";
import type { PatternFilter, RepositoryQuery } from "./repository-query.ts";

export interface RepositorySearchResult {
  matched: boolean;
  /** The paths of the matching files, sorted; empty for repository-only queries. */
  paths: string[];
}

function filterPasses(filters: readonly PatternFilter[], texts: readonly string[], flags: string) {
  return filters.every((filter) => {
    const expression = new RegExp(filter.pattern, flags);
    const matches = texts.some((text) => expression.test(text));
    return filter.negated ? !matches : matches;
  });
}

/** True when the repository's name or its origin's name passes every repo: and -repo: filter. */
export function repositoryPassesQuery(repository: Repository, query: RepositoryQuery): boolean {
  const names = [repository.name, ...(repository.originName ? [repository.originName] : [])];
  return filterPasses(query.repositories, names, query.caseSensitive ? "" : "i");
}

/** Lists every file at `revision` (paths relative to the repository root). */
export async function listFiles(
  repository: Repository,
  revision: string,
  signal?: AbortSignal,
): Promise<string[]> {
  const { stdout } = await repositoryGit(
    repository.path,
    ["ls-tree", "-r", "-z", "--name-only", "--full-tree", revision],
    `listing the files of ${repository.name} at ${revision}`,
    { signal },
  );
  return nulSeparated(stdout);
}

/** Literal text as a POSIX extended regular expression that matches exactly it. */
export function escapeExtendedRegExp(text: string): string {
  return text.replaceAll(/[.^$*+?()[\]{}|\\]/g, "\\$&");
}

async function grepFiles(
  repository: Repository,
  revision: string,
  query: RepositoryQuery,
  signal?: AbortSignal,
): Promise<string[]> {
  const args = ["grep", "-l", "-z", "-I", "--full-name", "--no-color"];
  // One git grep reads every pattern the same way: with any regular expression among them,
  // the literal ones are escaped into regular expressions too.
  const anyRegExp = query.content.some((pattern) => pattern.regexp);
  args.push(anyRegExp ? "--extended-regexp" : "--fixed-strings");
  if (!query.caseSensitive) args.push("--ignore-case");
  if (query.content.length > 1) args.push("--all-match");
  for (const pattern of query.content) {
    args.push(
      "-e",
      anyRegExp && !pattern.regexp ? escapeExtendedRegExp(pattern.text) : pattern.text,
    );
  }
  args.push(revision, "--");
  const { stdout, exitCode } = await repositoryGit(
    repository.path,
    args,
    `searching ${repository.name} at ${revision}`,
    { allowedExitCodes: [1], signal },
  );
  if (exitCode === 1) return [];
  // Searching a tree, git names each file `<revision>:<path>`.
  return nulSeparated(stdout).map((entry) =>
    entry.startsWith(`${revision}:`) ? entry.slice(revision.length + 1) : entry,
  );
}

/**
 * Whether the repository at `revision` matches the query, and the paths that do. Repository
 * filters are checked first; file filters apply to every listed (or grepped) path.
 */
export async function searchRepository(
  repository: Repository,
  revision: string,
  query: RepositoryQuery,
  signal?: AbortSignal,
): Promise<RepositorySearchResult> {
  if (!repositoryPassesQuery(repository, query)) return { matched: false, paths: [] };
  if (query.files.length === 0 && query.content.length === 0) return { matched: true, paths: [] };
  const candidates =
    query.content.length > 0
      ? await grepFiles(repository, revision, query, signal)
      : await listFiles(repository, revision, signal);
  const flags = query.caseSensitive ? "" : "i";
  const paths = candidates.filter((path) => filterPasses(query.files, [path], flags)).sort();
  return { matched: paths.length > 0, paths: query.selectRepository ? [] : paths };
}
