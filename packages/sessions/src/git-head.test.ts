import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTempRepository, gitIn, type TempRepository } from "@deckhand/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { resolveCommit } from "./git.ts";
import { headCommit, headFromFiles } from "./git-head.ts";

describe("a worktree's HEAD commit read from its files", () => {
  let repository: TempRepository;
  let scratch: string;

  beforeEach(() => {
    repository = createTempRepository({ "README.md": "# head\n" });
    scratch = mkdtempSync(join(tmpdir(), "deckhand-git-head-"));
  });

  afterEach(() => {
    repository.remove();
    rmSync(scratch, { recursive: true, force: true });
  });

  /** The files' answer, which must be git's, and read without asking git. */
  async function expectSameAsGit(worktree: string): Promise<void> {
    const fromGit = await resolveCommit(worktree, "HEAD");
    expect(fromGit).toMatch(/^[0-9a-f]{40}$/);
    expect(await headFromFiles(worktree)).toBe(fromGit);
    expect(await headCommit(worktree)).toBe(fromGit);
  }

  it("reads a branch's loose ref, and again after a commit", async () => {
    await expectSameAsGit(repository.path);
    writeFileSync(join(repository.path, "README.md"), "# changed\n");
    repository.git("commit", "--quiet", "-am", "second");
    await expectSameAsGit(repository.path);
  });

  it("reads a linked worktree (a session's), whose .git is a file and refs are shared", async () => {
    const linked = join(scratch, "linked");
    repository.git("worktree", "add", "--quiet", "-b", "session-branch", linked);
    await expectSameAsGit(linked);
    writeFileSync(join(linked, "README.md"), "# from the session\n");
    gitIn(linked, "commit", "--quiet", "-am", "on the session branch");
    await expectSameAsGit(linked);
    expect(await headFromFiles(linked)).not.toBe(await headFromFiles(repository.path));
  });

  it("reads packed refs, and a loose ref written after packing wins", async () => {
    repository.git("pack-refs", "--all");
    await expectSameAsGit(repository.path);
    writeFileSync(join(repository.path, "README.md"), "# after packing\n");
    repository.git("commit", "--quiet", "-am", "after packing");
    await expectSameAsGit(repository.path);
  });

  it("reads a detached HEAD", async () => {
    repository.git("checkout", "--quiet", "--detach");
    await expectSameAsGit(repository.path);
  });

  it("asks git about a branch with no commit yet, which has no commit", async () => {
    repository.git("checkout", "--quiet", "--orphan", "empty");
    expect(await headFromFiles(repository.path)).toBeUndefined();
    expect(await headCommit(repository.path)).toBeNull();
  });

  it("leaves what it does not know to git: no .git, a ref outside refs/heads, a reftable", async () => {
    const plain = join(scratch, "plain");
    mkdirSync(plain);
    expect(await headFromFiles(plain)).toBeUndefined();

    const head = repository.git("rev-parse", "HEAD");
    repository.git("update-ref", "refs/worktree/elsewhere", head);
    repository.git("symbolic-ref", "HEAD", "refs/worktree/elsewhere");
    expect(await headFromFiles(repository.path)).toBeUndefined();
    expect(await headCommit(repository.path)).toBe(head);

    repository.git("symbolic-ref", "HEAD", "refs/heads/main");
    mkdirSync(join(repository.path, ".git", "reftable"));
    expect(await headFromFiles(repository.path)).toBeUndefined();
    expect(await headCommit(repository.path)).toBe(head);
  });
});
