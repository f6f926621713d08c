import {
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sharedSpawnHost } from "@deckhand/spawn-host";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { GitError } from "./git-error.ts";
import { gitEnvironment, REPOSITORY_LOCATING_VARIABLES, runGit, runGitSync } from "./run-git.ts";

const IDENTITY = {
  GIT_AUTHOR_NAME: "Test",
  GIT_AUTHOR_EMAIL: "test@example.com",
  GIT_COMMITTER_NAME: "Test",
  GIT_COMMITTER_EMAIL: "test@example.com",
};

const directories: string[] = [];

/** A repository with one commit of README.md, made with the runner under test. */
function repository(): string {
  const path = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-git-")));
  directories.push(path);
  const options = { cwd: path, environment: IDENTITY };
  runGitSync(["init", "--quiet", "--initial-branch=main"], options);
  writeFileSync(join(path, "README.md"), "# demo\n");
  runGitSync(["add", "--all"], options);
  runGitSync(["commit", "--quiet", "-m", "initial"], options);
  return path;
}

const savedEnvironment = { ...process.env };
afterEach(() => {
  for (const name of Object.keys(process.env)) {
    if (!(name in savedEnvironment)) delete process.env[name];
  }
  Object.assign(process.env, savedEnvironment);
  for (const directory of directories.splice(0))
    rmSync(directory, { recursive: true, force: true });
});

async function rejection(promise: Promise<unknown>): Promise<GitError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(GitError);
  return error as GitError;
}

describe("environment", () => {
  let here: string;
  let elsewhere: string;
  beforeEach(() => {
    here = repository();
    elsewhere = repository();
  });

  it("a GIT_DIR, GIT_WORK_TREE or GIT_INDEX_FILE in the parent does not redirect the command", async () => {
    process.env.GIT_DIR = join(elsewhere, ".git");
    process.env.GIT_WORK_TREE = elsewhere;
    process.env.GIT_INDEX_FILE = join(elsewhere, ".git", "index");
    const { stdout } = await runGit(["rev-parse", "--show-toplevel", "--git-dir"], {
      cwd: here,
    });
    expect(stdout.split("\n").slice(0, 2)).toEqual([here, ".git"]);
    const sync = runGitSync(["rev-parse", "--show-toplevel"], { cwd: here });
    expect(sync.stdout.trim()).toBe(here);
  });

  it("clears every variable git itself clears before working in another repository", () => {
    const listed = runGitSync(["rev-parse", "--local-env-vars"], { cwd: here })
      .stdout.split("\n")
      .filter((name) => name.length > 0);
    expect(listed.length).toBeGreaterThan(5);
    expect([...REPOSITORY_LOCATING_VARIABLES].sort()).toEqual(expect.arrayContaining(listed));
    const parent = Object.fromEntries(
      [...listed, "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"].map((name) => [name, "x"]),
    );
    const environment = gitEnvironment({}, { ...parent, HOME: "/home/someone" });
    expect(Object.keys(environment).filter((name) => name in parent)).toEqual([]);
    expect(environment.HOME).toBe("/home/someone");
  });

  it("never prompts, pages or opens an editor, and speaks the C locale", () => {
    expect(gitEnvironment({}, { GIT_TERMINAL_PROMPT: "1", LC_ALL: "de_DE.UTF-8" })).toMatchObject({
      GIT_TERMINAL_PROMPT: "0",
      GIT_EDITOR: "true",
      GIT_PAGER: "cat",
      LC_ALL: "C",
    });
  });

  it("the caller's variables win, so a commit identity can be given", async () => {
    await runGit(["commit", "--quiet", "--allow-empty", "-m", "second"], {
      cwd: here,
      environment: { ...IDENTITY, GIT_AUTHOR_NAME: "Someone Else" },
    });
    const { stdout } = await runGit(["log", "-1", "--format=%an"], { cwd: here });
    expect(stdout.trim()).toBe("Someone Else");
  });

  it("a read-only status leaves the index alone; a writing one refreshes it", async () => {
    const index = join(here, ".git", "index");
    // A new modification time with the same content: status refreshes the stat data it keeps.
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(here, "README.md"), later, later);
    const before = readFileSync(index);
    await runGit(["status", "--porcelain"], { cwd: here, readOnly: true });
    expect(readFileSync(index).equals(before)).toBe(true);
    expect(gitEnvironment({ readOnly: true }, {}).GIT_OPTIONAL_LOCKS).toBe("0");

    await runGit(["status", "--porcelain"], { cwd: here });
    expect(readFileSync(index).equals(before)).toBe(false);
    expect(gitEnvironment({}, { GIT_OPTIONAL_LOCKS: "0" }).GIT_OPTIONAL_LOCKS).toBeUndefined();
  });
});

describe("running", () => {
  let here: string;
  beforeEach(() => {
    here = repository();
  });

  it("resolves with stdout, stderr and exit code 0", async () => {
    const result = await runGit(["rev-parse", "--abbrev-ref", "HEAD"], { cwd: here });
    expect(result).toEqual({ stdout: "main\n", stderr: "", exitCode: 0 });
  });

  it("writes the input to git's standard input", async () => {
    const { stdout } = await runGit(["hash-object", "--stdin"], { cwd: here, input: "hello\n" });
    expect(stdout.trim()).toBe("ce013625030ba8dba906f756967f9e9ca394464a");
  });

  it("closes standard input when there is no input, so a command reading it ends", async () => {
    const { stdout } = await runGit(["hash-object", "--stdin"], { cwd: here, timeoutMs: 10_000 });
    expect(stdout.trim()).toBe("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
  });

  it("an allowed exit code is an answer, not a failure", async () => {
    const result = await runGit(["show-ref", "--verify", "--quiet", "refs/heads/absent"], {
      cwd: here,
      allowedExitCodes: [1],
    });
    expect(result.exitCode).toBe(1);
  });

  it("a failure rejects with git's stderr, the exit code and the command", async () => {
    const error = await rejection(runGit(["rev-parse", "--verify", "no-such-ref"], { cwd: here }));
    expect(error.code).toBe("git_failed");
    expect(error.exitCode).toBe(128);
    expect(error.stderr).toContain("fatal: Needed a single revision");
    expect(error.message).toBe("git rev-parse failed: fatal: Needed a single revision");
    // The directory is for logs (error.cwd), never in the message: messages reach API clients,
    // and the directory is the server's own (its working directory, its data directory).
    expect(error.message).not.toContain(here);
    expect(error.args).toEqual(["rev-parse", "--verify", "no-such-ref"]);
    expect(error.cwd).toBe(here);

    const sync = (() => {
      try {
        runGitSync(["rev-parse", "--verify", "no-such-ref"], { cwd: here });
      } catch (caught) {
        return caught as GitError;
      }
      throw new Error("runGitSync did not throw");
    })();
    expect(sync).toBeInstanceOf(GitError);
    expect(sync.code).toBe("git_failed");
    expect(sync.exitCode).toBe(128);
    expect(sync.stderr).toContain("fatal: Needed a single revision");
  });

  it("a timeout stops git and whatever it started", async () => {
    const started = Date.now();
    const error = await rejection(
      runGit(["-c", "alias.wait=!sleep 30", "wait"], { cwd: here, timeoutMs: 300 }),
    );
    expect(error.code).toBe("timed_out");
    expect(error.exitCode).toBeNull();
    // The callback waits for the pipes to close: a surviving `sleep` would hold them for 30s.
    expect(Date.now() - started).toBeLessThan(20_000);

    const syncStarted = Date.now();
    expect(() =>
      runGitSync(["-c", "alias.wait=!sleep 30", "wait"], { cwd: here, timeoutMs: 300 }),
    ).toThrow(expect.objectContaining({ code: "timed_out" }));
    expect(Date.now() - syncStarted).toBeLessThan(20_000);
  });

  it("the abort signal stops git", async () => {
    const controller = new AbortController();
    const running = runGit(["-c", "alias.wait=!sleep 30", "wait"], {
      cwd: here,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 200);
    const error = await rejection(running);
    expect(error.code).toBe("aborted");
  });

  it("output past the bound stops git instead of being cut silently", async () => {
    const error = await rejection(runGit(["--version"], { cwd: here, maxOutputBytes: 4 }));
    expect(error.code).toBe("output_too_large");
    expect(() => runGitSync(["--version"], { cwd: here, maxOutputBytes: 4 })).toThrow(
      expect.objectContaining({ code: "output_too_large" }),
    );
  });

  it("git is started by the spawn host, not by this process", async () => {
    expect(await sharedSpawnHost().ready()).toBe(true);
    // The alias's shell is git's child; its parent's parent started git.
    const { stdout } = await runGit(
      ["-c", "alias.starter=!sed -n 's/^PPid:[[:space:]]*//p' /proc/$PPID/status", "starter"],
      { cwd: here },
    );
    const host = sharedSpawnHost().pid;
    expect(host).toBeDefined();
    expect(Number(stdout.trim())).toBe(host);
    expect(Number(stdout.trim())).not.toBe(process.pid);
  });

  it("a spawn host that exits while git runs fails the command, and the next one runs", async () => {
    await sharedSpawnHost().ready();
    // The alias writes until its output pipe, read by the host, is gone.
    const running = runGit(["-c", "alias.talk=!while echo waiting; do sleep 0.1; done", "talk"], {
      cwd: here,
    });
    // The host answers in order of requests: once this one is back, it has started the first.
    await runGit(["--version"], { cwd: here });
    process.kill(sharedSpawnHost().pid!, "SIGKILL");
    const error = await rejection(running);
    expect(error.code).toBe("git_failed");
    expect(error.message).toContain("run the command again");
    expect((await runGit(["rev-parse", "--is-inside-work-tree"], { cwd: here })).stdout).toBe(
      "true\n",
    );
  });

  it("a missing git says to install it", async () => {
    const error = await rejection(
      runGit(["--version"], { cwd: here, environment: { PATH: "/nonexistent" } }),
    );
    expect(error.code).toBe("git_not_found");
    expect(error.message).toContain("install git");
  });
});
