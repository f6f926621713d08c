import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, specFrom, temporaryDirectory } from "../test/support.ts";
import { checkoutWorkspace } from "./checkout-workspace.ts";
import { loadRepositories } from "./repositories.ts";
import { resolveWorkspaces } from "./resolve-workspaces.ts";

let scratch: ReturnType<typeof temporaryDirectory>;
beforeEach(() => {
  scratch = temporaryDirectory();
});
afterEach(() => scratch.remove());

async function monorepoWorkspaces(onlyFetchWorkspace: boolean) {
  const upstream = repositoryAt(join(scratch.path, "upstream"), {
    "README.md": "root\n",
    "packages/a/package.json": "{}\n",
    "packages/b/package.json": "{}\n",
  });
  const repositories = await loadRepositories({
    codeHosts: [{ type: "git", url: `file://${upstream.path}`, name: "acme/mono" }],
    cacheDirectory: join(scratch.path, "cache"),
  });
  const { workspaces } = await resolveWorkspaces(
    specFrom(`
name: demo
on:
  - repository: acme/mono
workspaces:
  - rootAtLocationOf: package.json
    onlyFetchWorkspace: ${onlyFetchWorkspace}
`),
    { repositories },
  );
  return { upstream, workspaces };
}

describe("checkoutWorkspace", () => {
  it("onlyFetchWorkspace writes out the workspace's directory and the root files only", async () => {
    const { upstream, workspaces } = await monorepoWorkspaces(true);
    const workspace = workspaces.find((candidate) => candidate.path === "packages/a")!;
    const directory = join(scratch.path, "checkout");
    const checkout = await checkoutWorkspace(workspace, directory);

    expect(checkout.workspaceDirectory).toBe(join(directory, "packages/a"));
    expect(existsSync(join(directory, "packages/a/package.json"))).toBe(true);
    expect(existsSync(join(directory, "README.md"))).toBe(true);
    expect(existsSync(join(directory, "packages/b"))).toBe(false);
    expect(upstream.git("-C", directory, "rev-parse", "HEAD")).toBe(workspace.revision);
    expect(upstream.git("-C", directory, "status", "--porcelain")).toBe("");

    await checkout.remove();
    expect(existsSync(directory)).toBe(false);
    expect(upstream.git("-C", workspace.repository.path, "worktree", "list")).not.toContain(
      directory,
    );
  });

  it("without onlyFetchWorkspace the whole tree is checked out", async () => {
    const { workspaces } = await monorepoWorkspaces(false);
    const workspace = workspaces.find((candidate) => candidate.path === "packages/a")!;
    const directory = join(scratch.path, "checkout");
    const checkout = await checkoutWorkspace(workspace, directory);
    expect(existsSync(join(directory, "packages/b/package.json"))).toBe(true);
    await checkout.remove();
  });

  it("a directory host's working copy keeps its branch and files", async () => {
    const root = join(scratch.path, "code");
    const repository = repositoryAt(join(root, "api"));
    repository.git("switch", "--quiet", "-c", "feature");
    const repositories = await loadRepositories({ codeHosts: [{ type: "directory", path: root }] });
    const { workspaces } = await resolveWorkspaces(
      specFrom("name: demo\non:\n  - repository: api\n    branch: main\n"),
      { repositories },
    );
    const checkout = await checkoutWorkspace(workspaces[0]!, join(scratch.path, "checkout"));
    expect(existsSync(join(checkout.directory, "README.md"))).toBe(true);
    expect(repository.git("branch", "--show-current")).toBe("feature");
    expect(repository.git("status", "--porcelain")).toBe("");
    await checkout.remove();
  });
});
