import { readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createTempRepository, type TempRepository } from "@deckhand/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { changedPaths, commitPath, currentBranch, git, repositoryRoot } from "./git.ts";
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
});
