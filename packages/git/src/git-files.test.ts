import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  branchFromFiles,
  gitDirectories,
  headFromFiles,
  originUrlFromFiles,
  originUrlInConfig,
} from "./git-files.ts";
import { runGitSync } from "./run-git.ts";

const IDENTITY = {
  GIT_AUTHOR_NAME: "Test",
  GIT_AUTHOR_EMAIL: "test@example.com",
  GIT_COMMITTER_NAME: "Test",
  GIT_COMMITTER_EMAIL: "test@example.com",
};

let scratch: string;
let main: string;

function git(cwd: string, ...args: string[]): string {
  return runGitSync(args, { cwd, environment: IDENTITY }).stdout.trim();
}

/** git's own answer: the commit and the full branch name, or undefined when HEAD has none. */
function headFromGit(path: string): { commit: string; branch: string } | undefined {
  const result = runGitSync(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], {
    cwd: path,
    allowedExitCodes: [1],
  });
  if (result.exitCode !== 0) return undefined;
  const branch = runGitSync(["rev-parse", "--symbolic-full-name", "HEAD"], { cwd: path });
  return { commit: result.stdout.trim(), branch: branch.stdout.trim() };
}

function originFromGit(path: string): string | null {
  const result = runGitSync(["config", "--get", "remote.origin.url"], {
    cwd: path,
    allowedExitCodes: [1],
  });
  return result.exitCode === 0 ? result.stdout.trim() : null;
}

/** The files' answer for HEAD, which must be git's. */
function expectHeadAsGit(path: string): void {
  const fromGit = headFromGit(path);
  expect(fromGit?.commit).toMatch(/^[0-9a-f]{40}$/);
  const fromFiles = headFromFiles(path);
  expect(fromFiles?.commit).toBe(fromGit?.commit);
  expect(fromFiles?.refs.at(-1) ?? "HEAD").toBe(fromGit?.branch);
}

beforeEach(() => {
  scratch = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-git-files-")));
  main = join(scratch, "main");
  mkdirSync(main);
  git(main, "init", "--quiet", "--initial-branch=main");
  writeFileSync(join(main, "README.md"), "# files\n");
  git(main, "add", "README.md");
  git(main, "commit", "--quiet", "-m", "first");
});

afterEach(() => {
  rmSync(scratch, { recursive: true, force: true });
});

describe("gitDirectories", () => {
  it("finds a clone's .git, a linked worktree's and a bare repository's directories", () => {
    expect(gitDirectories(main)).toEqual({
      gitDirectory: join(main, ".git"),
      commonDirectory: join(main, ".git"),
      linked: false,
    });
    const linked = join(scratch, "linked");
    git(main, "worktree", "add", "--quiet", "-b", "other", linked);
    expect(gitDirectories(linked)).toEqual({
      gitDirectory: join(main, ".git", "worktrees", "linked"),
      commonDirectory: join(main, ".git"),
      linked: true,
    });
    expect(git(linked, "rev-parse", "--path-format=absolute", "--git-common-dir")).toBe(
      gitDirectories(linked)?.commonDirectory,
    );
    const bare = join(scratch, "bare.git");
    git(scratch, "clone", "--quiet", "--bare", main, bare);
    expect(gitDirectories(bare)).toEqual({
      gitDirectory: bare,
      commonDirectory: bare,
      linked: false,
    });
  });

  it("follows a separate git directory, and knows nothing of a plain directory", () => {
    const separate = join(scratch, "separate");
    git(
      scratch,
      "clone",
      "--quiet",
      `--separate-git-dir=${join(scratch, "admin")}`,
      main,
      separate,
    );
    expect(gitDirectories(separate)).toEqual({
      gitDirectory: join(scratch, "admin"),
      commonDirectory: join(scratch, "admin"),
      linked: true,
    });
    const plain = join(scratch, "plain");
    mkdirSync(plain);
    expect(gitDirectories(plain)).toBeUndefined();
    writeFileSync(join(plain, ".git"), "not a pointer\n");
    expect(gitDirectories(plain)).toBeUndefined();
  });
});

describe("headFromFiles", () => {
  it("reads a loose ref, packed refs, a loose ref written after packing, and a detached HEAD", () => {
    expectHeadAsGit(main);
    git(main, "pack-refs", "--all");
    expectHeadAsGit(main);
    writeFileSync(join(main, "README.md"), "# after packing\n");
    git(main, "commit", "--quiet", "-am", "after packing");
    expectHeadAsGit(main);
    git(main, "checkout", "--quiet", "--detach");
    expectHeadAsGit(main);
    expect(headFromFiles(main)?.refs).toEqual([]);
  });

  it("reads a linked worktree's own HEAD and a bare repository's", () => {
    const linked = join(scratch, "linked");
    git(main, "worktree", "add", "--quiet", "-b", "session-branch", linked);
    writeFileSync(join(linked, "README.md"), "# linked\n");
    git(linked, "commit", "--quiet", "-am", "on the linked branch");
    expectHeadAsGit(linked);
    expectHeadAsGit(main);
    expect(headFromFiles(linked)?.commit).not.toBe(headFromFiles(main)?.commit);
    const bare = join(scratch, "bare.git");
    git(scratch, "clone", "--quiet", "--bare", main, bare);
    expectHeadAsGit(bare);
  });

  it("follows a branch that is a symbolic ref to another branch", () => {
    git(main, "symbolic-ref", "refs/heads/alias", "refs/heads/main");
    git(main, "symbolic-ref", "HEAD", "refs/heads/alias");
    const fromFiles = headFromFiles(main);
    expect(fromFiles?.refs).toEqual(["refs/heads/alias", "refs/heads/main"]);
    expect(fromFiles?.commit).toBe(headFromGit(main)?.commit);
  });

  it("leaves to git a branch with no commit, a ref outside refs/heads and a reftable", () => {
    git(main, "checkout", "--quiet", "--orphan", "empty");
    expect(headFromFiles(main)).toBeUndefined();
    expect(headFromGit(main)).toBeUndefined();
    git(main, "checkout", "--quiet", "main");

    const head = git(main, "rev-parse", "HEAD");
    git(main, "update-ref", "refs/worktree/elsewhere", head);
    git(main, "symbolic-ref", "HEAD", "refs/worktree/elsewhere");
    expect(headFromFiles(main)).toBeUndefined();

    git(main, "symbolic-ref", "HEAD", "refs/heads/main");
    mkdirSync(join(main, ".git", "reftable"));
    expect(headFromFiles(main)).toBeUndefined();
  });
});

describe("branchFromFiles", () => {
  it("reads a branch's loose ref and its packed ref as git does, in a clone and a linked worktree", () => {
    git(main, "branch", "feature/one");
    const head = git(main, "rev-parse", "HEAD");
    expect(branchFromFiles(main, "feature/one")).toBe(head);
    git(main, "pack-refs", "--all");
    expect(branchFromFiles(main, "feature/one")).toBe(head);
    writeFileSync(join(main, "README.md"), "# moved\n");
    git(main, "commit", "--quiet", "-am", "moved");
    expect(branchFromFiles(main, "main")).toBe(git(main, "rev-parse", "refs/heads/main^{commit}"));
    const linked = join(scratch, "linked");
    git(main, "worktree", "add", "--quiet", linked, "feature/one");
    expect(branchFromFiles(linked, "main")).toBe(git(main, "rev-parse", "main"));
  });

  it("leaves to git a branch the files lack, a symbolic one and a name git reads as more", () => {
    expect(branchFromFiles(main, "missing")).toBeUndefined();
    git(main, "symbolic-ref", "refs/heads/alias", "refs/heads/main");
    expect(branchFromFiles(main, "alias")).toBeUndefined();
    git(main, "branch", "x");
    for (const name of [
      "main~1",
      "main^",
      "../heads/main",
      "x/../main",
      ".hidden",
      "main.lock",
      "",
    ]) {
      expect(branchFromFiles(main, name)).toBeUndefined();
    }
  });
});

describe("originUrlFromFiles", () => {
  it("reads the origin git wrote, in a clone, a linked worktree and a bare repository", () => {
    expect(originUrlFromFiles(main)).toBeNull();
    expect(originFromGit(main)).toBeNull();
    git(main, "remote", "add", "origin", "https://example.com/acme/widgets.git");
    git(main, "config", "branch.main.remote", "origin");
    expect(originUrlFromFiles(main)).toBe("https://example.com/acme/widgets.git");
    const linked = join(scratch, "linked");
    git(main, "worktree", "add", "--quiet", "-b", "other", linked);
    expect(originUrlFromFiles(linked)).toBe(originFromGit(linked));
    const bare = join(scratch, "bare.git");
    git(scratch, "clone", "--quiet", "--bare", main, bare);
    expect(originUrlFromFiles(bare)).toBe(originFromGit(bare));
    expect(originFromGit(bare)).toBe(main);
    git(main, "remote", "set-url", "origin", "git@example.com:acme/moved.git");
    expect(originUrlFromFiles(main)).toBe("git@example.com:acme/moved.git");
  });

  it("leaves an include, and a global configuration naming a remote, to git", () => {
    writeFileSync(join(scratch, "included"), '[remote "origin"]\n\turl = https://example.com/x\n');
    git(main, "config", "include.path", join(scratch, "included"));
    expect(originFromGit(main)).toBe("https://example.com/x");
    expect(originUrlFromFiles(main)).toBeUndefined();
    git(main, "config", "--unset", "include.path");

    const global = join(scratch, "global-config");
    writeFileSync(global, '[remote "origin"]\n\turl = https://example.com/global\n');
    const previous = process.env.GIT_CONFIG_GLOBAL;
    process.env.GIT_CONFIG_GLOBAL = global;
    try {
      expect(originFromGit(main)).toBe("https://example.com/global");
      expect(originUrlFromFiles(main)).toBeUndefined();
    } finally {
      if (previous === undefined) delete process.env.GIT_CONFIG_GLOBAL;
      else process.env.GIT_CONFIG_GLOBAL = previous;
    }
  });

  it("says what git says of any configuration text it reads, or leaves it to git", () => {
    const config = join(main, ".git", "config");
    const base = git(main, "config", "--list", "--local").length > 0;
    expect(base).toBe(true);
    const line = fc.oneof(
      fc.constantFrom(
        '[remote "origin"]',
        '[remote "Origin"]',
        '[REMOTE "origin"]',
        "[Remote.Origin]",
        "[remote.origin]",
        '[remote "upstream"]',
        "[core]",
        "[branch.main]",
        "[remote]",
        '[remote "origin"] url = inline.example/a',
      ),
      fc
        .tuple(
          fc.constantFrom("url", "URL", "Url", "fetch", "pushurl", "url2"),
          fc.constantFrom(" = ", "=", "  =  ", "\t= ", ""),
          fc.stringMatching(/^[a-z:/.@ #;\t-]{0,16}$/),
        )
        .map(([key, equals, value]) => `\t${key}${equals}${equals === "" ? "" : value}`),
      fc.constantFrom("# a comment", "; another", "", "   "),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 8 }), (lines) => {
        const text = `[core]\n\trepositoryformatversion = 0\n${lines.join("\n")}\n`;
        writeFileSync(config, text);
        const fromFiles = originUrlInConfig(text);
        const fromGit = runGitSync(["config", "--get", "remote.origin.url"], {
          cwd: main,
          allowedExitCodes: [1, 3],
        });
        if (fromFiles === undefined) return;
        // A text git cannot read (exit code 3) is one this reader must leave to it.
        expect(fromGit.exitCode).not.toBe(3);
        expect(fromFiles).toBe(fromGit.exitCode === 0 ? fromGit.stdout.replace(/\n$/, "") : null);
      }),
      { numRuns: 60 },
    );
  });
});
