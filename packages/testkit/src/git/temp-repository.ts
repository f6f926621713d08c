import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { runGitSync } from "@deckhand/git";

/** A fixed identity, so commits made in tests never depend on the machine's git config. */
const GIT_IDENTITY = {
  GIT_AUTHOR_NAME: "Test",
  GIT_AUTHOR_EMAIL: "test@example.com",
  GIT_COMMITTER_NAME: "Test",
  GIT_COMMITTER_EMAIL: "test@example.com",
};

/**
 * Runs git in `cwd` (through @deckhand/git, so a GIT_DIR of the shell running the tests cannot
 * redirect it) and returns its trimmed standard output; throws a GitError on failure.
 */
export function gitIn(cwd: string, ...args: string[]): string {
  return runGitSync(args, { cwd, environment: GIT_IDENTITY }).stdout.trim();
}

export interface TempRepository {
  path: string;
  git(...args: string[]): string;
  remove(): void;
}

/** A git repository in a temporary directory, on branch `main`, with one commit of `files`. */
export function createTempRepository(
  files: Record<string, string> = { "README.md": "# demo\n" },
  prefix = "deckhand-repo-",
): TempRepository {
  const path = mkdtempSync(join(tmpdir(), prefix));
  gitIn(path, "init", "--quiet", "--initial-branch=main");
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(dirname(join(path, file)), { recursive: true });
    writeFileSync(join(path, file), content);
  }
  gitIn(path, "add", "--all");
  gitIn(path, "commit", "--quiet", "-m", "initial");
  return {
    path,
    git: (...args) => gitIn(path, ...args),
    remove: () => rmSync(path, { recursive: true, force: true }),
  };
}
