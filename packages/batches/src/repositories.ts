// Finds the repositories the configured code hosts offer: directory hosts are scanned for git
// repositories, git URL hosts are cloned into the cache (as mirrors) and fetched. A URL's password
// never reaches the disk: git gets it per command (see code-host-credentials.ts).
import { createHash, randomUUID } from "node:crypto";
import type { Dirent } from "node:fs";
import { mkdir, readdir, realpath, rename, rm, stat } from "node:fs/promises";
import { basename, join, relative, resolve, sep } from "node:path";
import { errnoCode } from "@deckhand/errors";
import { originUrlFromFiles, redactUrl, repositoryNameFromUrl, runGit } from "@deckhand/git";
import { BatchesError } from "./batches-error.ts";
import type { CodeHost, DirectoryCodeHost, GitUrlCodeHost } from "./code-host-config.ts";
import { type GitEnvironmentFor, gitUrlAccess } from "./code-host-credentials.ts";
import { mapLimited, remoteFailure, repositoryGit } from "./repository-git.ts";

export type RepositoryHost =
  | { type: "directory"; root: string }
  | { type: "git"; url: string; cachePath: string };

export interface Repository {
  /** Stable and unique over the configured hosts: the host type and where the repository is. */
  id: string;
  /** The name on its host: the path below a directory host's root, or host/path of a URL. */
  name: string;
  /** The name of its `origin` remote (host/path), when it has one. */
  originName: string | undefined;
  host: RepositoryHost;
  /** Where git runs for it: the working copy of a directory host, the mirror of a URL host. */
  path: string;
  /** The clone URL of a URL host, without a password. */
  url: string | undefined;
}

export interface LoadRepositoriesOptions {
  codeHosts: readonly CodeHost[];
  /** Directory hosts for this call only (`--code-host DIR`), after the configured ones. */
  extraDirectories?: readonly string[];
  /** Where git URL hosts are cloned; required when there is one. */
  cacheDirectory?: string;
  /** Fetch cached clones before answering (default true): a run sees the remote as it is now. */
  refresh?: boolean;
  /**
   * Variables for git when it clones or fetches a URL without a password of its own (the code
   * host connection's token, as an `http.<url>.extraHeader`); undefined for a URL that needs none.
   */
  gitEnvironment?: GitEnvironmentFor;
  signal?: AbortSignal;
}

/** How many git commands run at once while loading (the machine may be small and shared). */
const parallelism = 4;

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

/** A bare repository: `HEAD`, `objects/` and `refs/` side by side. */
async function isBareRepository(path: string, entries: ReadonlySet<string>): Promise<boolean> {
  return (
    entries.has("HEAD") &&
    entries.has("objects") &&
    entries.has("refs") &&
    (await isDirectory(join(path, "objects")))
  );
}

/**
 * Every git repository below `root`: a directory with a `.git` (directory or file) or a bare
 * repository. A repository's own subdirectories are not searched (nested checkouts and
 * submodules belong to it); symbolic links to directories are followed once.
 */
async function scanDirectory(root: string): Promise<{ path: string; bare: boolean }[]> {
  const found: { path: string; bare: boolean }[] = [];
  const visited = new Set<string>();
  async function visit(directory: string): Promise<void> {
    const real = await realpath(directory).catch(() => undefined);
    if (real === undefined || visited.has(real)) return;
    visited.add(real);
    let entries: Dirent[];
    try {
      entries = await readdir(directory, { withFileTypes: true });
    } catch (error) {
      if (errnoCode(error) === "EACCES" || errnoCode(error) === "ENOENT") return;
      throw error;
    }
    const names = new Set(entries.map((entry) => entry.name));
    if (names.has(".git")) {
      found.push({ path: directory, bare: false });
      return;
    }
    if (await isBareRepository(directory, names)) {
      found.push({ path: directory, bare: true });
      return;
    }
    for (const entry of entries.sort((left, right) => left.name.localeCompare(right.name))) {
      const child = join(directory, entry.name);
      if (entry.isDirectory() || (entry.isSymbolicLink() && (await isDirectory(child)))) {
        await visit(child);
      }
    }
  }
  await visit(root);
  return found;
}

async function originName(path: string, signal: AbortSignal | undefined) {
  // Read from the repository's config file where it is plain (no git process per repository of
  // the host on every run); git reads anything unusual.
  const fromFiles = originUrlFromFiles(path);
  if (fromFiles !== undefined) {
    return fromFiles === null ? undefined : repositoryNameFromUrl(fromFiles.trim());
  }
  const { stdout, exitCode } = await repositoryGit(
    path,
    ["config", "--get", "remote.origin.url"],
    `reading the origin remote of ${path}`,
    { allowedExitCodes: [1], signal },
  );
  return exitCode === 0 ? repositoryNameFromUrl(stdout.trim()) : undefined;
}

async function directoryRepositories(
  host: DirectoryCodeHost,
  signal: AbortSignal | undefined,
): Promise<Repository[]> {
  const root = resolve(host.path);
  if (!(await isDirectory(root))) {
    throw new BatchesError(
      "invalid_code_host",
      `code host directory ${root} does not exist or is not a directory; create it or fix the path in the code host configuration`,
    );
  }
  const realRoot = await realpath(root);
  const found = await scanDirectory(root);
  return mapLimited(found, parallelism, async ({ path, bare }) => {
    const below = relative(root, path).split(sep).join("/");
    // A root that is itself a repository is named after its directory.
    const named = below === "" ? basename(root) : below;
    const name = bare ? named.replace(/\.git$/, "") : named;
    return {
      id: `directory:${join(realRoot, below)}`,
      name,
      originName: await originName(path, signal),
      host: { type: "directory", root },
      path,
      url: undefined,
    } satisfies Repository;
  });
}

/**
 * The cache entry for a URL (without its password: neither a password nor a digest of one is
 * written to disk): readable, and unique per URL even when names collide.
 */
function cachePathFor(cacheDirectory: string, url: string, name: string): string {
  const digest = createHash("sha256").update(url).digest("hex").slice(0, 12);
  const readable = name.replaceAll(/[^A-Za-z0-9._-]+/g, "-").slice(0, 80);
  return join(cacheDirectory, `${readable}-${digest}.git`);
}

/**
 * `hidden` are this machine's paths git may name (the mirror, its staging directory, the cache):
 * the message says "the repository cache" instead, so no server path reaches an API client.
 */
function cloneFailure(
  action: string,
  url: string,
  error: unknown,
  hidden: readonly string[],
): BatchesError {
  const { detail, cause } = remoteFailure([url], error);
  const shown = [...hidden]
    .sort((left, right) => right.length - left.length)
    .reduce((text, path) => text.replaceAll(path, "the repository cache"), detail);
  return new BatchesError(
    "clone_failed",
    `${action} ${redactUrl(url)} failed: ${shown}; check the URL, the network and the credentials`,
    cause === undefined ? {} : { cause },
  );
}

/** Points the mirror's HEAD at the remote's default branch, which may have changed. */
async function followRemoteHead(
  path: string,
  signal: AbortSignal | undefined,
  environment?: Readonly<Record<string, string>>,
): Promise<void> {
  const { stdout } = await runGit(["ls-remote", "--symref", "origin", "HEAD"], {
    cwd: path,
    ...(signal ? { signal } : {}),
    ...(environment ? { environment } : {}),
  });
  const head = /^ref: (refs\/heads\/\S+)\tHEAD$/m.exec(stdout)?.[1];
  if (head !== undefined) await runGit(["symbolic-ref", "HEAD", head], { cwd: path });
}

/**
 * Where the mirror of a URL host is: its cache entry, named after the URL without its password.
 * A mirror an earlier version cloned under the name of the URL with its password is moved
 * there, so it is cleaned (below) rather than left behind with the password in its config.
 */
async function mirrorPath(
  cacheDirectory: string,
  configuredUrl: string,
  storedUrl: string,
  name: string,
): Promise<string> {
  const path = cachePathFor(cacheDirectory, storedUrl, name);
  if (configuredUrl === storedUrl || (await isDirectory(path))) return path;
  const legacy = cachePathFor(cacheDirectory, configuredUrl, name);
  if (!(await isDirectory(legacy))) return path;
  await rename(legacy, path).catch(async (error: unknown) => {
    // Another job moved or cloned it meanwhile; the old entry must not linger either way.
    if (!(await isDirectory(path))) throw error;
    await rm(legacy, { recursive: true, force: true });
  });
  return path;
}

/**
 * Makes the mirror's origin the URL without a password. Mirrors cloned by earlier versions had
 * the password in `remote.origin.url`, readable by every step the cache is mounted into.
 */
async function cleanOrigin(path: string, url: string): Promise<void> {
  const origin = async () =>
    (
      await runGit(["config", "--get", "remote.origin.url"], { cwd: path, allowedExitCodes: [1] })
    ).stdout.trim();
  if ((await origin()) === url) return;
  try {
    await runGit(["config", "remote.origin.url", url], { cwd: path });
  } catch (error) {
    // Two jobs cleaning at once: the config lock lets one write, and the other finds it done.
    if ((await origin()) !== url) throw error;
  }
}

async function gitUrlRepository(
  host: GitUrlCodeHost,
  cacheDirectory: string | undefined,
  refresh: boolean,
  signal: AbortSignal | undefined,
  gitEnvironment?: GitEnvironmentFor,
): Promise<Repository> {
  // git only ever sees the URL without its password, which travels in its environment instead.
  const access = gitUrlAccess(host.url);
  const url = access.url;
  const environment = access.environment ?? gitEnvironment?.(url);
  const name = host.name ?? repositoryNameFromUrl(url);
  if (name === undefined) {
    throw new BatchesError(
      "invalid_code_host",
      `code host URL ${url} is not a git URL; use https://, ssh://, git@host:path or file://`,
    );
  }
  if (cacheDirectory === undefined) {
    throw new BatchesError(
      "invalid_code_host",
      `code host ${url} needs a cache directory to clone into, and none was given`,
    );
  }
  const path = await mirrorPath(resolve(cacheDirectory), host.url, url, name);
  const runOptions = signal ? { signal } : {};
  if (!(await isDirectory(path))) {
    await mkdir(resolve(cacheDirectory), { recursive: true });
    // Cloned next to its place and moved in, so a clone cut short never looks like a cache.
    const staging = `${path}.${randomUUID()}.partial`;
    try {
      await runGit(["clone", "--mirror", "--quiet", "--", url, staging], {
        cwd: resolve(cacheDirectory),
        timeoutMs: 30 * 60_000,
        ...runOptions,
        ...(environment ? { environment } : {}),
      });
      await rename(staging, path).catch(async (error: unknown) => {
        // Another run cloned it meanwhile: theirs is as good as ours.
        if (!(await isDirectory(path))) throw error;
      });
    } catch (error) {
      throw cloneFailure("cloning", host.url, error, [staging, path, resolve(cacheDirectory)]);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  } else {
    await cleanOrigin(path, url);
    if (refresh) {
      try {
        await runGit(["fetch", "--prune", "--quiet", "origin"], {
          cwd: path,
          timeoutMs: 30 * 60_000,
          ...runOptions,
          ...(environment ? { environment } : {}),
        });
        await followRemoteHead(path, signal, environment);
      } catch (error) {
        throw cloneFailure("fetching", host.url, error, [path, resolve(cacheDirectory)]);
      }
    }
  }
  return {
    id: `git:${url}`,
    name,
    originName: repositoryNameFromUrl(url),
    host: { type: "git", url, cachePath: path },
    path,
    url,
  };
}

/**
 * The repositories of the configured code hosts plus the call's extra directories, each once.
 * Git URL hosts are cloned into `cacheDirectory` when missing and fetched otherwise (unless
 * `refresh` is false). Throws `invalid_code_host` for a host that cannot be used and
 * `clone_failed` when cloning or fetching fails.
 */
export async function loadRepositories(options: LoadRepositoriesOptions): Promise<Repository[]> {
  const hosts: CodeHost[] = [
    ...options.codeHosts,
    ...(options.extraDirectories ?? []).map((path) => ({ type: "directory" as const, path })),
  ];
  const refresh = options.refresh ?? true;
  // Hosts load side by side (a fetch mostly waits on the network), listed in their order.
  const perHost = await mapLimited(hosts, parallelism, async (host) =>
    host.type === "directory"
      ? directoryRepositories(host, options.signal)
      : [
          await gitUrlRepository(
            host,
            options.cacheDirectory,
            refresh,
            options.signal,
            options.gitEnvironment,
          ),
        ],
  );
  const repositories: Repository[] = [];
  const seen = new Set<string>();
  for (const found of perHost) {
    for (const repository of found) {
      if (seen.has(repository.id)) continue;
      seen.add(repository.id);
      repositories.push(repository);
    }
  }
  return repositories;
}

/** Whether `revision` is a commit the repository at `path` has. */
async function hasCommit(path: string, revision: string): Promise<boolean> {
  try {
    await runGit(["cat-file", "-e", `${revision}^{commit}`], { cwd: path });
    return true;
  } catch {
    return false;
  }
}

/** The configured git URL host a resolved repository comes from; none for a directory host's. */
function urlHostOf(
  repository: Pick<Repository, "host">,
  codeHosts: readonly CodeHost[],
): GitUrlCodeHost | undefined {
  const hostUrl = repository.host.type === "git" ? repository.host.url : undefined;
  return codeHosts.find(
    (candidate): candidate is GitUrlCodeHost =>
      candidate.type === "git" && redactUrl(candidate.url) === hostUrl,
  );
}

/**
 * Where a resolved repository is without asking git, when nothing has to be fetched for it: a
 * directory host's working copy, at the path it was found at. Null for a URL host's repository,
 * whose mirror `locateRepository` finds (and fetches when it lacks the commit).
 */
export function unfetchedRepositoryPath(
  repository: Pick<Repository, "host" | "path">,
  codeHosts: readonly CodeHost[],
): string | null {
  return urlHostOf(repository, codeHosts) === undefined ? repository.path : null;
}

/**
 * Where this process finds a resolved repository at `revision`. A workspace job may run on
 * another executor than the one that resolved it: a directory host must be at the same path there
 * (a shared file system), and a git URL host is cloned or fetched into this process's own cache
 * from its own configuration (which holds the URL's credentials, never stored with the job).
 * A mirror found is cleaned of a password an earlier version put in its config even when it
 * already has the commit, since the steps about to run can read that config.
 */
export async function locateRepository(
  repository: Pick<Repository, "id" | "name" | "host" | "path">,
  revision: string,
  options: {
    codeHosts: readonly CodeHost[];
    cacheDirectory: string;
    gitEnvironment?: GitEnvironmentFor;
    signal?: AbortSignal;
  },
): Promise<string> {
  const hostUrl = repository.host.type === "git" ? repository.host.url : undefined;
  const host = urlHostOf(repository, options.codeHosts);
  if (host === undefined) {
    if (await hasCommit(repository.path, revision)) return repository.path;
    throw new BatchesError(
      "repository_not_found",
      hostUrl === undefined
        ? `repository ${repository.name} is not at ${repository.path} on this machine, or lacks commit ${revision}; executors need the directory code hosts at the same paths (a shared file system)`
        : `repository ${repository.name} comes from ${hostUrl}, which is not among this executor's code hosts; give the executor the same codeHosts in its config.json`,
    );
  }
  const mirror = (refresh: boolean) =>
    gitUrlRepository(host, options.cacheDirectory, refresh, options.signal, options.gitEnvironment);
  // The mirror as it is first (no network); fetched only when it lacks the commit.
  const found = await mirror(false);
  if (await hasCommit(found.path, revision)) return found.path;
  const fetched = await mirror(true);
  if (!(await hasCommit(fetched.path, revision))) {
    throw new BatchesError(
      "revision_not_found",
      `repository ${repository.name} has no commit ${revision} any more (a force push?); run the spec again`,
    );
  }
  return fetched.path;
}
