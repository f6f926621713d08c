import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { inspect } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BatchesError } from "./batches-error.ts";
import { loadRepositories, type Repository } from "./repositories.ts";
import { resolveDefaultBranch } from "./revisions.ts";
import { repositoryAt, temporaryDirectory } from "./test-fixtures.ts";

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
