import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { inspect } from "node:util";
import { runGit } from "@deckhand/git";
import { REDACTED, redactSecrets } from "@deckhand/secrets";
import { type GitHttpServer, startGitHttpServer } from "@deckhand/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, temporaryDirectory } from "../test/support.ts";
import { BatchesError } from "./batches-error.ts";
import { loadRepositories, locateRepository, type Repository } from "./repositories.ts";
import { resolveDefaultBranch } from "./revisions.ts";

let scratch: ReturnType<typeof temporaryDirectory>;
beforeEach(() => {
  scratch = temporaryDirectory();
});
afterEach(() => scratch.remove());

async function rejection(promise: Promise<unknown>): Promise<BatchesError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(BatchesError.isInstance(error)).toBe(true);
  return error as BatchesError;
}

function names(repositories: readonly Repository[]): string[] {
  return repositories.map((repository) => repository.name).sort();
}

describe("directory code hosts", () => {
  it("finds nested repositories, named by their path below the root, without descending into them", async () => {
    const root = join(scratch.path, "code");
    repositoryAt(join(root, "github.com/acme/api"));
    repositoryAt(join(root, "github.com/acme/web"));
    repositoryAt(join(root, "example.org/deep/group/tool"));
    // A checkout inside a repository belongs to it and is not a repository of its own here.
    repositoryAt(join(root, "github.com/acme/api/vendor/lib"));
    const bare = repositoryAt(join(scratch.path, "source"));
    bare.git("clone", "--bare", "--quiet", bare.path, join(root, "git.local/mirrors/tools.git"));
    mkdirSync(join(root, "empty/directory"), { recursive: true });

    const repositories = await loadRepositories({ codeHosts: [{ type: "directory", path: root }] });

    expect(names(repositories)).toEqual([
      "example.org/deep/group/tool",
      "git.local/mirrors/tools",
      "github.com/acme/api",
      "github.com/acme/web",
    ]);
    const api = repositories.find((repository) => repository.name === "github.com/acme/api")!;
    expect(api).toMatchObject({
      host: { type: "directory", root },
      path: join(root, "github.com/acme/api"),
      url: undefined,
      originName: undefined,
    });
    expect(api.id).toContain("github.com/acme/api");
  });

  it("records the origin remote's name, whatever its scheme", async () => {
    const root = join(scratch.path, "code");
    repositoryAt(join(root, "api")).git("remote", "add", "origin", "git@github.com:acme/api.git");
    const [repository] = await loadRepositories({ codeHosts: [{ type: "directory", path: root }] });
    expect(repository).toMatchObject({ name: "api", originName: "github.com/acme/api" });
  });

  it("adds the call's extra directories to the configured hosts, each repository once", async () => {
    const configured = join(scratch.path, "configured");
    const extra = join(scratch.path, "extra");
    repositoryAt(join(configured, "one"));
    repositoryAt(join(extra, "two"));
    const repositories = await loadRepositories({
      codeHosts: [{ type: "directory", path: configured }],
      extraDirectories: [extra, configured],
    });
    expect(names(repositories)).toEqual(["one", "two"]);
  });

  it("a directory host that is itself a repository is one repository named after it", async () => {
    const single = join(scratch.path, "api");
    repositoryAt(single);
    const repositories = await loadRepositories({
      codeHosts: [{ type: "directory", path: single }],
    });
    expect(repositories.map(({ name, path }) => ({ name, path }))).toEqual([
      { name: "api", path: single },
    ]);
  });

  it("a missing directory is an invalid_code_host error naming it", async () => {
    const missing = join(scratch.path, "nowhere");
    const error = await rejection(
      loadRepositories({ codeHosts: [{ type: "directory", path: missing }] }),
    );
    expect(error.code).toBe("invalid_code_host");
    expect(error.message).toContain(missing);
  });
});

describe("git URL code hosts", () => {
  it("clones a file:// URL into the cache as a mirror and sees upstream commits after a refresh", async () => {
    const upstream = repositoryAt(join(scratch.path, "upstream/acme/api"));
    const cacheDirectory = join(scratch.path, "cache");
    const url = `file://${upstream.path}`;
    const codeHosts = [{ type: "git" as const, url }];

    const [repository] = await loadRepositories({ codeHosts, cacheDirectory });
    expect(repository).toMatchObject({
      name: `${upstream.path.slice(1)}`,
      url,
      host: { type: "git", url },
    });
    expect(repository!.path.startsWith(cacheDirectory)).toBe(true);
    expect(upstream.git("-C", repository!.path, "config", "--get", "remote.origin.mirror")).toBe(
      "true",
    );
    const first = await resolveDefaultBranch(repository!);
    expect(first).toEqual({ branch: "main", revision: upstream.git("rev-parse", "HEAD") });

    upstream.git("commit", "--quiet", "--allow-empty", "-m", "second");
    const second = upstream.git("rev-parse", "HEAD");
    const [stale] = await loadRepositories({ codeHosts, cacheDirectory, refresh: false });
    expect((await resolveDefaultBranch(stale!)).revision).toBe(first.revision);
    const [fresh] = await loadRepositories({ codeHosts, cacheDirectory });
    expect(await resolveDefaultBranch(fresh!)).toEqual({ branch: "main", revision: second });
    // One cache entry, reused; nothing half-cloned left behind.
    expect(readdirSync(cacheDirectory)).toHaveLength(1);
  });

  it("two loads cloning the same URL at once both succeed and share one cache entry", async () => {
    const upstream = repositoryAt(join(scratch.path, "upstream"));
    const cacheDirectory = join(scratch.path, "cache");
    const codeHosts = [{ type: "git" as const, url: `file://${upstream.path}` }];
    const [first, second] = await Promise.all([
      loadRepositories({ codeHosts, cacheDirectory }),
      loadRepositories({ codeHosts, cacheDirectory }),
    ]);
    expect(first![0]!.path).toBe(second![0]!.path);
    expect(readdirSync(cacheDirectory)).toHaveLength(1);
    expect((await resolveDefaultBranch(first![0]!)).revision).toBe(
      upstream.git("rev-parse", "HEAD"),
    );
  });

  it("follows the remote's default branch when it changes", async () => {
    const upstream = repositoryAt(join(scratch.path, "upstream"));
    const cacheDirectory = join(scratch.path, "cache");
    const codeHosts = [{ type: "git" as const, url: `file://${upstream.path}`, name: "acme/api" }];
    await loadRepositories({ codeHosts, cacheDirectory });
    upstream.git("switch", "--quiet", "-c", "trunk");
    upstream.git("commit", "--quiet", "--allow-empty", "-m", "on trunk");
    const [repository] = await loadRepositories({ codeHosts, cacheDirectory });
    expect(repository!.name).toBe("acme/api");
    expect(await resolveDefaultBranch(repository!)).toEqual({
      branch: "trunk",
      revision: upstream.git("rev-parse", "HEAD"),
    });
  });

  it("a failed clone is a clone_failed error without the URL's password, and leaves no cache entry", async () => {
    const cacheDirectory = join(scratch.path, "cache");
    const error = await rejection(
      loadRepositories({
        codeHosts: [{ type: "git", url: "https://someone:s3cret-token@127.0.0.1:1/acme/api.git" }],
        cacheDirectory,
      }),
    );
    expect(error.code).toBe("clone_failed");
    expect(error.message).toContain("https://someone@127.0.0.1:1/acme/api.git");
    expect(error.message).not.toContain("s3cret-token");
    // Nor anywhere a logger would look: the cause chain and the error's own fields.
    expect(inspect(error, { depth: 10 })).not.toContain("s3cret-token");
    expect(existsSync(cacheDirectory) ? readdirSync(cacheDirectory) : []).toEqual([]);
  });

  it("a URL host without a cache directory is an invalid_code_host error", async () => {
    const error = await rejection(
      loadRepositories({ codeHosts: [{ type: "git", url: "https://github.com/acme/api.git" }] }),
    );
    expect(error.code).toBe("invalid_code_host");
    expect(error.message).toContain("needs a cache directory");
  });
});

describe("git URL code hosts with a password", () => {
  // Characters a URL must percent-encode, so both spellings of the password are hunted for.
  const PASSWORD = "pa ss/w@rd-7c1e9d0b";
  const WRITTEN = encodeURIComponent(PASSWORD);
  const ENCODED = Buffer.from(`deckhand:${PASSWORD}`).toString("base64");
  let server: GitHttpServer;
  let upstream: ReturnType<typeof repositoryAt>;

  beforeEach(async () => {
    const source = repositoryAt(join(scratch.path, "source"));
    const bare = join(scratch.path, "served/acme/api.git");
    source.git("clone", "--bare", "--quiet", source.path, bare);
    upstream = { path: bare, git: (...args) => source.git("-C", bare, ...args) };
    server = await startGitHttpServer({
      projectRoot: join(scratch.path, "served"),
      token: PASSWORD,
    });
  });
  afterEach(() => server.close());

  const hostUrl = () => `${server.url.replace("://", `://deckhand:${WRITTEN}@`)}/acme/api.git`;
  const storedUrl = () => `${server.url.replace("://", "://deckhand@")}/acme/api.git`;

  /** Every file below `directory` that holds a form of the password. */
  function filesWithPassword(directory: string): string[] {
    return readdirSync(directory, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name))
      .filter((file) => {
        const bytes = readFileSync(file);
        return [PASSWORD, WRITTEN, ENCODED].some((secret) => bytes.includes(secret));
      });
  }

  /** A commit pushed to the served repository, as someone else would. */
  function upstreamCommit(): string {
    const tree = upstream.git("rev-parse", "main^{tree}");
    const commit = upstream.git("commit-tree", tree, "-p", "main", "-m", "upstream");
    upstream.git("update-ref", "refs/heads/main", commit);
    return commit;
  }

  it("clones and fetches with the password given per command, never written to the cache", async () => {
    const cacheDirectory = join(scratch.path, "cache");
    const codeHosts = [{ type: "git" as const, url: hostUrl() }];
    const [repository] = await loadRepositories({ codeHosts, cacheDirectory });
    expect(repository).toMatchObject({
      id: `git:${storedUrl()}`,
      url: storedUrl(),
      host: { type: "git", url: storedUrl() },
    });
    const config = (await runGit(["config", "-l"], { cwd: repository!.path })).stdout;
    expect(config).toContain(`remote.origin.url=${storedUrl()}`);
    expect(filesWithPassword(cacheDirectory)).toEqual([]);

    // The fetch of the next run reaches the host with the password it was not given in a file.
    const commit = upstreamCommit();
    const [fresh] = await loadRepositories({ codeHosts, cacheDirectory });
    expect((await resolveDefaultBranch(fresh!)).revision).toBe(commit);
    expect(filesWithPassword(cacheDirectory)).toEqual([]);
    // The password is a secret of the process from now on: any output that holds it is redacted.
    expect(redactSecrets(`url ${hostUrl()} password ${PASSWORD}`)).not.toMatch(/pa ss|pa%20ss/);
    expect(redactSecrets(`Authorization: Basic ${ENCODED}`)).toBe(
      `Authorization: Basic ${REDACTED}`,
    );
  });

  it("cleans a mirror an earlier version cloned with the password in its origin URL", async () => {
    const cacheDirectory = join(scratch.path, "cache");
    const name = "127.0.0.1/acme/api";
    // Where and how earlier versions cloned it: named after a digest of the URL as configured.
    const digest = createHash("sha256").update(hostUrl()).digest("hex").slice(0, 12);
    const legacy = join(cacheDirectory, `${name.replaceAll("/", "-")}-${digest}.git`);
    mkdirSync(cacheDirectory, { recursive: true });
    await runGit(["clone", "--mirror", "--quiet", "--", hostUrl(), legacy], {
      cwd: cacheDirectory,
    });
    expect(filesWithPassword(cacheDirectory)).toEqual([join(legacy, "config")]);

    const commit = upstreamCommit();
    const [repository] = await loadRepositories({
      codeHosts: [{ type: "git", url: hostUrl() }],
      cacheDirectory,
    });
    expect(filesWithPassword(cacheDirectory)).toEqual([]);
    expect(existsSync(legacy)).toBe(false);
    expect(readdirSync(cacheDirectory)).toEqual([
      repository!.path.slice(cacheDirectory.length + 1),
    ]);
    // Its objects were kept and it was fetched with the password from the configuration.
    expect((await resolveDefaultBranch(repository!)).revision).toBe(commit);
  });

  it("a job on such a mirror that already has its commit cleans it too, without fetching", async () => {
    const cacheDirectory = join(scratch.path, "cache");
    const name = "127.0.0.1/acme/api";
    const digest = createHash("sha256").update(hostUrl()).digest("hex").slice(0, 12);
    const legacy = join(cacheDirectory, `${name.replaceAll("/", "-")}-${digest}.git`);
    mkdirSync(cacheDirectory, { recursive: true });
    await runGit(["clone", "--mirror", "--quiet", "--", hostUrl(), legacy], {
      cwd: cacheDirectory,
    });
    const requests = server.requests.length;
    // A workspace an earlier version resolved names the mirror by its old path.
    const path = await locateRepository(
      {
        id: `git:${storedUrl()}`,
        name,
        host: { type: "git", url: storedUrl(), cachePath: legacy },
        path: legacy,
      },
      upstream.git("rev-parse", "main"),
      { codeHosts: [{ type: "git", url: hostUrl() }], cacheDirectory },
    );
    expect(path).not.toBe(legacy);
    expect(filesWithPassword(cacheDirectory)).toEqual([]);
    expect(server.requests.length).toBe(requests);
  });
});
