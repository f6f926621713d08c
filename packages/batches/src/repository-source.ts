// Where batch work finds its repositories: the configured code hosts (and a run's extra
// directories), git URL hosts cloned into this process's cache, and the credentials git needs
// for each URL — a git URL host's own password, else the token of the code host connection the
// URL belongs to. Resolving a spec's workspaces, the workspace and apply jobs and changeset hooks
// all reach repositories through one, so each sees the same ones with the same credentials.
import type { BatchSpec } from "@deckhand/batch-spec";
import type { BatchRunOptions } from "@deckhand/wire";
import type { CodeHost } from "./code-host-config.ts";
import { codeHostGitEnvironment, type GitEnvironmentFor } from "./code-host-credentials.ts";
import {
  loadRepositories,
  locateRepository,
  type Repository,
  unfetchedRepositoryPath,
} from "./repositories.ts";
import { BatchIgnoreMemory, resolveWorkspaces, type Workspace } from "./resolve-workspaces.ts";

export interface RepositorySourceOptions {
  /** The configured code hosts, read at each use (config.json may change). */
  codeHosts: () => readonly CodeHost[];
  /** Where git URL hosts are cloned. */
  cacheDirectory: string;
  /**
   * The code host connections' credentials for URLs without their own (`CodeHostAccess`'s
   * `gitEnvironment`); none without connections.
   */
  connections?: GitEnvironmentFor | undefined;
}

/** Of a run's options, those that choose its workspaces. */
export type WorkspaceSelection = Pick<
  BatchRunOptions,
  "code_host_directories" | "force_override_ignore" | "exclude_repositories"
>;

export interface ResolvedWorkspaces {
  workspaces: Workspace[];
  warnings: string[];
}

export class RepositorySource {
  readonly #options: RepositorySourceOptions;
  /** Git's environment for commands that reach a URL: its code host's credentials, if any. */
  readonly gitEnvironment: GitEnvironmentFor;
  /** What git said of `.batchignore` at the commits this process resolved before. */
  readonly #batchIgnores = new BatchIgnoreMemory();

  constructor(options: RepositorySourceOptions) {
    this.#options = options;
    this.gitEnvironment = codeHostGitEnvironment(options.codeHosts, options.connections);
  }

  /**
   * The workspaces a spec runs in: its `on:` matched against the code hosts' repositories (git
   * URL hosts fetched first), without the repositories the run excludes, each with a warning.
   */
  async workspaces(
    spec: BatchSpec,
    selection: WorkspaceSelection,
    signal?: AbortSignal,
  ): Promise<ResolvedWorkspaces> {
    const repositories = await loadRepositories({
      codeHosts: this.#options.codeHosts(),
      extraDirectories: selection.code_host_directories ?? [],
      cacheDirectory: this.#options.cacheDirectory,
      gitEnvironment: this.gitEnvironment,
      ...(signal ? { signal } : {}),
    });
    const result = await resolveWorkspaces(spec, {
      repositories,
      forceOverrideIgnore: selection.force_override_ignore ?? false,
      batchIgnores: this.#batchIgnores,
      ...(signal ? { signal } : {}),
    });
    const excluded = new Set(selection.exclude_repositories ?? []);
    return {
      workspaces: result.workspaces.filter((workspace) => !excluded.has(workspace.repository.name)),
      warnings: [
        ...result.warnings,
        ...[...excluded].map((name) => `repository ${name} is excluded from this run`),
      ],
    };
  }

  /**
   * Where git runs for a stored workspace's repository at `revision` on this machine: a
   * directory host's working copy, or a git URL host's mirror in the cache, fetched when it lacks
   * the commit.
   */
  /**
   * Where a directory host's repository is, without a git process; null for a URL host's, which
   * `locate` finds. Whoever uses the path unchecked calls `locate` when git fails there, for the
   * error that says what is missing.
   */
  unfetchedPath(repository: Pick<Repository, "host" | "path">): string | null {
    return unfetchedRepositoryPath(repository, this.#options.codeHosts());
  }

  locate(
    repository: Pick<Repository, "id" | "name" | "host" | "path">,
    revision: string,
    signal?: AbortSignal,
  ): Promise<string> {
    return locateRepository(repository, revision, {
      codeHosts: this.#options.codeHosts(),
      cacheDirectory: this.#options.cacheDirectory,
      gitEnvironment: this.gitEnvironment,
      ...(signal ? { signal } : {}),
    });
  }
}
