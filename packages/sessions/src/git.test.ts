import { mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createTempRepository, type TempRepository } from "@deckhand/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type ChangedPath,
  changedPaths,
  commitPath,
  currentBranch,
  git,
  repositoryRoot,
  resolveCommit,
  worktreeStatus,
} from "./git.ts";
import { SessionsError } from "./sessions-error.ts";

describe("session git", () => {
  let here: TempRepository;
  let elsewhere: TempRepository;
  const saved = { ...process.env };

  beforeEach(() => {
    here = createTempRepository({ "README.md": "# here\n" });
    elsewhere = createTempRepository({ "README.md": "# elsewhere\n" });
    elsewhere.git("checkout", "--quiet", "-b", "elsewhere-branch");
  });

  afterEach(() => {
    for (const name of ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"]) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
    here.remove();
    elsewhere.remove();
  });

  it("looks at the repository it is asked about even when the server's env names another", async () => {
    process.env.GIT_DIR = join(elsewhere.path, ".git");
    process.env.GIT_WORK_TREE = elsewhere.path;
    expect(await repositoryRoot(here.path)).toBe(here.path);
    expect(await currentBranch(here.path)).toBe("main");
  });

  it("commits with Deckhand's identity", async () => {
    writeFileSync(join(here.path, "new.txt"), "new\n");
    await commitPath(here.path, "new.txt", "add new.txt");
    expect(here.git("log", "-1", "--format=%an <%ae>|%cn <%ce>")).toBe(
      "Deckhand <deckhand@localhost>|Deckhand <deckhand@localhost>",
    );
  });

  it("listing changes leaves the index alone, so it never takes a lock an agent needs", async () => {
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(here.path, "README.md"), later, later);
    const index = join(here.path, ".git", "index");
    const before = readFileSync(index);
    expect(await changedPaths(here.path)).toEqual([]);
    expect(readFileSync(index).equals(before)).toBe(true);
  });

  it("a failure is a SessionsError git_failed with git's explanation", async () => {
    const error = await git(["rev-parse", "--verify", "no-such-ref"], { cwd: here.path }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(SessionsError);
    expect((error as SessionsError).code).toBe("git_failed");
    expect((error as SessionsError).message).toMatch(
      /git rev-parse failed.*Needed a single revision/,
    );
  });

  /** What `git status --porcelain=v1` says changed, read as changedPaths read it before. */
  async function changedPathsByV1(worktree: string): Promise<ChangedPath[]> {
    const { stdout } = await git(
      ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"],
      { cwd: worktree, readOnly: true },
    );
    return stdout
      .split("\0")
      .filter((entry) => entry.length >= 4)
      .map((entry) => {
        const status = entry.slice(0, 2);
        const change =
          status === "??" || status.includes("A")
            ? "added"
            : status.includes("D")
              ? "deleted"
              : "modified";
        return { path: entry.slice(3), change };
      });
  }

  it("one status says the branch, the commit and every kind of change as porcelain v1 does", async () => {
    writeFileSync(join(here.path, "gone.txt"), "gone\n");
    writeFileSync(join(here.path, "staged gone.txt"), "staged gone\n");
    writeFileSync(join(here.path, "conflict.txt"), "base\n");
    here.git("add", "--all");
    here.git("commit", "--quiet", "-m", "more files");
    here.git("checkout", "--quiet", "-b", "other");
    writeFileSync(join(here.path, "conflict.txt"), "other\n");
    here.git("commit", "--quiet", "-am", "other side");
    here.git("checkout", "--quiet", "main");
    writeFileSync(join(here.path, "conflict.txt"), "main\n");
    here.git("commit", "--quiet", "-am", "main side");
    const merge = await git(["merge", "--quiet", "other"], {
      cwd: here.path,
      allowedExitCodes: [1],
    });
    expect(merge.exitCode).toBe(1);
    writeFileSync(join(here.path, "README.md"), "# modified\n");
    rmSync(join(here.path, "gone.txt"));
    here.git("rm", "--quiet", "staged gone.txt");
    mkdirSync(join(here.path, "deep", "er"), { recursive: true });
    writeFileSync(join(here.path, "deep", "er", "new file ü.txt"), "new\n");
    writeFileSync(join(here.path, "staged new.txt"), "staged\n");
    here.git("add", "staged new.txt");

    const status = await worktreeStatus(here.path);
    expect(status.branch).toBe("main");
    expect(status.head).toBe(await resolveCommit(here.path, "HEAD"));
    const byPath = (left: ChangedPath, right: ChangedPath) => left.path.localeCompare(right.path);
    expect([...status.changes].sort(byPath)).toEqual(
      (await changedPathsByV1(here.path)).sort(byPath),
    );
    expect(status.changes.map((change) => change.path).sort()).toEqual([
      "README.md",
      "conflict.txt",
      "deep/er/new file ü.txt",
      "gone.txt",
      "staged gone.txt",
      "staged new.txt",
    ]);
  });

  it("a detached HEAD has no branch, and a branch with no commit has no commit", async () => {
    here.git("checkout", "--quiet", "--detach");
    expect(await worktreeStatus(here.path)).toEqual({
      branch: null,
      head: await resolveCommit(here.path, "HEAD"),
      changes: [],
    });
    here.git("checkout", "--quiet", "--orphan", "empty");
    here.git("rm", "--quiet", "--cached", "README.md");
    expect(await worktreeStatus(here.path)).toEqual({
      branch: "empty",
      head: null,
      changes: [{ path: "README.md", change: "added" }],
    });
  });
});
