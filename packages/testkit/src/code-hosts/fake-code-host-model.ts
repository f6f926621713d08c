// The in-memory state every fake code host shares (repositories, pull requests, comments,
// reviews, checks), whatever API renders it. Repositories are real bare git repositories, so a
// pull request's head is whatever was really pushed to its branch.
import { mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { runGitSync } from "@deckhand/git";

export type FakeCodeHostType = "github" | "gitlab" | "bitbucket-cloud" | "gitea";

export type FakeChecks = "passing" | "failing" | "pending" | "none";

export type FakeReviewState = "approved" | "changes_requested" | "commented";

export interface FakeReview {
  user: string;
  state: FakeReviewState;
}

export interface FakeComment {
  user: string;
  body: string;
}

export interface FakePullRequest {
  /** Unique across the host (GitHub's id, GitLab's id); `number` is per repository. */
  id: number;
  number: number;
  repository: string;
  title: string;
  body: string;
  head: string;
  base: string;
  state: "open" | "closed" | "merged";
  draft: boolean;
  /** The head commit when last seen; read again from the repository on every answer. */
  headSha: string;
  mergeable: boolean;
  comments: FakeComment[];
  reviews: FakeReview[];
  createdAt: string;
}

export interface FakeRepository {
  /** `owner/name`, or `group/subgroup/name` on GitLab. */
  path: string;
  defaultBranch: string;
  /** The bare repository's directory. */
  gitDirectory: string;
}

const IDENTITY = {
  GIT_AUTHOR_NAME: "Fake Host",
  GIT_AUTHOR_EMAIL: "host@example.com",
  GIT_COMMITTER_NAME: "Fake Host",
  GIT_COMMITTER_EMAIL: "host@example.com",
};

function git(cwd: string, args: string[], input?: string): string {
  return runGitSync(args, {
    cwd,
    environment: IDENTITY,
    allowedExitCodes: [1, 128],
    ...(input === undefined ? {} : { input }),
  }).stdout.trim();
}

export class FakeCodeHostModel {
  readonly repositories = new Map<string, FakeRepository>();
  readonly pullRequests: FakePullRequest[] = [];
  /** Checks by commit SHA. */
  readonly checks = new Map<string, FakeChecks>();
  private nextId = 1000;
  private readonly root: string;

  constructor(root: string) {
    this.root = root;
  }

  /**
   * A bare repository at `<root>/<path>.git` whose default branch has one commit of `files`
   * (made with git's plumbing, no checkout).
   */
  createRepository(
    path: string,
    options: { defaultBranch?: string; files?: Record<string, string> } = {},
  ): FakeRepository {
    const defaultBranch = options.defaultBranch ?? "main";
    const gitDirectory = join(this.root, `${path}.git`);
    mkdirSync(dirname(gitDirectory), { recursive: true });
    runGitSync(["init", "--quiet", "--bare", `--initial-branch=${defaultBranch}`, gitDirectory], {
      cwd: this.root,
    });
    const files = options.files ?? { "README.md": `# ${path}\n` };
    const entries = Object.entries(files).map(([name, content]) => {
      const blob = git(gitDirectory, ["hash-object", "-w", "--stdin"], content);
      return `100644 blob ${blob}\t${name}`;
    });
    const tree = git(gitDirectory, ["mktree"], `${entries.join("\n")}\n`);
    const commit = git(gitDirectory, ["commit-tree", tree, "-m", "initial"]);
    git(gitDirectory, ["update-ref", `refs/heads/${defaultBranch}`, commit]);
    const repository = { path, defaultBranch, gitDirectory };
    this.repositories.set(path, repository);
    return repository;
  }

  /**
   * Commits `files` on top of `branch` (or of the default branch, when `branch` does not exist
   * yet) straight into the bare repository, as a person pushing to the host would; returns the
   * new commit.
   */
  commitToBranch(
    path: string,
    branch: string,
    files: Record<string, string>,
    options: { message?: string; author?: string } = {},
  ): string {
    const repository = this.repositories.get(path);
    if (repository === undefined) throw new Error(`the fake has no repository ${path}`);
    const parent =
      this.branchSha(repository, branch) ?? this.branchSha(repository, repository.defaultBranch);
    if (parent === undefined) throw new Error(`${path} has no commit to build on`);
    const index = join(this.root, `index-${process.pid}-${this.nextId++}`);
    const environment = { ...IDENTITY, GIT_INDEX_FILE: index };
    const run = (args: string[], input?: string) =>
      runGitSync(args, {
        cwd: repository.gitDirectory,
        environment: {
          ...environment,
          ...(options.author === undefined
            ? {}
            : {
                GIT_AUTHOR_NAME: options.author,
                GIT_AUTHOR_EMAIL: `${options.author}@example.com`,
              }),
        },
        ...(input === undefined ? {} : { input }),
      }).stdout.trim();
    run(["read-tree", parent]);
    for (const [name, content] of Object.entries(files)) {
      const blob = run(["hash-object", "-w", "--stdin"], content);
      run(["update-index", "--add", "--cacheinfo", `100644,${blob},${name}`]);
    }
    const tree = run(["write-tree"]);
    const commit = run(["commit-tree", tree, "-p", parent, "-m", options.message ?? "a change"]);
    run(["update-ref", `refs/heads/${branch}`, commit]);
    rmSync(index, { force: true });
    return commit;
  }

  repository(path: string): FakeRepository | undefined {
    return this.repositories.get(path);
  }

  /** The commit a branch points at in the repository, or undefined when it does not exist. */
  branchSha(repository: FakeRepository, branch: string): string | undefined {
    const sha = git(repository.gitDirectory, [
      "rev-parse",
      "--verify",
      "--quiet",
      `refs/heads/${branch}^{commit}`,
    ]);
    return sha === "" ? undefined : sha;
  }

  deleteBranch(repository: FakeRepository, branch: string): boolean {
    if (this.branchSha(repository, branch) === undefined) return false;
    git(repository.gitDirectory, ["update-ref", "-d", `refs/heads/${branch}`]);
    return true;
  }

  /** A pull request with its head read again from the repository. */
  refresh(pull: FakePullRequest): FakePullRequest {
    const repository = this.repositories.get(pull.repository);
    if (repository !== undefined && pull.state === "open") {
      pull.headSha = this.branchSha(repository, pull.head) ?? pull.headSha;
    }
    return pull;
  }

  find(repository: string, number: number): FakePullRequest | undefined {
    const pull = this.pullRequests.find(
      (candidate) => candidate.repository === repository && candidate.number === number,
    );
    return pull === undefined ? undefined : this.refresh(pull);
  }

  /** Pull requests from `head` (into `base` when given), newest first. */
  findByBranches(repository: string, head: string, base?: string): FakePullRequest[] {
    return this.pullRequests
      .filter(
        (pull) =>
          pull.repository === repository &&
          pull.head === head &&
          (base === undefined || pull.base === base),
      )
      .reverse()
      .map((pull) => this.refresh(pull));
  }

  openFor(repository: string, head: string, base: string): FakePullRequest | undefined {
    return this.findByBranches(repository, head, base).find((pull) => pull.state === "open");
  }

  create(fields: {
    repository: string;
    head: string;
    base: string;
    title: string;
    body: string;
    draft: boolean;
    headSha: string;
  }): FakePullRequest {
    const number =
      this.pullRequests.filter((pull) => pull.repository === fields.repository).length + 1;
    this.nextId += 1;
    const pull: FakePullRequest = {
      ...fields,
      id: this.nextId,
      number,
      state: "open",
      mergeable: true,
      comments: [],
      reviews: [],
      createdAt: new Date().toISOString(),
    };
    this.pullRequests.push(pull);
    return pull;
  }

  checksOf(pull: FakePullRequest): FakeChecks {
    return this.checks.get(pull.headSha) ?? "none";
  }
}
