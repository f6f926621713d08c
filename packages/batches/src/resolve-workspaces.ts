// From a batch spec's `on:` and `workspaces:` to the list of workspaces a run executes: one per
// repository, branch and (for monorepos) project directory, each at a fixed commit, with the
// steps that apply to it.

import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import {
  type BatchSpec,
  BatchSpecError,
  compileGlob,
  evaluateStaticCondition,
  type Step,
  type WorkspaceConfiguration,
} from "@deckhand/batch-spec";
import { errorMessage } from "@deckhand/errors";
import { BatchesError } from "./batches-error.ts";
import { findRepository } from "./find-repository.ts";
import type { Repository, RepositoryHost } from "./repositories.ts";
import { mapLimited, repositoryGit } from "./repository-git.ts";
import { parseRepositoryQuery } from "./repository-query.ts";
import { listFiles, repositoryPassesQuery, searchRepository } from "./repository-search.ts";
import { resolveBranch, resolveDefaultBranch } from "./revisions.ts";

export interface WorkspaceRepository {
  id: string;
  name: string;
  host: RepositoryHost;
  /** Where git runs for it: a working copy, or the cached mirror of a URL host. */
  path: string;
  /** The clone URL (without a password) of a URL host. */
  url: string | undefined;
}

export interface WorkspaceStep {
  /** The step's position in the spec's `steps`, so results and caches can name it. */
  index: number;
  step: Step;
}

export interface Workspace {
  repository: WorkspaceRepository;
  branch: string;
  /** The commit SHA the steps run on. */
  revision: string;
  /** The workspace's directory relative to the repository root; "" for the root. */
  path: string;
  /**
   * Only this directory needs to be checked out (`workspaces[].onlyFetchWorkspace`); always
   * false for a workspace at the repository root.
   */
  onlyFetchWorkspace: boolean;
  /** `repository.search_result_paths`: matching files inside this workspace, sorted. */
  searchResultPaths: string[];
  /**
   * The spec's steps that apply: every step whose `if:` is true or depends on step results (and
   * is decided when it runs). Never empty when the spec has steps: a workspace where every step
   * is skipped is left out, with a warning.
   */
  steps: WorkspaceStep[];
}

export interface ResolveWorkspacesOptions {
  /** The repositories of the configured code hosts (`loadRepositories`). */
  repositories: readonly Repository[];
  /**
   * Whether commits seen before have a `.batchignore`, kept across resolutions (a server's runs);
   * without it every resolution asks git.
   */
  batchIgnores?: BatchIgnoreMemory;
  /** Include repositories with a `.batchignore` at their root (src-cli's -force-override-ignore). */
  forceOverrideIgnore?: boolean;
  signal?: AbortSignal;
}

export interface ResolveWorkspacesResult {
  workspaces: Workspace[];
  /** Things the user should know that did not stop resolution: skipped repositories, ignored filters. */
  warnings: string[];
}

interface Target {
  repository: Repository;
  branch: string;
  revision: string;
  paths: Set<string>;
}

const parallelism = 4;

/**
 * What the `on:` entries say about each repository, with Sourcegraph's precedence: the last
 * `repository:` entry naming a repository decides its branches, replacing what earlier entries
 * and any query said about it (with no search result paths, as there); otherwise the queries
 * matching it give its default branch, their search result paths added up.
 */
class Targets {
  private readonly explicit = new Map<string, Target[]>();
  private readonly queried = new Map<string, Target>();
  /** Repository ids in the order they were first named or matched. */
  private readonly order: string[] = [];

  private remember(id: string): void {
    if (!this.explicit.has(id) && !this.queried.has(id)) this.order.push(id);
  }

  setExplicit(repository: Repository, revisions: readonly { branch: string; revision: string }[]) {
    this.remember(repository.id);
    const byBranch = new Map(revisions.map((revision) => [revision.branch, revision]));
    this.explicit.set(
      repository.id,
      [...byBranch.values()].map(({ branch, revision }) => ({
        repository,
        branch,
        revision,
        paths: new Set(),
      })),
    );
  }

  addQueried(target: Target): void {
    this.remember(target.repository.id);
    const existing = this.queried.get(target.repository.id);
    if (existing === undefined) this.queried.set(target.repository.id, target);
    else for (const path of target.paths) existing.paths.add(path);
  }

  list(): Target[] {
    return this.order.flatMap((id) => this.explicit.get(id) ?? [this.queried.get(id)!]);
  }
}

async function collectTargets(
  spec: BatchSpec,
  options: ResolveWorkspacesOptions,
  warnings: string[],
): Promise<Target[]> {
  const targets = new Targets();
  const { signal } = options;
  for (const entry of spec.on ?? []) {
    if (entry.repository !== undefined) {
      const repository = findRepository(options.repositories, entry.repository);
      const branches = entry.branches ?? (entry.branch !== undefined ? [entry.branch] : undefined);
      const revisions =
        branches === undefined
          ? [await resolveDefaultBranch(repository, signal)]
          : await mapLimited(branches, parallelism, (branch) =>
              resolveBranch(repository, branch, signal),
            );
      targets.setExplicit(repository, revisions);
      continue;
    }
    if (entry.repositoriesMatchingQuery === undefined) continue;
    // Sourcegraph reads version 1 specs' queries as standard search, later ones as keyword.
    const query = parseRepositoryQuery(entry.repositoriesMatchingQuery, {
      defaultPatternType: spec.version === 1 ? "standard" : "keyword",
    });
    warnings.push(...query.warnings);
    const candidates = options.repositories.filter((repository) =>
      repositoryPassesQuery(repository, query),
    );
    // Each search answers a target, nothing, or why it skipped the repository (a warning),
    // so warnings come out in the order of the repositories, not of the searches finishing.
    type Searched = Target | { skipped: string } | undefined;
    const results = await mapLimited(
      candidates,
      parallelism,
      async (repository): Promise<Searched> => {
        let resolved: { branch: string; revision: string };
        try {
          resolved = await resolveDefaultBranch(repository, signal);
        } catch (error) {
          // One odd repository (detached, empty) must not stop a search over all of them.
          if (BatchesError.isInstance(error) && error.code === "revision_not_found") {
            return { skipped: `skipped ${repository.name} in the search: ${error.message}` };
          }
          throw error;
        }
        const found = await searchRepository(repository, resolved.revision, query, signal);
        return found.matched ? { repository, ...resolved, paths: new Set(found.paths) } : undefined;
      },
    );
    for (const result of results) if (result && "skipped" in result) warnings.push(result.skipped);
    const matched = results.filter((result) => result !== undefined && "repository" in result);
    if (matched.length === 0) {
      warnings.push(
        `repositoriesMatchingQuery "${entry.repositoriesMatchingQuery}" matched no repository on the configured code hosts`,
      );
    }
    for (const target of matched) targets.addQueried(target);
  }
  return targets.list();
}

/**
 * Whether commits have a `.batchignore` at their root, as git answered for them. A commit id names
 * its tree for good, so the answer holds for as long as the commit is the one resolved; a
 * repository that moved resolves to another commit, which git is asked about. The oldest answers
 * are forgotten past `limit`.
 */
export class BatchIgnoreMemory {
  readonly #answers = new Map<string, boolean>();
  readonly #limit: number;

  constructor(limit = 10_000) {
    this.#limit = limit;
  }

  get(revision: string): boolean | undefined {
    return this.#answers.get(revision);
  }

  set(revision: string, ignored: boolean): void {
    this.#answers.delete(revision);
    this.#answers.set(revision, ignored);
    if (this.#answers.size > this.#limit) {
      this.#answers.delete(this.#answers.keys().next().value!);
    }
  }
}

async function hasBatchIgnore(
  target: Target,
  signal: AbortSignal | undefined,
  memory: BatchIgnoreMemory | undefined,
): Promise<boolean> {
  const known = memory?.get(target.revision);
  if (known !== undefined) return known;
  const ignored = await batchIgnoreAt(target, signal);
  memory?.set(target.revision, ignored);
  return ignored;
}

async function batchIgnoreAt(target: Target, signal: AbortSignal | undefined): Promise<boolean> {
  const { stdout } = await repositoryGit(
    target.repository.path,
    ["ls-tree", "--full-tree", target.revision, "--", ".batchignore"],
    `looking for .batchignore in ${target.repository.name}`,
    { signal },
  );
  // `<mode> <type> <object>\t.batchignore`: only a file counts, as in Sourcegraph.
  return /^\d+ blob /.test(stdout);
}

/** A `workspaces[].in` glob; a malformed one is the spec's to fix. */
function workspaceGlob(pattern: string): ReturnType<typeof compileGlob> {
  try {
    return compileGlob(pattern);
  } catch (error) {
    throw new BatchesError("invalid_workspace_configuration", errorMessage(error), {
      cause: error,
    });
  }
}

function configurationFor(
  configurations: readonly WorkspaceConfiguration[],
  repository: Repository,
): WorkspaceConfiguration | undefined {
  const names = [repository.name, ...(repository.originName ? [repository.originName] : [])];
  const applying = configurations.filter((configuration) => {
    if (configuration.in === undefined) return true;
    const glob = workspaceGlob(configuration.in);
    return names.some((name) => glob.matches(name));
  });
  if (applying.length > 1) {
    throw new BatchesError(
      "invalid_workspace_configuration",
      `repository ${repository.name} matches ${applying.length} workspaces configurations (${applying
        .map(
          (configuration) =>
            `rootAtLocationOf: ${configuration.rootAtLocationOf}, in: ${configuration.in ?? "(all)"}`,
        )
        .join("; ")}); make their in: globs exclusive`,
    );
  }
  return applying[0];
}

/** The directories holding a file named `fileName` at `revision`, sorted; "" for the root. */
async function projectDirectories(
  target: Target,
  fileName: string,
  signal: AbortSignal | undefined,
): Promise<string[]> {
  const files = await listFiles(target.repository, target.revision, signal);
  const directories = new Set<string>();
  for (const file of files) {
    const slash = file.lastIndexOf("/");
    if (file.slice(slash + 1) === fileName)
      directories.add(slash === -1 ? "" : file.slice(0, slash));
  }
  return [...directories].sort();
}

function inside(path: string, directory: string): boolean {
  return directory === "" || path.startsWith(`${directory}/`);
}

/**
 * The steps whose `if:` does not rule them out ahead of time. Each templated condition is
 * bounded (STATIC_CONDITION_STEP_BUDGET) and followed by a turn of the event loop, so a spec
 * with many conditions over many repositories never holds up the server's other requests.
 */
async function applicableSteps(
  spec: BatchSpec,
  repository: Repository,
  branch: string,
  searchResultPaths: readonly string[],
): Promise<WorkspaceStep[]> {
  const steps: WorkspaceStep[] = [];
  for (const [index, step] of (spec.steps ?? []).entries()) {
    if (typeof step.if === "string") await yieldToEventLoop();
    let applies: boolean | "dynamic";
    try {
      applies = evaluateStaticCondition(step.if, {
        repository: { name: repository.name, branch, fileMatches: searchResultPaths },
        batchChange: {
          name: spec.name,
          ...(spec.description !== undefined ? { description: spec.description } : {}),
        },
      });
    } catch (error) {
      if (!(error instanceof BatchSpecError)) throw error;
      throw new BatchesError(
        "invalid_step_condition",
        `the if: of step ${index} fails for ${repository.name}: ${error.message}`,
        { cause: error },
      );
    }
    if (applies !== false) steps.push({ index, step });
  }
  return steps;
}

function workspaceRepository(repository: Repository): WorkspaceRepository {
  const { id, name, host, path, url } = repository;
  return { id, name, host, path, url };
}

/**
 * Resolves a validated spec's workspaces over the given repositories: `on:` entries (by name or
 * origin, with branches, or by query), `.batchignore`, `workspaces:` (one workspace per
 * directory holding `rootAtLocationOf`, read from git at the revision, no checkout), and the
 * steps whose static `if:` holds. Sorted by repository name, branch and path.
 */
export async function resolveWorkspaces(
  spec: BatchSpec,
  options: ResolveWorkspacesOptions,
): Promise<ResolveWorkspacesResult> {
  const warnings: string[] = [];
  const targets = await collectTargets(spec, options, warnings);
  const ignored = await mapLimited(targets, parallelism, (target) =>
    hasBatchIgnore(target, options.signal, options.batchIgnores),
  );
  const kept: Target[] = [];
  for (const [index, target] of targets.entries()) {
    if (!ignored[index]) kept.push(target);
    else if (options.forceOverrideIgnore) {
      warnings.push(
        `${target.repository.name} has a .batchignore but is included: ignore files are overridden`,
      );
      kept.push(target);
    } else {
      warnings.push(
        `skipped ${target.repository.name}: it has a .batchignore file at its root (override with forceOverrideIgnore, --force-override-ignore)`,
      );
    }
  }
  const perTarget = await mapLimited(kept, parallelism, async (target) => {
    const searchResultPaths = [...target.paths].sort();
    const configuration = configurationFor(spec.workspaces ?? [], target.repository);
    const directories =
      configuration === undefined
        ? [""]
        : await projectDirectories(target, configuration.rootAtLocationOf, options.signal);
    const targetWarnings: string[] = [];
    if (configuration !== undefined && directories.length === 0) {
      targetWarnings.push(
        `${target.repository.name}@${target.branch} has no ${configuration.rootAtLocationOf}, so no workspace: workspaces are the directories that hold it`,
      );
    }
    const workspaces: Workspace[] = [];
    for (const path of directories) {
      const paths = searchResultPaths.filter((file) => inside(file, path));
      const steps = await applicableSteps(spec, target.repository, target.branch, paths);
      const where = `${target.repository.name}@${target.branch}${path === "" ? "" : ` in ${path}`}`;
      // As in src-cli, a workspace where every step is skipped has nothing to run. A spec
      // without steps keeps its workspaces, so a draft shows where it would run.
      if (steps.length === 0 && (spec.steps ?? []).length > 0) {
        targetWarnings.push(`${where} has no workspace: the if: of every step is false there`);
        continue;
      }
      workspaces.push({
        repository: workspaceRepository(target.repository),
        branch: target.branch,
        revision: target.revision,
        path,
        // The root is the whole repository: there is nothing to leave out.
        onlyFetchWorkspace: path !== "" && (configuration?.onlyFetchWorkspace ?? false),
        searchResultPaths: paths,
        steps,
      });
    }
    return { workspaces, warnings: targetWarnings };
  });
  for (const result of perTarget) warnings.push(...result.warnings);
  const workspaces = perTarget
    .flatMap((result) => result.workspaces)
    .sort(
      (left, right) =>
        left.repository.name.localeCompare(right.repository.name) ||
        left.branch.localeCompare(right.branch) ||
        left.path.localeCompare(right.path) ||
        left.repository.id.localeCompare(right.repository.id),
    );
  return { workspaces, warnings };
}
