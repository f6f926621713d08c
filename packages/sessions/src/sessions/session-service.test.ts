// The session service's options for callers in this process (taking over a batch workspace): a
// project found by where its repository is, a session started at a given commit with changes
// committed first, and the work on a session's branch read back as one diff. PGlite, real git.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDb, type DbHandle } from "@deckhand/db";
import {
  createTempRepository,
  gitIn,
  startFakeCodeHost,
  type TempRepository,
} from "@deckhand/testkit";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createSessionDomain, type SessionDomain } from "../session-domain.ts";
import { SessionsError } from "../sessions-error.ts";
import { SessionStore } from "../store/session-store.ts";

let database: DbHandle;
let scratch: string;
let repository: TempRepository;
let service: SessionDomain;

// One database for the file (each test has its own repository): PGlite takes seconds to start.
beforeAll(async () => {
  database = await createDb({ dataDir: "memory://" });
});

afterAll(async () => {
  await database.close();
});

beforeEach(() => {
  scratch = mkdtempSync(join(tmpdir(), "deckhand-sessions-"));
  repository = createTempRepository({ "README.md": "# demo\n", "src/app.txt": "one\n" });
  service = createSessionDomain({
    database,
    projectsDir: join(scratch, "projects"),
    worktreesDir: join(scratch, "worktrees"),
  });
});

afterEach(() => {
  repository.remove();
  rmSync(scratch, { recursive: true, force: true });
});

/** A change to README.md made the way a batch workspace's diff is, against `base`. */
function readmeDiff(base: string, text: string): string {
  const work = mkdtempSync(join(tmpdir(), "deckhand-sessions-diff-"));
  try {
    gitIn(repository.path, "worktree", "add", "--quiet", "--detach", work, base);
    writeFileSync(join(work, "README.md"), text);
    gitIn(work, "add", "-A");
    return `${gitIn(work, "diff", "--cached", "--binary", "--full-index", base)}\n`;
  } finally {
    gitIn(repository.path, "worktree", "remove", "--force", work);
  }
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(SessionsError.isInstance(error), String(error)).toBe(true);
  return (error as SessionsError).code;
}

describe("ProjectService.forRepository", () => {
  it("finds a working copy's project by its top-level directory, or creates one", async () => {
    const created = await service.projects.forRepository({ repository_path: repository.path });
    expect(created.repository_path).toBe(repository.git("rev-parse", "--show-toplevel"));
    mkdirSync(join(repository.path, "src", "deep"), { recursive: true });
    const again = await service.projects.forRepository({
      repository_path: join(repository.path, "src"),
      default_branch: "main",
    });
    expect(again.id).toBe(created.id);
    const projects = await service.projects.list();
    expect(
      projects.filter((project) => project.repository_path === created.repository_path),
    ).toHaveLength(1);
  });

  it("prefers default_branch when creating, and falls back to the checked-out branch", async () => {
    repository.git("branch", "release");
    const release = await service.projects.forRepository({
      repository_path: repository.path,
      default_branch: "release",
    });
    expect(release.default_branch).toBe("release");

    const other = createTempRepository();
    try {
      const fallback = await service.projects.forRepository({
        repository_path: other.path,
        default_branch: "origin-only",
      });
      expect(fallback.default_branch).toBe("main");
      // createProject itself still refuses a branch the repository lacks.
      expect(
        await codeOf(
          service.projects.create({ repository_path: other.path, default_branch: "origin-only" }),
        ),
      ).toBe("invalid_request");
    } finally {
      other.remove();
    }
  });

  it("finds a cloned project by its URL and clones once", async () => {
    const url = `file://${repository.path}`;
    const first = await service.projects.forRepository({ repository_url: url });
    const second = await service.projects.forRepository({ repository_url: url });
    expect(second.id).toBe(first.id);
    expect(first.repository_path).toContain(join(scratch, "projects"));
    expect(readFileSync(join(first.repository_path!, "README.md"), "utf8")).toBe("# demo\n");
  });
});

describe("ProjectService.branches", () => {
  it("lists what a session can start from: the default first, origin's branches of a clone too, no session branches", async () => {
    repository.git("branch", "release");
    repository.git("branch", "deckhand/abc12345");
    const project = await service.projects.create({ repository_path: repository.path });
    const listed = await service.projects.branches(project.id);
    expect(listed.default_branch).toBe(project.default_branch);
    expect(listed.branches).toEqual([project.default_branch, "release"]);
    const cloned = await service.projects.create({ repository_url: `file://${repository.path}` });
    expect((await service.projects.branches(cloned.id)).branches).toEqual([
      project.default_branch,
      "release",
    ]);
  });
});

describe("the session domain with a code host's credentials", () => {
  it("clones a URL with its connection's credentials, given per command and never written to the clone", async () => {
    const host = await startFakeCodeHost({ type: "github" });
    try {
      host.createRepository("acme/private", { files: { "README.md": "# private\n" } });
      const url = host.cloneUrl("acme/private");
      // Without them the host refuses (git asks for a user name it cannot read).
      expect(await codeOf(service.projects.forRepository({ repository_url: url }))).toBe(
        "invalid_request",
      );
      const header = `Authorization: Basic ${Buffer.from(`x-access-token:${host.token}`).toString("base64")}`;
      const withCredentials = createSessionDomain({
        database,
        projectsDir: join(scratch, "projects"),
        worktreesDir: join(scratch, "worktrees"),
        gitEnvironment: (candidate) =>
          candidate === url
            ? {
                GIT_CONFIG_COUNT: "1",
                GIT_CONFIG_KEY_0: `http.${url}.extraHeader`,
                GIT_CONFIG_VALUE_0: header,
              }
            : undefined,
      });
      const project = await withCredentials.projects.forRepository({ repository_url: url });
      const clone = project.repository_path!;
      expect(readFileSync(join(clone, "README.md"), "utf8")).toBe("# private\n");
      const config = readFileSync(join(clone, ".git", "config"), "utf8");
      expect(config).not.toContain(host.token);
      expect(config).not.toContain("extraHeader");
      // A commit pushed later is fetched the same way when a session starts from it.
      const session = await withCredentials.sessions.create(project.id, {});
      expect(session.worktree_path).not.toBeNull();
    } finally {
      await host.close();
    }
  });
});

describe("SessionService.create with options", () => {
  it("opens the session on its context: a system message first in its chat, given to each agent's first prompt", async () => {
    const project = await service.projects.create({ repository_path: repository.path });
    const session = await service.sessions.create(
      project.id,
      {},
      { context: "Step 0 `make` failed" },
    );
    const [chat] = await service.chats.list(session.id);
    const [note] = await service.messages.list(chat!.id);
    expect(note).toMatchObject({ role: "system", agent: null, status: "complete" });
    expect(note!.parts[0]).toMatchObject({
      kind: "text",
      content: { text: "Step 0 `make` failed" },
    });
    const first = await service.messages.create(chat!.id, { agent: "deckhand", text: "fix it" });
    expect(await new SessionStore(database.db).messages.contextFor(first.message.id)).toBe(
      "Step 0 `make` failed",
    );
    // Told once: the agent's next message goes as written.
    const second = await service.messages.create(chat!.id, { agent: "deckhand", text: "and now?" });
    expect(await new SessionStore(database.db).messages.contextFor(second.message.id)).toBe("");
  });

  it("starts at a given commit with the changes committed first, by Deckhand", async () => {
    const base = repository.git("rev-parse", "HEAD");
    writeFileSync(join(repository.path, "later.txt"), "later\n");
    repository.git("add", "-A");
    repository.git("commit", "--quiet", "-m", "later");
    const project = await service.projects.create({ repository_path: repository.path });
    const session = await service.sessions.create(
      project.id,
      { title: "taken over" },
      {
        baseCommit: base.slice(0, 12),
        initialCommit: { diff: readmeDiff(base, "# changed\n"), message: "the result" },
      },
    );
    expect(session.base_commit).toBe(base);
    const worktree = session.worktree_path!;
    expect(readFileSync(join(worktree, "README.md"), "utf8")).toBe("# changed\n");
    expect(existsSync(join(worktree, "later.txt"))).toBe(false);
    expect(gitIn(worktree, "status", "--porcelain")).toBe("");
    expect(gitIn(worktree, "rev-parse", "HEAD^")).toBe(base);
    expect(gitIn(worktree, "log", "-1", "--format=%an <%ae>|%s")).toBe(
      "Deckhand <deckhand@localhost>|the result",
    );
    expect(gitIn(worktree, "symbolic-ref", "--short", "HEAD")).toBe(session.branch);
  });

  it("commits nothing for an empty diff", async () => {
    const base = repository.git("rev-parse", "HEAD");
    const project = await service.projects.create({ repository_path: repository.path });
    const session = await service.sessions.create(
      project.id,
      {},
      { baseCommit: base, initialCommit: { diff: "", message: "nothing" } },
    );
    expect(gitIn(session.worktree_path!, "rev-parse", "HEAD")).toBe(base);
  });

  it("refuses a commit the repository lacks, and fetches it into a cloned project", async () => {
    const project = await service.projects.create({ repository_path: repository.path });
    expect(
      await codeOf(service.sessions.create(project.id, {}, { baseCommit: "f".repeat(40) })),
    ).toBe("conflict");

    const cloned = await service.projects.create({ repository_url: `file://${repository.path}` });
    writeFileSync(join(repository.path, "pushed.txt"), "pushed later\n");
    repository.git("add", "-A");
    repository.git("commit", "--quiet", "-m", "pushed later");
    const pushed = repository.git("rev-parse", "HEAD");
    const session = await service.sessions.create(cloned.id, {}, { baseCommit: pushed });
    expect(session.base_commit).toBe(pushed);
    expect(readFileSync(join(session.worktree_path!, "pushed.txt"), "utf8")).toBe("pushed later\n");
  });

  it("removes the worktree and the branch again when the changes do not apply", async () => {
    const base = repository.git("rev-parse", "HEAD");
    const diff = readmeDiff(base, "# changed\n").replace("-# demo", "-# something else");
    const project = await service.projects.create({ repository_path: repository.path });
    expect(
      await codeOf(
        service.sessions.create(
          project.id,
          { branch: "taken/over" },
          { baseCommit: base, initialCommit: { diff, message: "broken" } },
        ),
      ),
    ).toBe("git_failed");
    expect(repository.git("branch", "--list", "taken/over")).toBe("");
    expect(repository.git("worktree", "list", "--porcelain")).not.toContain(scratch);
  });
});

describe("SessionService.work", () => {
  it("is every commit since the base as one diff, kept after the session is closed", async () => {
    const base = repository.git("rev-parse", "HEAD");
    const project = await service.projects.create({ repository_path: repository.path });
    const plain = await service.sessions.create(project.id, {});
    expect(await service.sessions.work(plain.id)).toEqual({
      baseCommit: base,
      head: base,
      diff: "",
    });

    const session = await service.sessions.create(
      project.id,
      {},
      { baseCommit: base, initialCommit: { diff: readmeDiff(base, "# changed\n"), message: "r" } },
    );
    const worktree = session.worktree_path!;
    writeFileSync(join(worktree, "src", "app.txt"), "two\n");
    gitIn(worktree, "commit", "--quiet", "-am", "edit");
    // Uncommitted changes are not the session's work.
    writeFileSync(join(worktree, "scratch.txt"), "not applied\n");
    const work = await service.sessions.work(session.id);
    expect(work.baseCommit).toBe(base);
    expect(work.head).toBe(gitIn(worktree, "rev-parse", "HEAD"));
    expect(work.diff).toContain("+# changed");
    expect(work.diff).toContain("+two");
    expect(work.diff).not.toContain("scratch.txt");
    expect(work.diff).toMatch(/^diff --git a\/README\.md b\/README\.md\nindex [0-9a-f]{40}\.\./);

    await service.sessions.close(session.id, true);
    expect((await service.sessions.work(session.id)).diff).toBe(work.diff);
    repository.git("branch", "-D", session.branch);
    expect(await codeOf(service.sessions.work(session.id))).toBe("conflict");
    expect(await codeOf(service.sessions.work(crypto.randomUUID()))).toBe("not_found");
  });
});
