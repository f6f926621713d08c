import { mkdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { createTempRepository, type TempRepository } from "@deckhand/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { locateRepository, parsePorcelainV2, readRepositoryState } from "./git-state.ts";

describe("parsePorcelainV2", () => {
  it("reads branch headers and every record kind, paths with spaces included", () => {
    const output = [
      "# branch.oid 1111111111111111111111111111111111111111",
      "# branch.head feature/x",
      "# branch.upstream origin/feature/x",
      "# branch.ab +2 -3",
      "1 .M N... 100644 100644 100644 aaaa bbbb src/a file.ts",
      "2 R. N... 100644 100644 100644 aaaa aaaa R100 new name.ts",
      "old name.ts",
      "u UU N... 100644 100644 100644 100644 aaaa bbbb cccc conflict.txt",
      "1 AT N... 000000 100644 120000 0000 bbbb added-then-link",
      "? notes/todo.md",
      "",
    ].join("\0");
    expect(parsePorcelainV2(output, "/repo")).toEqual({
      root: "/repo",
      branch: "feature/x",
      head: "1111111111111111111111111111111111111111",
      upstream: { name: "origin/feature/x", ahead: 2, behind: 3 },
      changes: [
        { path: "added-then-link", index: "added", worktree: "type_changed", conflicted: false },
        { path: "conflict.txt", index: "unmerged", worktree: "unmerged", conflicted: true },
        {
          path: "new name.ts",
          original_path: "old name.ts",
          index: "renamed",
          worktree: "unmodified",
          conflicted: false,
        },
        { path: "notes/todo.md", index: "untracked", worktree: "untracked", conflicted: false },
        { path: "src/a file.ts", index: "unmodified", worktree: "modified", conflicted: false },
      ],
    });
  });

  it("reports a detached HEAD, an unborn branch and a gone upstream as nulls", () => {
    const detached =
      "# branch.oid 2222222222222222222222222222222222222222\0# branch.head (detached)\0";
    expect(parsePorcelainV2(detached, "/r")).toMatchObject({ branch: null, upstream: null });
    const unborn = "# branch.oid (initial)\0# branch.head main\0# branch.upstream origin/main\0";
    expect(parsePorcelainV2(unborn, "/r")).toMatchObject({
      branch: "main",
      head: null,
      upstream: { name: "origin/main", ahead: null, behind: null },
    });
  });
});

describe("readRepositoryState on a real repository", () => {
  let repository: TempRepository;

  beforeAll(() => {
    repository = createTempRepository({ "README.md": "# demo\n", "src/a.ts": "a\n" });
  });

  afterAll(() => repository.remove());

  it("locates a worktree from a subdirectory and a linked worktree's separate git dir", async () => {
    const top = realpathSync(repository.path);
    const fromSub = await locateRepository(join(top, "src"));
    expect(fromSub).toEqual({
      topLevel: top,
      gitDir: join(top, ".git"),
      commonDir: join(top, ".git"),
    });
    const linked = `${top}-linked`;
    repository.git("worktree", "add", "--quiet", linked, "-b", "linked");
    try {
      const location = await locateRepository(linked);
      expect(location).toEqual({
        topLevel: linked,
        gitDir: join(top, ".git", "worktrees", basename(linked)),
        commonDir: join(top, ".git"),
      });
    } finally {
      repository.git("worktree", "remove", "--force", linked);
      rmSync(linked, { recursive: true, force: true });
    }
    await expect(locateRepository(join(top, ".git"))).rejects.toThrow(/git rev-parse failed/);
  });

  it("reports staged renames, untracked files in new directories and ahead/behind a local upstream", async () => {
    repository.git("branch", "base");
    repository.git("branch", "--set-upstream-to=base");
    writeFileSync(join(repository.path, "README.md"), "# changed\n");
    repository.git("commit", "--quiet", "-am", "ahead by one");
    repository.git("mv", "src/a.ts", "src/b.ts");
    mkdirSync(join(repository.path, "new/deep"), { recursive: true });
    writeFileSync(join(repository.path, "new/deep/file.txt"), "x");
    const state = await readRepositoryState(await locateRepository(repository.path));
    expect(state).toMatchObject({
      branch: "main",
      head: repository.git("rev-parse", "HEAD"),
      upstream: { name: "base", ahead: 1, behind: 0 },
      changes: [
        { path: "new/deep/file.txt", index: "untracked", worktree: "untracked" },
        { path: "src/b.ts", original_path: "src/a.ts", index: "renamed", worktree: "unmodified" },
      ],
    });
  });
});
