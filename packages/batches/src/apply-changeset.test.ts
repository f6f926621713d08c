import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { inspect } from "node:util";
import { gitIn } from "@deckhand/testkit";
import type { BatchChangeset } from "@deckhand/wire";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, temporaryDirectory } from "../test/support.ts";
import {
  type ApplyChangesetOptions,
  applyChangeset,
  isBranchGitAccepts,
} from "./apply-changeset.ts";
import { BatchesError } from "./batches-error.ts";
import { loadRepositories } from "./repositories.ts";
import type { WorkspaceRepository } from "./resolve-workspaces.ts";
import { collectWorkspaceDiff } from "./workspace-diff.ts";

let scratch: ReturnType<typeof temporaryDirectory>;
let counter = 0;
/** A fresh directory name in the scratch directory. */
function fresh(prefix: string): string {
  counter += 1;
  return join(scratch.path, `${prefix}-${counter}`);
}
beforeEach(() => {
  scratch = temporaryDirectory();
});
afterEach(() => scratch.remove());

const BRANCH = "batch/update-app";
const AUTHOR = { name: "Batch Bot", email: "bot@example.com" };

interface WorkingCopy {
  path: string;
  base: string;
  repository: WorkspaceRepository;
  git(...args: string[]): string;
}

/** A directory host's working copy `api` on `main`, with one commit. */
function workingCopy(): WorkingCopy {
  const root = join(scratch.path, "code");
  const placed = repositoryAt(join(root, "api"), {
    "README.md": "# api\n",
    "src/app.txt": "one\ntwo\nthree\n",
  });
  return {
    ...placed,
    base: placed.git("rev-parse", "HEAD"),
    repository: {
      id: `directory:${placed.path}`,
      name: "api",
      host: { type: "directory", root },
      path: placed.path,
      url: undefined,
    },
  };
}

type Files = Record<string, string | Buffer | null>;

function writeFiles(directory: string, files: Files): void {
  for (const [file, content] of Object.entries(files)) {
    const path = join(directory, file);
    if (content === null) {
      rmSync(path, { force: true });
    } else {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, content);
    }
  }
}

/** The diff that writing `files` (null deletes) at `base` makes, collected as a step's is. */
async function diffAt(repositoryPath: string, base: string, files: Files): Promise<string> {
  const clone = fresh("diff");
  gitIn(scratch.path, "clone", "--quiet", "--no-checkout", repositoryPath, clone);
  gitIn(clone, "checkout", "--quiet", "--detach", base);
  writeFiles(clone, files);
  const { diff } = await collectWorkspaceDiff(clone, base);
  rmSync(clone, { recursive: true, force: true });
  return diff;
}

function changesetOf(base: string, diff: string, overrides: Partial<BatchChangeset> = {}) {
  return {
    repository: "api",
    base_branch: "main",
    base_revision: base,
    path: "",
    branch: BRANCH,
    title: "Update the app",
    body: "",
    commit_message: "Update the app\n\nMade by a batch change.\n",
    commit_author: AUTHOR,
    published: false,
    diff,
    stats: { files: 1, insertions: 1, deletions: 1 },
    ...overrides,
  } satisfies BatchChangeset;
}

/** A person commits `files` on `branch` in a worktree of their own, removed afterwards. */
function personCommits(repositoryPath: string, branch: string, files: Files, message: string) {
  const worktree = fresh("person");
  gitIn(repositoryPath, "worktree", "add", "--quiet", worktree, branch);
  writeFiles(worktree, files);
  gitIn(worktree, "add", "--all");
  gitIn(worktree, "commit", "--quiet", "-m", message);
  const sha = gitIn(worktree, "rev-parse", "HEAD");
  gitIn(repositoryPath, "worktree", "remove", worktree);
  return { sha, short: sha.slice(0, 7) };
}

async function rejection(promise: Promise<unknown>): Promise<BatchesError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(BatchesError.isInstance(error)).toBe(true);
  return error as BatchesError;
}

function fileAt(repositoryPath: string, commit: string, file: string): string {
  return gitIn(repositoryPath, "show", `${commit}:${file}`);
}

/** `sha subject` of each commit from `base` (exclusive) to `tip`, oldest first. */
function history(repositoryPath: string, base: string, tip: string): string[] {
  const log = gitIn(repositoryPath, "log", "--reverse", "--format=%s", `${base}..${tip}`);
  return log === "" ? [] : log.split("\n");
}

/** What applying checked with git itself: `git check-ref-format refs/heads/BRANCH`, no dash. */
function gitAcceptsBranch(branch: string): boolean {
  if (branch.startsWith("-") || branch.includes("\0")) return false;
  try {
    execFileSync("git", ["check-ref-format", `refs/heads/${branch}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

describe("isBranchGitAccepts", () => {
  it("agrees with git check-ref-format on the branch's ref", () => {
    const pieces = ["a", "b/", "/", ".", "..", ".lock", "@", "@{", "{", "-", " ", "~", "^", ":"];
    const more = ["?", "*", "[", "\\", "\x7f", "\t", "ü", "HEAD", "x.", "//", "lock"];
    const name = fc
      .array(fc.constantFrom(...pieces, ...more), { maxLength: 6 })
      .map((parts) => parts.join(""));
    fc.assert(
      fc.property(name, (branch) => isBranchGitAccepts(branch) === gitAcceptsBranch(branch)),
      { numRuns: 300 },
    );
    for (const branch of ["HEAD", "@", "a@b", "x/@", "", "-x", "a.lock", "batch/update-app"]) {
      expect(isBranchGitAccepts(branch), branch).toBe(gitAcceptsBranch(branch));
    }
  });
});

describe("applyChangeset: creating and re-applying", () => {
  it("creates the branch with one commit of the diff on the base, with the changeset's message and author", async () => {
    const copy = workingCopy();
    const diff = await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" });
    const applied = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(copy.base, diff),
    });

    expect(applied).toMatchObject({ operation: "created", keptCommits: [], pushed: false });
    expect(applied.commit).toBe(applied.createdCommit);
    expect(copy.git("rev-parse", BRANCH)).toBe(applied.commit);
    expect(copy.git("rev-parse", `${BRANCH}^`)).toBe(copy.base);
    expect(fileAt(copy.path, BRANCH, "src/app.txt")).toBe("one\nTWO\nthree");
    expect(copy.git("log", "-1", "--format=%an <%ae>%n%B", BRANCH)).toBe(
      "Batch Bot <bot@example.com>\nUpdate the app\n\nMade by a batch change.",
    );
    // The branch's reflog says who moved it, so a person can find an earlier tip.
    expect(copy.git("reflog", "show", "--format=%gs", BRANCH)).toBe("deckhand: apply changeset");
  });

  it("re-applying a changed diff replaces Deckhand's commit: updated, still one commit on the base", async () => {
    const copy = workingCopy();
    const first = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(
        copy.base,
        await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
      ),
    });
    const second = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(
        copy.base,
        await diffAt(copy.path, copy.base, { "src/app.txt": "one\n2\nthree\n", "new.txt": "n\n" }),
      ),
      previousCommit: first.createdCommit,
    });

    expect(second).toMatchObject({ operation: "updated", keptCommits: [] });
    expect(second.createdCommit).not.toBe(first.createdCommit);
    expect(copy.git("rev-parse", BRANCH)).toBe(second.commit);
    expect(history(copy.path, copy.base, BRANCH)).toEqual(["Update the app"]);
    expect(fileAt(copy.path, BRANCH, "src/app.txt")).toBe("one\n2\nthree");
    expect(fileAt(copy.path, BRANCH, "new.txt")).toBe("n");
  });

  it("re-applying identical input is unchanged and makes no commit", async () => {
    const copy = workingCopy();
    const changeset = changesetOf(
      copy.base,
      await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
    );
    const first = await applyChangeset({ repository: copy.repository, changeset });
    const again = await applyChangeset({
      repository: copy.repository,
      changeset,
      previousCommit: first.createdCommit,
    });

    expect(again).toEqual({
      commit: first.commit,
      createdCommit: first.createdCommit,
      operation: "unchanged",
      keptCommits: [],
      pushed: false,
    });
    expect(copy.git("reflog", "show", "--format=%gs", BRANCH).split("\n")).toHaveLength(1);
  });

  it("a changed message or author on the same diff is a new commit", async () => {
    const copy = workingCopy();
    const diff = await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" });
    const first = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(copy.base, diff),
    });
    const reworded = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(copy.base, diff, {
        commit_message: "Reworded",
        commit_author: { name: "Someone", email: "someone@example.com" },
      }),
      previousCommit: first.createdCommit,
    });
    expect(reworded.operation).toBe("updated");
    expect(copy.git("log", "-1", "--format=%an %s", BRANCH)).toBe("Someone Reworded");
  });

  it("an apply whose result was not stored is recognised by its tree on the base", async () => {
    const copy = workingCopy();
    const changeset = changesetOf(
      copy.base,
      await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
    );
    const first = await applyChangeset({ repository: copy.repository, changeset });
    const again = await applyChangeset({ repository: copy.repository, changeset });
    expect(again).toMatchObject({ operation: "unchanged", commit: first.commit });
  });

  it("a new base moves Deckhand's commit onto it", async () => {
    const copy = workingCopy();
    const files = { "src/app.txt": "one\nTWO\nthree\n" };
    const first = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(copy.base, await diffAt(copy.path, copy.base, files)),
    });
    writeFileSync(join(copy.path, "README.md"), "# api, moved on\n");
    copy.git("commit", "--quiet", "--all", "-m", "main moves on");
    const newBase = copy.git("rev-parse", "HEAD");
    const moved = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(newBase, await diffAt(copy.path, newBase, files)),
      previousCommit: first.createdCommit,
    });
    expect(moved.operation).toBe("updated");
    expect(copy.git("rev-parse", `${BRANCH}^`)).toBe(newBase);
  });

  it("a binary diff applies", async () => {
    const copy = workingCopy();
    const bytes = Buffer.from([0, 1, 2, 255, 0, 7, 13, 10, 0]);
    const applied = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(
        copy.base,
        await diffAt(copy.path, copy.base, { "assets/logo.bin": bytes }),
      ),
    });
    const blob = copy.git("rev-parse", `${applied.commit}:assets/logo.bin`);
    const written = join(scratch.path, "logo.bin");
    writeFileSync(written, bytes);
    expect(gitIn(scratch.path, "hash-object", written)).toBe(blob);
  });

  it("a deletion and a rename apply", async () => {
    const copy = workingCopy();
    const applied = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(
        copy.base,
        await diffAt(copy.path, copy.base, {
          "README.md": null,
          "src/app.txt": null,
          "lib/app.txt": "one\ntwo\nthree\n",
        }),
      ),
    });
    expect(copy.git("ls-tree", "-r", "--name-only", applied.commit)).toBe("lib/app.txt");
  });

  it("without an author the commit is the repository's configured user's, else Deckhand's", async () => {
    const copy = workingCopy();
    const diff = await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" });
    const saved = { ...process.env };
    try {
      // Neither the machine's nor the person's global git config may decide this test.
      process.env.GIT_CONFIG_GLOBAL = join(scratch.path, "no-global-config");
      process.env.GIT_CONFIG_NOSYSTEM = "1";
      for (const name of Object.keys(process.env)) {
        if (/^GIT_(AUTHOR|COMMITTER)_/.test(name)) delete process.env[name];
      }
      const anonymous = changesetOf(copy.base, diff, {
        commit_message: "Update",
        commit_author: null,
      });
      const deckhand = await applyChangeset({ repository: copy.repository, changeset: anonymous });
      expect(copy.git("log", "-1", "--format=%an <%ae>|%cn <%ce>", deckhand.commit)).toBe(
        "Deckhand <deckhand@localhost>|Deckhand <deckhand@localhost>",
      );

      copy.git("config", "user.name", "Local Person");
      copy.git("config", "user.email", "local@example.com");
      const configured = await applyChangeset({
        repository: copy.repository,
        changeset: anonymous,
        previousCommit: deckhand.createdCommit,
      });
      expect(configured.operation).toBe("updated");
      expect(copy.git("log", "-1", "--format=%an <%ae>|%cn <%ce>", configured.commit)).toBe(
        "Local Person <local@example.com>|Local Person <local@example.com>",
      );
    } finally {
      for (const name of Object.keys(process.env)) {
        if (!(name in saved)) delete process.env[name];
      }
      Object.assign(process.env, saved);
    }
  });

  it("a changeset of another repository, a bad branch name, its own base branch or an unknown base is refused before anything is written", async () => {
    const copy = workingCopy();
    const changeset = changesetOf(
      copy.base,
      await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
    );
    const apply = (overrides: Partial<BatchChangeset>) =>
      rejection(
        applyChangeset({ repository: copy.repository, changeset: { ...changeset, ...overrides } }),
      );
    expect(await apply({ repository: "web" })).toMatchObject({ code: "invalid_changeset" });
    expect(await apply({ branch: "bad..name" })).toMatchObject({ code: "invalid_changeset" });
    expect(await apply({ branch: "main" })).toMatchObject({
      code: "invalid_changeset",
      message: expect.stringContaining("is its base branch"),
    });
    expect(await apply({ base_revision: "0".repeat(40) })).toMatchObject({
      code: "revision_not_found",
    });
    expect(copy.git("for-each-ref", "refs/heads")).not.toContain("bad");
  });

  it("a diff that does not apply to its base is an invalid_changeset error and creates no branch", async () => {
    const copy = workingCopy();
    const diff = await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" });
    writeFileSync(join(copy.path, "src/app.txt"), "something else\n");
    copy.git("commit", "--quiet", "--all", "-m", "rewrite");
    const error = await rejection(
      applyChangeset({
        repository: copy.repository,
        changeset: changesetOf(copy.git("rev-parse", "HEAD"), diff),
      }),
    );
    expect(error.code).toBe("invalid_changeset");
    expect(error.message).toContain("does not apply to its base");
    expect(copy.git("branch", "--list", BRANCH)).toBe("");
  });
});

/** Every file of the working copy (content and modification time), its index and HEAD. */
function snapshot(path: string): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const entry of readdirSync(path, { recursive: true, withFileTypes: true })) {
    const file = join(entry.parentPath, entry.name);
    const relative = file.slice(path.length + 1);
    if (!entry.isFile() || relative.startsWith(".git/")) continue;
    entries[relative] = `${statSync(file).mtimeMs} ${readFileSync(file).toString("base64")}`;
  }
  for (const file of [".git/index", ".git/HEAD"]) {
    entries[file] = readFileSync(join(path, file)).toString("base64");
  }
  return entries;
}

describe("applyChangeset: a person's work", () => {
  it("leaves the working copy byte-for-byte alone: its branch, index, changes and untracked files", async () => {
    const copy = workingCopy();
    const first = changesetOf(
      copy.base,
      await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
    );
    const second = changesetOf(
      copy.base,
      await diffAt(copy.path, copy.base, { "src/app.txt": "one\n2\nthree\n" }),
    );
    copy.git("switch", "--quiet", "-c", "wip");
    writeFileSync(join(copy.path, "README.md"), "# api, staged\n");
    copy.git("add", "README.md");
    writeFileSync(join(copy.path, "src/app.txt"), "unstaged\n");
    writeFileSync(join(copy.path, "untracked.txt"), "mine\n");
    const before = snapshot(copy.path);

    const created = await applyChangeset({ repository: copy.repository, changeset: first });
    expect(snapshot(copy.path)).toEqual(before);
    personCommits(copy.path, BRANCH, { "notes.txt": "note\n" }, "Add notes");
    // A re-apply replays the person's commit in a temporary worktree of its own.
    await applyChangeset({
      repository: copy.repository,
      changeset: second,
      previousCommit: created.createdCommit,
    });

    expect(snapshot(copy.path)).toEqual(before);
    expect(copy.git("worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(1);
    expect(copy.git("status", "--porcelain")).toBe(
      ["M  README.md", " M src/app.txt", "?? untracked.txt"].join("\n"),
    );
  });

  it("a person's commit on top is kept when rebasing, with its author and message", async () => {
    const copy = workingCopy();
    const first = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(
        copy.base,
        await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
      ),
    });
    const person = personCommits(copy.path, BRANCH, { "notes.txt": "note\n" }, "Add notes");

    const second = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(
        copy.base,
        await diffAt(copy.path, copy.base, { "src/app.txt": "one\n2\nthree\n" }),
      ),
      previousCommit: first.createdCommit,
    });

    expect(second.operation).toBe("updated");
    expect(second.keptCommits).toHaveLength(1);
    expect(second.commit).toBe(second.keptCommits[0]);
    expect(second.keptCommits[0]).not.toBe(person.sha);
    expect(copy.git("rev-parse", BRANCH)).toBe(second.commit);
    expect(copy.git("rev-parse", `${second.commit}^`)).toBe(second.createdCommit);
    expect(copy.git("rev-parse", `${second.createdCommit}^`)).toBe(copy.base);
    expect(copy.git("log", "-1", "--format=%an %s", second.commit)).toBe("Test Add notes");
    expect(fileAt(copy.path, BRANCH, "notes.txt")).toBe("note");
    expect(fileAt(copy.path, BRANCH, "src/app.txt")).toBe("one\n2\nthree");

    // Stored and passed back, the new commit is Deckhand's again, and the person's is still kept.
    const third = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(
        copy.base,
        await diffAt(copy.path, copy.base, { "src/app.txt": "one\nzwei\nthree\n" }),
      ),
      previousCommit: second.createdCommit,
    });
    expect(history(copy.path, copy.base, BRANCH)).toEqual(["Update the app", "Add notes"]);
    expect(third.keptCommits).toHaveLength(1);
  });

  it("a person's commit on top stays as it is when the changeset did not change", async () => {
    const copy = workingCopy();
    const changeset = changesetOf(
      copy.base,
      await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
    );
    const first = await applyChangeset({ repository: copy.repository, changeset });
    const person = personCommits(copy.path, BRANCH, { "notes.txt": "note\n" }, "Add notes");
    for (const onConflict of ["refuse", "rebase"] as const) {
      const again = await applyChangeset({
        repository: copy.repository,
        changeset,
        previousCommit: first.createdCommit,
        onConflict,
      });
      expect(again).toMatchObject({
        operation: "unchanged",
        commit: person.sha,
        createdCommit: first.createdCommit,
        keptCommits: [person.sha],
      });
    }
  });

  it("with onConflict refuse, a person's commit on top is refused by its short sha and subject, and the branch stays", async () => {
    const copy = workingCopy();
    const first = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(
        copy.base,
        await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
      ),
    });
    const person = personCommits(copy.path, BRANCH, { "notes.txt": "note\n" }, "Add notes");
    const error = await rejection(
      applyChangeset({
        repository: copy.repository,
        changeset: changesetOf(
          copy.base,
          await diffAt(copy.path, copy.base, { "src/app.txt": "one\n2\nthree\n" }),
        ),
        previousCommit: first.createdCommit,
        onConflict: "refuse",
      }),
    );
    expect(error.code).toBe("branch_diverged");
    expect(error.message).toContain(`${person.short} "Add notes"`);
    expect(error.message).toContain(`branch ${BRANCH} of api`);
    expect(error.message).toContain("apply again with rebase");
    expect(copy.git("rev-parse", BRANCH)).toBe(person.sha);
  });

  it("a person's commit that conflicts with the new diff is refused by its sha, subject and file, and nothing is left behind", async () => {
    const copy = workingCopy();
    const first = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(
        copy.base,
        await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
      ),
    });
    const person = personCommits(
      copy.path,
      BRANCH,
      { "src/app.txt": "one\nTWO, said a person\nthree\n" },
      "Fix the second line",
    );
    const error = await rejection(
      applyChangeset({
        repository: copy.repository,
        changeset: changesetOf(
          copy.base,
          await diffAt(copy.path, copy.base, { "src/app.txt": "one\n2\nthree\n" }),
        ),
        previousCommit: first.createdCommit,
      }),
    );
    expect(error.code).toBe("branch_diverged");
    expect(error.message).toContain(`${person.short} "Fix the second line"`);
    expect(error.message).toContain("conflicts in src/app.txt");
    expect(error.message).toContain("git rebase --onto");
    expect(copy.git("rev-parse", BRANCH)).toBe(person.sha);
    expect(copy.git("worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(1);
  });

  it("a branch of the same name that Deckhand did not make is refused, naming the branch and its tip", async () => {
    const copy = workingCopy();
    copy.git("branch", BRANCH);
    const theirs = personCommits(copy.path, BRANCH, { "theirs.txt": "x\n" }, "Their work");
    const changeset = changesetOf(
      copy.base,
      await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
    );
    const unknown = await rejection(applyChangeset({ repository: copy.repository, changeset }));
    expect(unknown.code).toBe("branch_exists");
    expect(unknown.message).toContain(`branch ${BRANCH} already exists in api at ${theirs.short}`);

    // A stored commit that is not on the branch does not make the branch Deckhand's either.
    const elsewhere = await applyChangeset({
      repository: copy.repository,
      changeset: { ...changeset, branch: "batch/other" },
    });
    const unrelated = await rejection(
      applyChangeset({
        repository: copy.repository,
        changeset,
        previousCommit: elsewhere.createdCommit,
      }),
    );
    expect(unrelated.code).toBe("branch_exists");
    expect(unrelated.message).toContain(elsewhere.createdCommit.slice(0, 7));
    expect(copy.git("rev-parse", BRANCH)).toBe(theirs.sha);
  });

  it("a branch that points into the base's history is moved forward onto Deckhand's commit", async () => {
    const copy = workingCopy();
    copy.git("branch", BRANCH, copy.base);
    const applied = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(
        copy.base,
        await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
      ),
    });
    expect(applied.operation).toBe("updated");
    expect(copy.git("rev-parse", `${BRANCH}^`)).toBe(copy.base);
  });

  it("a branch checked out in the working copy or one of its worktrees is refused when it would move", async () => {
    const copy = workingCopy();
    const changeset = changesetOf(
      copy.base,
      await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
    );
    const first = await applyChangeset({ repository: copy.repository, changeset });
    const changed = changesetOf(
      copy.base,
      await diffAt(copy.path, copy.base, { "src/app.txt": "one\n2\nthree\n" }),
    );

    copy.git("switch", "--quiet", BRANCH);
    const here = await rejection(
      applyChangeset({
        repository: copy.repository,
        changeset: changed,
        previousCommit: first.createdCommit,
      }),
    );
    expect(here.code).toBe("branch_checked_out");
    expect(here.message).toContain(`branch ${BRANCH} of api is checked out in ${copy.path}`);
    // Nothing to move: a checked-out branch that is already right is fine.
    const unchanged = await applyChangeset({
      repository: copy.repository,
      changeset,
      previousCommit: first.createdCommit,
    });
    expect(unchanged.operation).toBe("unchanged");

    copy.git("switch", "--quiet", "main");
    const worktree = join(scratch.path, "elsewhere");
    copy.git("worktree", "add", "--quiet", worktree, BRANCH);
    const there = await rejection(
      applyChangeset({
        repository: copy.repository,
        changeset: changed,
        previousCommit: first.createdCommit,
      }),
    );
    expect(there.code).toBe("branch_checked_out");
    expect(there.message).toContain(worktree);
    expect(copy.git("rev-parse", BRANCH)).toBe(first.commit);
  });
});

describe("applyChangeset: pushing", () => {
  /** A bare repository to push to, and `copy` with it as origin. */
  function withOrigin(copy: WorkingCopy): string {
    const origin = join(scratch.path, "origin.git");
    gitIn(scratch.path, "clone", "--quiet", "--bare", copy.path, origin);
    copy.git("remote", "add", "origin", origin);
    return origin;
  }

  /** Someone else clones `origin`, commits on `branch` and pushes. */
  function someonePushes(origin: string, branch: string, files: Files, message: string) {
    const clone = fresh("someone");
    gitIn(scratch.path, "clone", "--quiet", "--branch", branch, origin, clone);
    writeFiles(clone, files);
    gitIn(clone, "add", "--all");
    gitIn(clone, "commit", "--quiet", "-m", message);
    gitIn(clone, "push", "--quiet", "origin", branch);
    const sha = gitIn(clone, "rev-parse", "HEAD");
    return { sha, short: sha.slice(0, 7) };
  }

  function remoteBranch(origin: string, branch: string): string {
    return gitIn(origin, "for-each-ref", "--format=%(objectname)", `refs/heads/${branch}`);
  }

  it("a working copy is pushed to its bare origin only when asked, and a commit someone else pushed is never overwritten", async () => {
    const copy = workingCopy();
    const origin = withOrigin(copy);
    const first = changesetOf(
      copy.base,
      await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
    );
    const notPushed = await applyChangeset({ repository: copy.repository, changeset: first });
    expect(notPushed.pushed).toBe(false);
    expect(remoteBranch(origin, BRANCH)).toBe("");

    const pushed = await applyChangeset({
      repository: copy.repository,
      changeset: first,
      previousCommit: notPushed.createdCommit,
      push: true,
    });
    expect(pushed).toMatchObject({ operation: "unchanged", pushed: true });
    expect(remoteBranch(origin, BRANCH)).toBe(pushed.commit);

    const someone = someonePushes(origin, BRANCH, { "notes.txt": "note\n" }, "Add notes upstream");
    const changed: ApplyChangesetOptions = {
      repository: copy.repository,
      changeset: changesetOf(
        copy.base,
        await diffAt(copy.path, copy.base, { "src/app.txt": "one\n2\nthree\n" }),
      ),
      previousCommit: pushed.createdCommit,
      push: true,
    };
    const refused = await rejection(applyChangeset({ ...changed, onConflict: "refuse" }));
    expect(refused.code).toBe("branch_diverged");
    expect(refused.message).toContain(`${someone.short} "Add notes upstream"`);
    expect(remoteBranch(origin, BRANCH)).toBe(someone.sha);
    expect(copy.git("rev-parse", BRANCH)).toBe(pushed.commit);

    const rebased = await applyChangeset(changed);
    expect(rebased).toMatchObject({ operation: "updated", pushed: true });
    expect(remoteBranch(origin, BRANCH)).toBe(rebased.commit);
    expect(copy.git("rev-parse", BRANCH)).toBe(rebased.commit);
    expect(history(copy.path, copy.base, rebased.commit)).toEqual([
      "Update the app",
      "Add notes upstream",
    ]);
    expect(fileAt(copy.path, rebased.commit, "notes.txt")).toBe("note");
  });

  it("a URL host's mirror pushes to its URL by default, and a stale mirror still sees what someone pushed", async () => {
    const upstream = repositoryAt(join(scratch.path, "upstream"), {
      "src/app.txt": "one\ntwo\nthree\n",
    });
    const origin = join(scratch.path, "origin.git");
    gitIn(scratch.path, "clone", "--quiet", "--bare", upstream.path, origin);
    const load = async (refresh: boolean) => {
      const [repository] = await loadRepositories({
        codeHosts: [{ type: "git", url: `file://${origin}`, name: "api" }],
        cacheDirectory: join(scratch.path, "cache"),
        refresh,
      });
      return repository!;
    };
    const repository = await load(true);
    const base = gitIn(repository.path, "rev-parse", "main");
    const created = await applyChangeset({
      repository,
      changeset: changesetOf(
        base,
        await diffAt(origin, base, { "src/app.txt": "one\nTWO\nthree\n" }),
      ),
    });
    expect(created).toMatchObject({ operation: "created", pushed: true });
    expect(remoteBranch(origin, BRANCH)).toBe(created.commit);
    expect(remoteBranch(repository.path, BRANCH)).toBe(created.commit);

    const someone = someonePushes(origin, BRANCH, { "notes.txt": "note\n" }, "Add notes upstream");
    const stale = await load(false);
    expect(remoteBranch(stale.path, BRANCH)).toBe(created.commit);
    const changed: ApplyChangesetOptions = {
      repository: stale,
      changeset: changesetOf(
        base,
        await diffAt(origin, base, { "src/app.txt": "one\n2\nthree\n" }),
      ),
      previousCommit: created.createdCommit,
    };
    const refused = await rejection(applyChangeset({ ...changed, onConflict: "refuse" }));
    expect(refused.message).toContain(`${someone.short} "Add notes upstream"`);
    expect(remoteBranch(origin, BRANCH)).toBe(someone.sha);

    const rebased = await applyChangeset(changed);
    expect(rebased.keptCommits).toHaveLength(1);
    expect(remoteBranch(origin, BRANCH)).toBe(rebased.commit);
    expect(history(origin, base, BRANCH)).toEqual(["Update the app", "Add notes upstream"]);
    // Only the branch was pushed, not the mirror's every ref, and no temporary ref is left.
    expect(gitIn(repository.path, "for-each-ref", "--format=%(refname)", "refs/deckhand")).toBe("");
  });

  it("a working copy's branch and origin's that went different ways are refused, naming both tips", async () => {
    const copy = workingCopy();
    const origin = withOrigin(copy);
    const changeset = changesetOf(
      copy.base,
      await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
    );
    const applied = await applyChangeset({
      repository: copy.repository,
      changeset,
      push: true,
    });
    const local = personCommits(copy.path, BRANCH, { "here.txt": "here\n" }, "Local work");
    const remote = someonePushes(origin, BRANCH, { "there.txt": "there\n" }, "Remote work");
    const error = await rejection(
      applyChangeset({
        repository: copy.repository,
        changeset,
        previousCommit: applied.createdCommit,
        push: true,
      }),
    );
    expect(error.code).toBe("branch_diverged");
    expect(error.message).toContain(`at ${local.short} here and at ${remote.short} on origin`);
    expect(copy.git("rev-parse", BRANCH)).toBe(local.sha);
    expect(remoteBranch(origin, BRANCH)).toBe(remote.sha);
  });

  it("a commit pushed to the remote branch while Deckhand applies is not overwritten: the push is refused and the branch goes back", async () => {
    const copy = workingCopy();
    const origin = withOrigin(copy);
    const applied = await applyChangeset({
      repository: copy.repository,
      changeset: changesetOf(
        copy.base,
        await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
      ),
      push: true,
    });
    // Someone's commit is on the remote, not yet on the branch: it gets there right after
    // Deckhand has read the remote branch, before it pushes.
    gitIn(origin, "branch", "side", BRANCH);
    const someone = someonePushes(origin, "side", { "notes.txt": "note\n" }, "Pushed meanwhile");
    const script = join(scratch.path, "upload-pack-then-push.sh");
    writeFileSync(
      script,
      [
        "#!/bin/sh",
        'git upload-pack "$@"',
        "status=$?",
        `if [ ! -e '${scratch.path}/moved' ]; then`,
        `  touch '${scratch.path}/moved'`,
        `  git --git-dir='${origin}' update-ref refs/heads/${BRANCH} ${someone.sha}`,
        "fi",
        "exit $status",
        "",
      ].join("\n"),
      { mode: 0o755 },
    );
    copy.git("config", "remote.origin.uploadpack", script);

    const changed: ApplyChangesetOptions = {
      repository: copy.repository,
      changeset: changesetOf(
        copy.base,
        await diffAt(copy.path, copy.base, { "src/app.txt": "one\n2\nthree\n" }),
      ),
      previousCommit: applied.createdCommit,
      push: true,
    };
    const error = await rejection(applyChangeset(changed));
    expect(error.code).toBe("push_failed");
    expect(error.message).toContain("someone pushed to the branch while Deckhand was applying");
    expect(remoteBranch(origin, BRANCH)).toBe(someone.sha);
    expect(copy.git("rev-parse", BRANCH)).toBe(applied.commit);

    const again = await applyChangeset(changed);
    expect(again.keptCommits).toHaveLength(1);
    expect(history(copy.path, copy.base, remoteBranch(origin, BRANCH))).toEqual([
      "Update the app",
      "Pushed meanwhile",
    ]);
  });

  it("a push that fails leaves the branch where it was", async () => {
    const copy = workingCopy();
    const origin = withOrigin(copy);
    writeFileSync(
      join(origin, "hooks/pre-receive"),
      "#!/bin/sh\necho 'rejected by policy' >&2\nexit 1\n",
      {
        mode: 0o755,
      },
    );
    const first = changesetOf(
      copy.base,
      await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
    );
    const created = await rejection(
      applyChangeset({ repository: copy.repository, changeset: first, push: true }),
    );
    expect(created.code).toBe("push_failed");
    expect(created.message).toContain("rejected by policy");
    expect(copy.git("branch", "--list", BRANCH)).toBe("");

    const applied = await applyChangeset({ repository: copy.repository, changeset: first });
    const updated = await rejection(
      applyChangeset({
        repository: copy.repository,
        changeset: changesetOf(
          copy.base,
          await diffAt(copy.path, copy.base, { "src/app.txt": "one\n2\nthree\n" }),
        ),
        previousCommit: applied.createdCommit,
        push: true,
      }),
    );
    expect(updated.code).toBe("push_failed");
    expect(copy.git("rev-parse", BRANCH)).toBe(applied.commit);
    expect(remoteBranch(origin, BRANCH)).toBe("");
  });

  it("a remote that cannot be reached is a push_failed error showing origin's URL without its password", async () => {
    const copy = workingCopy();
    copy.git("remote", "add", "origin", "https://someone:s3cret-token@127.0.0.1:1/acme/api.git");
    const error = await rejection(
      applyChangeset({
        repository: copy.repository,
        changeset: changesetOf(
          copy.base,
          await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
        ),
        push: true,
      }),
    );
    expect(error.code).toBe("push_failed");
    expect(error.message).toContain("https://someone@127.0.0.1:1/acme/api.git");
    expect(inspect(error, { depth: 10 })).not.toContain("s3cret-token");
    expect(copy.git("branch", "--list", BRANCH)).toBe("");
  });

  it("asking to push a working copy without an origin is refused before anything changes", async () => {
    const copy = workingCopy();
    const error = await rejection(
      applyChangeset({
        repository: copy.repository,
        changeset: changesetOf(
          copy.base,
          await diffAt(copy.path, copy.base, { "src/app.txt": "one\nTWO\nthree\n" }),
        ),
        push: true,
      }),
    );
    expect(error.code).toBe("push_failed");
    expect(error.message).toContain("has no origin remote");
    expect(copy.git("branch", "--list", BRANCH)).toBe("");
  });
});
