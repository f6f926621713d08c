import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { gitIn } from "@deckhand/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type PlacedRepository,
  repositoryAt,
  specFrom,
  temporaryDirectory,
} from "../test/support.ts";
import { BatchesError } from "./batches-error.ts";
import { loadRepositories, type Repository } from "./repositories.ts";
import {
  BatchIgnoreMemory,
  type ResolveWorkspacesResult,
  resolveWorkspaces,
} from "./resolve-workspaces.ts";

let scratch: ReturnType<typeof temporaryDirectory>;
let root: string;
beforeEach(() => {
  scratch = temporaryDirectory();
  root = join(scratch.path, "code");
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

function repositories(): Promise<Repository[]> {
  return loadRepositories({ codeHosts: [{ type: "directory", path: root }] });
}

async function resolve(
  yaml: string,
  options: { forceOverrideIgnore?: boolean } = {},
): Promise<ResolveWorkspacesResult> {
  return resolveWorkspaces(specFrom(yaml), { repositories: await repositories(), ...options });
}

/** The fields a `deckhand batch workspaces` listing shows. */
function listing(result: ResolveWorkspacesResult) {
  return result.workspaces.map((workspace) => ({
    repository: workspace.repository.name,
    branch: workspace.branch,
    path: workspace.path,
    paths: workspace.searchResultPaths,
  }));
}

describe("on: repository", () => {
  let api: PlacedRepository;
  beforeEach(() => {
    api = repositoryAt(join(root, "github.com/acme/api"));
    repositoryAt(join(root, "github.com/acme/web"));
  });

  it("matches the path below a directory host's root, at its default branch", async () => {
    const result = await resolve(`
name: demo
on:
  - repository: github.com/acme/api
steps:
  - run: echo hi
    container: alpine
changesetTemplate:
  title: demo
  branch: demo
  commit:
    message: demo
`);
    expect(result.warnings).toEqual([]);
    expect(result.workspaces).toEqual([
      {
        repository: {
          id: expect.stringContaining("github.com/acme/api"),
          name: "github.com/acme/api",
          host: { type: "directory", root },
          path: api.path,
          url: undefined,
        },
        branch: "main",
        revision: api.git("rev-parse", "HEAD"),
        path: "",
        onlyFetchWorkspace: false,
        searchResultPaths: [],
        steps: [{ index: 0, step: { run: "echo hi", container: "alpine" } }],
      },
    ]);
  });

  it("matches a repository by its origin remote, in any URL spelling", async () => {
    const checkout = repositoryAt(join(root, "checkouts/service"));
    checkout.git("remote", "add", "origin", "ssh://git@git.example.com/team/service.git");
    const result = await resolve(`
name: demo
on:
  - repository: git.example.com/team/service
`);
    expect(listing(result)).toEqual([
      { repository: "checkouts/service", branch: "main", path: "", paths: [] },
    ]);
  });

  it("several matches are a repository_ambiguous error naming each candidate", async () => {
    api.git("remote", "add", "origin", "https://github.com/acme/web.git");
    const error = await rejection(
      resolve("name: demo\non:\n  - repository: github.com/acme/web\n"),
    );
    expect(error.code).toBe("repository_ambiguous");
    expect(error.message).toContain("matches 2 repositories");
    expect(error.message).toContain(
      `github.com/acme/api (${api.path}, origin github.com/acme/web)`,
    );
    expect(error.message).toContain(`github.com/acme/web (${join(root, "github.com/acme/web")})`);
  });

  it("no match is a repository_not_found error naming the closest repositories", async () => {
    const error = await rejection(
      resolve("name: demo\non:\n  - repository: github.com/acme/apu\n"),
    );
    expect(error.code).toBe("repository_not_found");
    expect(error.message).toMatch(
      /repository github\.com\/acme\/apu not found .*closest are: github\.com\/acme\/api \(.*\); github\.com\/acme\/web/,
    );
  });

  it("branch and branches pick revisions; each branch is a workspace at its commit", async () => {
    api.git("switch", "--quiet", "-c", "feature");
    api.git("commit", "--quiet", "--allow-empty", "-m", "feature work");
    const feature = api.git("rev-parse", "HEAD");
    api.git("switch", "--quiet", "main");
    const main = api.git("rev-parse", "HEAD");

    const both = await resolve(`
name: demo
on:
  - repository: github.com/acme/api
    branches: [main, feature]
`);
    expect(both.workspaces.map(({ branch, revision }) => ({ branch, revision }))).toEqual([
      { branch: "feature", revision: feature },
      { branch: "main", revision: main },
    ]);
    const one = await resolve(`
name: demo
on:
  - repository: github.com/acme/api
    branch: refs/heads/feature
`);
    expect(one.workspaces.map(({ branch, revision }) => ({ branch, revision }))).toEqual([
      { branch: "feature", revision: feature },
    ]);
  });

  it("a branch only on the origin of a working copy resolves to its remote-tracking branch", async () => {
    const upstream = repositoryAt(join(scratch.path, "upstream"));
    upstream.git("switch", "--quiet", "-c", "remote-only");
    upstream.git("commit", "--quiet", "--allow-empty", "-m", "upstream work");
    const checkout = join(root, "clones/service");
    upstream.git("clone", "--quiet", upstream.path, checkout);
    const result = await resolve(
      "name: demo\non:\n  - repository: clones/service\n    branch: remote-only\n",
    );
    expect(result.workspaces.map(({ branch, revision }) => ({ branch, revision }))).toEqual([
      { branch: "remote-only", revision: upstream.git("rev-parse", "HEAD") },
    ]);
  });

  it("a branch that does not exist is a revision_not_found error listing the branches", async () => {
    api.git("branch", "release");
    const error = await rejection(
      resolve("name: demo\non:\n  - repository: github.com/acme/api\n    branch: nope\n"),
    );
    expect(error.code).toBe("revision_not_found");
    expect(error.message).toBe(
      "branch nope does not exist in github.com/acme/api; it has main, release",
    );
  });

  it("the last repository: entry naming a repository decides its branches, over earlier ones and queries", async () => {
    api.git("branch", "feature");
    api.git("branch", "release");
    const result = await resolve(`
name: demo
on:
  - repository: github.com/acme/api
    branch: release
  - repositoriesMatchingQuery: repo:acme file:README
  - repository: github.com/acme/api
    branches: [feature, main, feature]
`);
    expect(listing(result)).toEqual([
      { repository: "github.com/acme/api", branch: "feature", path: "", paths: [] },
      { repository: "github.com/acme/api", branch: "main", path: "", paths: [] },
      { repository: "github.com/acme/web", branch: "main", path: "", paths: ["README.md"] },
    ]);
  });

  it("the same repository and branch named twice is one workspace", async () => {
    const result = await resolve(`
name: demo
on:
  - repository: github.com/acme/api
  - repository: github.com/acme/api
    branch: main
`);
    expect(listing(result)).toEqual([
      { repository: "github.com/acme/api", branch: "main", path: "", paths: [] },
    ]);
  });
});

describe("on: repositoriesMatchingQuery", () => {
  beforeEach(() => {
    repositoryAt(join(root, "github.com/acme/api"), {
      "main.go": 'package main\n\nfunc main() { fmt.Println("hi") }\n',
      "cmd/tool/tool.go": "package tool\n\nfunc Run() { fmt.Println(1) }\n",
      "README.md": "uses fmt.Println\n",
    });
    repositoryAt(join(root, "github.com/acme/web"), {
      "index.ts": "console.log('fmt.Println')\n",
      "server.go": "package server\n",
    });
    repositoryAt(join(root, "github.com/acme/legacy"), {
      "old.go": "package old\n\nfunc Old() { fmt.Println(0) }\n",
    });
  });

  it("file: with a content pattern picks exactly the matching repositories and keeps their paths", async () => {
    const result = await resolve(String.raw`
name: demo
on:
  - repositoriesMatchingQuery: file:\.go$ fmt.Println( count:all
`);
    expect(result.warnings).toEqual([]);
    expect(listing(result)).toEqual([
      {
        repository: "github.com/acme/api",
        branch: "main",
        path: "",
        paths: ["cmd/tool/tool.go", "main.go"],
      },
      { repository: "github.com/acme/legacy", branch: "main", path: "", paths: ["old.go"] },
    ]);
  });

  it("-repo: excludes repositories and a file: query alone lists the matching files", async () => {
    const result = await resolve(String.raw`
name: demo
on:
  - repositoriesMatchingQuery: -repo:legacy -repo:web file:\.go$
`);
    expect(listing(result)).toEqual([
      {
        repository: "github.com/acme/api",
        branch: "main",
        path: "",
        paths: ["cmd/tool/tool.go", "main.go"],
      },
    ]);
  });

  it("patterntype:regexp runs the content pattern as a regular expression", async () => {
    const result = await resolve(String.raw`
name: demo
on:
  - repositoriesMatchingQuery: repo:acme patterntype:regexp Println\([0-9]\)
`);
    expect(listing(result).map(({ repository, paths }) => ({ repository, paths }))).toEqual([
      { repository: "github.com/acme/api", paths: ["cmd/tool/tool.go"] },
      { repository: "github.com/acme/legacy", paths: ["old.go"] },
    ]);
  });

  it("version 2 and 3 specs read words as keywords, version 1 as one phrase, as Sourcegraph does", async () => {
    const query = "repositoriesMatchingQuery: Println main";
    const keyword = await resolve(`version: 2\nname: demo\non:\n  - ${query}\n`);
    expect(listing(keyword).map(({ repository, paths }) => ({ repository, paths }))).toEqual([
      { repository: "github.com/acme/api", paths: ["main.go"] },
    ]);
    const standard = await resolve(`version: 1\nname: demo\non:\n  - ${query}\n`);
    expect(standard.workspaces).toEqual([]);
  });

  it("a literal and a /regexp/ in one query both hold in each file", async () => {
    const result = await resolve(String.raw`
version: 3
name: demo
on:
  - repositoriesMatchingQuery: fmt.Println( /Println\([0-9]\)/
`);
    expect(listing(result).map(({ repository, paths }) => ({ repository, paths }))).toEqual([
      { repository: "github.com/acme/api", paths: ["cmd/tool/tool.go"] },
      { repository: "github.com/acme/legacy", paths: ["old.go"] },
    ]);
  });

  it("searches the committed default branch, not uncommitted files", async () => {
    const web = join(root, "github.com/acme/web");
    writeFileSync(join(web, "new.go"), "fmt.Println(2)\n");
    const result = await resolve(
      "name: demo\non:\n  - repositoriesMatchingQuery: repo:web fmt.Println(\n",
    );
    expect(result.workspaces).toEqual([]);
    expect(result.warnings).toEqual([
      'repositoriesMatchingQuery "repo:web fmt.Println(" matched no repository on the configured code hosts',
    ]);
  });

  it("a repository without a default branch is skipped in a search with a warning", async () => {
    const detached = repositoryAt(join(root, "github.com/acme/detached"), {
      "a.go": "fmt.Println(\n",
    });
    detached.git("switch", "--quiet", "--detach");
    gitIn(
      scratch.path,
      "init",
      "--quiet",
      "--initial-branch=main",
      join(root, "github.com/acme/empty"),
    );
    const result = await resolve(
      "name: demo\non:\n  - repositoriesMatchingQuery: repo:acme/(detached|empty|legacy)\n",
    );
    expect(listing(result).map((workspace) => workspace.repository)).toEqual([
      "github.com/acme/legacy",
    ]);
    expect(result.warnings).toEqual([
      expect.stringMatching(/^skipped github\.com\/acme\/detached in the search: .*detached HEAD/),
      expect.stringMatching(/^skipped github\.com\/acme\/empty in the search: .*no commit/),
    ]);
  });

  it("an unsupported filter is an invalid_query error saying which part", async () => {
    const error = await rejection(
      resolve("name: demo\non:\n  - repositoriesMatchingQuery: type:commit fix\n"),
    );
    expect(error.code).toBe("invalid_query");
    expect(error.message).toContain('repositoriesMatchingQuery "type:commit fix"');
    expect(error.message).toContain("the filter type: is not supported");
  });

  it("fork: is accepted and ignored with a warning", async () => {
    const result = await resolve(
      "name: demo\non:\n  - repositoriesMatchingQuery: repo:legacy fork:yes\n",
    );
    expect(listing(result)).toEqual([
      { repository: "github.com/acme/legacy", branch: "main", path: "", paths: [] },
    ]);
    expect(result.warnings).toEqual([expect.stringContaining("fork:yes is ignored")]);
  });

  it("search result paths reach the static if: of steps", async () => {
    const result = await resolve(`
name: demo
on:
  - repositoriesMatchingQuery: file:\\.go$ fmt.Println(
steps:
  - run: gofmt -w main.go
    container: golang
    if: '\${{ matches (join repository.search_result_paths " ") "*main.go*" }}'
  - run: echo always
    container: alpine
    outputs:
      x:
        value: always
  - run: echo dynamic
    container: alpine
    if: '\${{ eq outputs.x "y" }}'
changesetTemplate:
  title: demo
  branch: demo
  commit:
    message: demo
`);
    expect(
      result.workspaces.map((workspace) => ({
        repository: workspace.repository.name,
        steps: workspace.steps.map((step) => step.index),
      })),
    ).toEqual([
      { repository: "github.com/acme/api", steps: [0, 1, 2] },
      { repository: "github.com/acme/legacy", steps: [1, 2] },
    ]);
  });
});

describe("workspaces: and .batchignore", () => {
  let mono: PlacedRepository;
  beforeEach(() => {
    mono = repositoryAt(join(root, "github.com/acme/mono"), {
      "package.json": "{}\n",
      "packages/a/package.json": "{}\n",
      "packages/a/src/index.ts": "TODO\n",
      "packages/b/package.json": "{}\n",
      "packages/b/src/index.ts": "done\n",
      "tools/script.sh": "TODO\n",
    });
    repositoryAt(join(root, "github.com/acme/single"), { "package.json": "{}\n" });
  });

  it("rootAtLocationOf with in: gives one workspace per project, with the search paths inside it", async () => {
    const result = await resolve(`
name: demo
on:
  - repositoriesMatchingQuery: TODO
  - repository: github.com/acme/single
workspaces:
  - rootAtLocationOf: package.json
    in: github.com/acme/mono
    onlyFetchWorkspace: true
`);
    expect(
      result.workspaces.map((workspace) => ({
        repository: workspace.repository.name,
        path: workspace.path,
        onlyFetchWorkspace: workspace.onlyFetchWorkspace,
        paths: workspace.searchResultPaths,
        revision: workspace.revision,
      })),
    ).toEqual([
      // The root is the whole repository, so there is nothing to fetch less of.
      {
        repository: "github.com/acme/mono",
        path: "",
        onlyFetchWorkspace: false,
        paths: ["packages/a/src/index.ts", "tools/script.sh"],
        revision: mono.git("rev-parse", "HEAD"),
      },
      {
        repository: "github.com/acme/mono",
        path: "packages/a",
        onlyFetchWorkspace: true,
        paths: ["packages/a/src/index.ts"],
        revision: mono.git("rev-parse", "HEAD"),
      },
      {
        repository: "github.com/acme/mono",
        path: "packages/b",
        onlyFetchWorkspace: true,
        paths: [],
        revision: mono.git("rev-parse", "HEAD"),
      },
      // Not in the glob: the whole repository is one workspace.
      {
        repository: "github.com/acme/single",
        path: "",
        onlyFetchWorkspace: false,
        paths: [],
        revision: expect.stringMatching(/^[0-9a-f]{40}$/),
      },
    ]);
  });

  it("a repository without the file has no workspace, and a warning says why", async () => {
    const result = await resolve(`
name: demo
on:
  - repository: github.com/acme/single
workspaces:
  - rootAtLocationOf: go.mod
`);
    expect(result.workspaces).toEqual([]);
    expect(result.warnings).toEqual([
      "github.com/acme/single@main has no go.mod, so no workspace: workspaces are the directories that hold it",
    ]);
  });

  it("two workspaces configurations for one repository are an error", async () => {
    const error = await rejection(
      resolve(`
name: demo
on:
  - repository: github.com/acme/mono
workspaces:
  - rootAtLocationOf: package.json
  - rootAtLocationOf: go.mod
    in: github.com/acme/*
`),
    );
    expect(error.code).toBe("invalid_workspace_configuration");
    expect(error.message).toContain("matches 2 workspaces configurations");
  });

  it("a directory named .batchignore does not skip the repository", async () => {
    const single = join(root, "github.com/acme/single");
    writeFileSync(join(single, "package.json"), "{}\n");
    mkdirSync(join(single, ".batchignore"));
    writeFileSync(join(single, ".batchignore/notes"), "");
    gitIn(single, "add", "--all");
    gitIn(single, "commit", "--quiet", "-m", "a directory, not the file");
    const result = await resolve("name: demo\non:\n  - repository: github.com/acme/single\n");
    expect(listing(result).map((workspace) => workspace.repository)).toEqual([
      "github.com/acme/single",
    ]);
  });

  it("a committed .batchignore skips the repository unless forceOverrideIgnore", async () => {
    mono.git("commit", "--quiet", "--allow-empty", "-m", "nothing");
    const single = join(root, "github.com/acme/single");
    writeFileSync(join(single, ".batchignore"), "");
    gitIn(single, "add", ".batchignore");
    gitIn(single, "commit", "--quiet", "-m", "ignore batch changes");
    const yaml = "name: demo\non:\n  - repositoriesMatchingQuery: file:package.json\n";

    const skipped = await resolve(yaml);
    expect(listing(skipped).map((workspace) => workspace.repository)).toEqual([
      "github.com/acme/mono",
    ]);
    expect(skipped.warnings).toEqual([
      expect.stringContaining("skipped github.com/acme/single: it has a .batchignore file"),
    ]);

    const forced = await resolve(yaml, { forceOverrideIgnore: true });
    expect(listing(forced).map((workspace) => workspace.repository)).toEqual([
      "github.com/acme/mono",
      "github.com/acme/single",
    ]);
  });
});

describe("steps", () => {
  it("a workspace where the if: of every step is false is left out with a warning", async () => {
    repositoryAt(join(root, "github.com/acme/api"));
    repositoryAt(join(root, "github.com/acme/web"));
    const result = await resolve(`
name: demo
on:
  - repositoriesMatchingQuery: repo:acme
steps:
  - run: echo api only
    container: alpine
    if: \${{ eq repository.name "github.com/acme/api" }}
changesetTemplate:
  title: demo
  branch: demo
  commit:
    message: demo
`);
    expect(listing(result).map((workspace) => workspace.repository)).toEqual([
      "github.com/acme/api",
    ]);
    expect(result.warnings).toEqual([
      "github.com/acme/web@main has no workspace: the if: of every step is false there",
    ]);
  });
});

describe("a spec without on:", () => {
  it("has no workspaces", async () => {
    repositoryAt(join(root, "a"));
    expect(await resolve("name: demo\n")).toEqual({ workspaces: [], warnings: [] });
  });
});

describe("resolving again", () => {
  const yaml = "name: demo\non:\n  - repositoriesMatchingQuery: repo:acme\n";
  let api: PlacedRepository;
  let memory: BatchIgnoreMemory;
  beforeEach(() => {
    api = repositoryAt(join(root, "github.com/acme/api"));
    repositoryAt(join(root, "github.com/acme/web"));
    memory = new BatchIgnoreMemory();
  });

  /** The git processes `work` starts in this process, by their arguments. */
  async function gitProcesses(work: () => Promise<unknown>): Promise<string[][]> {
    // A `git` first on PATH that writes down its arguments and runs the real one: it sees every
    // git process, whichever process starts it (this one or its spawn host).
    const shim = mkdtempSync(join(tmpdir(), "git-shim-"));
    const log = join(shim, "started");
    const realGit = execFileSync("sh", ["-c", "command -v git"], { encoding: "utf8" }).trim();
    writeFileSync(log, "");
    writeFileSync(
      join(shim, "git"),
      `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec '${realGit}' "$@"\n`,
      { mode: 0o755 },
    );
    const path = process.env.PATH;
    process.env.PATH = `${shim}${delimiter}${path ?? ""}`;
    try {
      await work();
      return readFileSync(log, "utf8")
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => line.split(" "));
    } finally {
      process.env.PATH = path;
      rmSync(shim, { recursive: true, force: true });
    }
  }

  async function again(): Promise<ResolveWorkspacesResult> {
    return resolveWorkspaces(specFrom(yaml), {
      repositories: await repositories(),
      batchIgnores: memory,
    });
  }

  function revisions(result: ResolveWorkspacesResult) {
    return result.workspaces.map((workspace) => ({
      repository: workspace.repository.name,
      branch: workspace.branch,
      revision: workspace.revision,
    }));
  }

  it("starts no git process for repositories whose files and commits are as before", async () => {
    const first = await again();
    expect(first.workspaces).toHaveLength(2);
    let second: ResolveWorkspacesResult | undefined;
    expect(await gitProcesses(async () => (second = await again()))).toEqual([]);
    expect(second).toEqual(first);
  });

  it("sees a new commit, another branch checked out and a new .batchignore", async () => {
    await again();
    writeFileSync(join(api.path, "README.md"), "# moved\n");
    api.git("commit", "--quiet", "-am", "moved");
    const moved = await again();
    expect(revisions(moved)[0]).toEqual({
      repository: "github.com/acme/api",
      branch: "main",
      revision: api.git("rev-parse", "HEAD"),
    });

    api.git("checkout", "--quiet", "-b", "feature");
    api.git("commit", "--quiet", "--allow-empty", "-m", "on the feature branch");
    api.git("pack-refs", "--all");
    expect(revisions(await again())[0]).toEqual({
      repository: "github.com/acme/api",
      branch: "feature",
      revision: api.git("rev-parse", "HEAD"),
    });

    writeFileSync(join(api.path, ".batchignore"), "");
    api.git("add", ".batchignore");
    api.git("commit", "--quiet", "-m", "ignore batch changes");
    const ignored = await again();
    expect(revisions(ignored).map((workspace) => workspace.repository)).toEqual([
      "github.com/acme/web",
    ]);
    expect(ignored.warnings).toEqual([
      expect.stringContaining("skipped github.com/acme/api: it has a .batchignore file"),
    ]);

    api.git("rm", "--quiet", ".batchignore");
    api.git("commit", "--quiet", "-m", "batch changes welcome again");
    expect(revisions(await again()).map((workspace) => workspace.repository)).toEqual([
      "github.com/acme/api",
      "github.com/acme/web",
    ]);
  });

  it("reads a named branch from the files, and sees it move", async () => {
    api.git("branch", "release");
    const named = "name: demo\non:\n  - repository: github.com/acme/api\n    branch: release\n";
    const resolveNamed = async () =>
      revisions(
        await resolveWorkspaces(specFrom(named), {
          repositories: await repositories(),
          batchIgnores: memory,
        }),
      );
    await resolveNamed();
    let first: ReturnType<typeof revisions> = [];
    expect(await gitProcesses(async () => (first = await resolveNamed()))).toEqual([]);
    expect(first).toEqual([
      {
        repository: "github.com/acme/api",
        branch: "release",
        revision: api.git("rev-parse", "HEAD"),
      },
    ]);
    api.git("checkout", "--quiet", "release");
    api.git("commit", "--quiet", "--allow-empty", "-m", "on release");
    expect((await resolveNamed())[0]?.revision).toBe(api.git("rev-parse", "release"));
  });

  it("sees a new origin, and an origin removed", async () => {
    api.git("remote", "add", "origin", "https://example.com/upstream/api.git");
    const named = "name: demo\non:\n  - repository: example.com/upstream/api\n";
    const first = await resolveWorkspaces(specFrom(named), { repositories: await repositories() });
    expect(first.workspaces.map((workspace) => workspace.repository.name)).toEqual([
      "github.com/acme/api",
    ]);
    api.git("remote", "set-url", "origin", "https://example.com/moved/api.git");
    const loaded = await repositories();
    expect(loaded.find((repository) => repository.name === "github.com/acme/api")?.originName).toBe(
      "example.com/moved/api",
    );
    const error = await rejection(
      resolveWorkspaces(specFrom(named), { repositories: loaded, batchIgnores: memory }),
    );
    expect(error.code).toBe("repository_not_found");
    api.git("remote", "remove", "origin");
    expect(
      (await repositories()).find((repository) => repository.name === "github.com/acme/api")
        ?.originName,
    ).toBeUndefined();
  });

  it("asks git about a HEAD whose files it does not read plainly, as before", async () => {
    mkdirSync(join(api.path, ".git", "reftable"));
    const started = await gitProcesses(() => again());
    expect(started).toContainEqual(expect.arrayContaining(["rev-parse"]));
    expect(revisions(await again())[0]?.revision).toBe(api.git("rev-parse", "HEAD"));
  });
});
