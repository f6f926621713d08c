// Taking a workspace over and the next run taking the session's work, on PGlite with real git.
// The session domain is a stand-in implementing WorkspaceSessions with git worktrees (the real
// one, over @deckhand/sessions, is tested where the server composes it).
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  createDb,
  type DbHandle,
  projects,
  sessions as sessionRows,
  TaskRegistry,
  TaskWorker,
} from "@deckhand/db";
import { gitIn } from "@deckhand/testkit";
import type { BatchRun, BatchRunEvent } from "@deckhand/wire";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type PlacedRepository,
  repositoryAt,
  temporaryDirectory,
  testEnvironment,
} from "../test/support.ts";
import { readRunEvents } from "./batch-run-events.ts";
import { BatchRunService } from "./batch-run-service.ts";
import { BatchesError } from "./batches-error.ts";
import type { CodeHost } from "./code-host-config.ts";
import type {
  OpenWorkspaceSessionRequest,
  WorkspaceSession,
  WorkspaceSessions,
  WorkspaceSessionWork,
} from "./workspace-takeover.ts";

interface FakeSession {
  id: string;
  projectId: string;
  repository: string;
  branch: string;
  base: string;
  worktree: string;
  open: boolean;
  request: OpenWorkspaceSessionRequest;
}

/** Sessions as git worktrees on new branches, with rows where the workspace's key needs them. */
class FakeSessions implements WorkspaceSessions {
  readonly sessions = new Map<string, FakeSession>();
  readonly database: DbHandle;
  readonly directory: string;

  constructor(database: DbHandle, directory: string) {
    this.database = database;
    this.directory = directory;
  }

  async open(request: OpenWorkspaceSessionRequest): Promise<WorkspaceSession> {
    let repository: string;
    if (request.repository.kind === "working_copy") {
      repository = request.repository.path;
    } else {
      repository = join(this.directory, `clone-${crypto.randomUUID()}`);
      gitIn(this.directory, "clone", "--quiet", request.repository.url, repository);
    }
    const [project] = await this.database.db
      .insert(projects)
      .values({ name: request.repositoryName, repositoryPath: repository })
      .returning();
    const branch = `deckhand/${crypto.randomUUID().slice(0, 8)}`;
    const [row] = await this.database.db
      .insert(sessionRows)
      .values({ projectId: project!.id, branch, title: request.title })
      .returning();
    const worktree = join(this.directory, row!.id);
    gitIn(repository, "worktree", "add", "--quiet", "-b", branch, worktree, request.baseRevision);
    if (request.diff !== "") {
      const patch = join(this.directory, `${row!.id}.diff`);
      writeFileSync(patch, request.diff);
      gitIn(worktree, "apply", "--index", "--binary", patch);
      gitIn(worktree, "commit", "--quiet", "-m", request.commitMessage);
    }
    const session: FakeSession = {
      id: row!.id,
      projectId: project!.id,
      repository,
      branch,
      base: request.baseRevision,
      worktree,
      open: true,
      request,
    };
    this.sessions.set(session.id, session);
    return this.view(session);
  }

  async find(sessionId: string): Promise<WorkspaceSession | null> {
    const session = this.sessions.get(sessionId);
    return session ? this.view(session) : null;
  }

  async work(sessionId: string): Promise<WorkspaceSessionWork> {
    const session = this.sessions.get(sessionId);
    if (!session) throw new Error(`no session ${sessionId}`);
    const head = gitIn(session.repository, "rev-parse", "--verify", `refs/heads/${session.branch}`);
    const diff = gitIn(session.repository, "diff", "--binary", "--full-index", session.base, head);
    return {
      branch: session.branch,
      baseRevision: session.base,
      head,
      diff: diff === "" ? "" : `${diff}\n`,
    };
  }

  async discard(sessionId: string): Promise<void> {
    const session = this.sessions.get(sessionId);
    if (session) session.open = false;
  }

  /** What a person does in the session: edit a file and apply (commit) it. */
  apply(sessionId: string, path: string, content: string): void {
    const session = this.sessions.get(sessionId)!;
    writeFileSync(join(session.worktree, path), content);
    gitIn(session.worktree, "add", "-A");
    gitIn(session.worktree, "commit", "--quiet", "-m", `edit ${path}`);
  }

  view(session: FakeSession): WorkspaceSession {
    return {
      sessionId: session.id,
      projectId: session.projectId,
      open: session.open,
      worktreePath: session.open ? session.worktree : null,
    };
  }
}

let database: DbHandle;
let scratch: ReturnType<typeof temporaryDirectory>;
let root: string;
let api: PlacedRepository;
let sessions: FakeSessions;
let service: BatchRunService;
let worker: TaskWorker | null;
let specName: string;

// One database for the file: PGlite takes seconds to start. Each test has its own repositories
// and its own spec name, which is what a takeover is found by.
beforeAll(async () => {
  database = await createDb({ dataDir: "memory://" });
});
afterAll(async () => {
  await database.close();
});

beforeEach(() => {
  scratch = temporaryDirectory();
  root = join(scratch.path, "code");
  api = repositoryAt(join(root, "github.com/acme/api"), {
    "README.md": "# api\n",
    "src/app.txt": "one\ntwo\nthree\n",
  });
  sessions = new FakeSessions(database, mkdtempSync(join(scratch.path, "sessions-")));
  service = serviceWith(sessions);
  worker = null;
  specName = `takeover-${crypto.randomUUID().slice(0, 8)}`;
});

afterEach(async () => {
  await worker?.stop();
  scratch.remove();
});

function serviceWith(
  withSessions: WorkspaceSessions | undefined,
  codeHosts: CodeHost[] = [{ type: "directory", path: root }],
): BatchRunService {
  return new BatchRunService({
    database,
    codeHosts: () => codeHosts,
    ...(withSessions ? { sessions: withSessions } : {}),
    environment: testEnvironment(scratch.path, {
      outerEnvironment: { PATH: process.env.PATH },
    }),
  });
}

function startWorker(): void {
  const registry = new TaskRegistry();
  service.register(registry);
  worker = new TaskWorker({ database, registry, concurrency: 1, pollIntervalMs: 50 });
  void worker.start();
}

const spec = (name = specName, on = "  - repository: github.com/acme/api", extra = "") => `
name: ${name}
on:
${on}
${extra}
steps:
  - run: echo "from the step" >> README.md && printf step-said
    container: alpine:3
    outputs:
      said:
        value: \${{ step.stdout }}
changesetTemplate:
  title: Greet (\${{ outputs.said }})
  body: \${{ join steps.modified_files ", " }}
  branch: greet
  commit:
    message: greet
`;

async function finished(runId: string): Promise<BatchRun> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const run = await service.getRun(runId);
    if (run.status !== "queued" && run.status !== "running") return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 50));
  }
}

async function preview(name = specName, on?: string, extra?: string): Promise<BatchRun> {
  return finished(
    (await service.createRun({ source: spec(name, on, extra), options: { runtime: "local" } })).id,
  );
}

async function onlyWorkspace(runId: string) {
  const listed = await service.listWorkspaces(runId);
  expect(listed).toHaveLength(1);
  return listed[0]!;
}

async function eventsOf(runId: string): Promise<BatchRunEvent[]> {
  return (await readRunEvents(database.db, runId, 0)).map((stored) => stored.event);
}

async function rejection(promise: Promise<unknown>): Promise<BatchesError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(BatchesError.isInstance(error), String(error)).toBe(true);
  return error as BatchesError;
}

describe("taking a workspace over", () => {
  it("opens a session at the workspace's revision with its result committed, and answers it again while it is open", async () => {
    startWorker();
    const run = await preview();
    const workspace = await onlyWorkspace(run.id);
    const taken = await service.takeOverWorkspace(workspace.id);
    const session = sessions.sessions.get(taken.session_id)!;
    expect(taken).toEqual({
      workspace_id: workspace.id,
      session_id: session.id,
      project_id: session.projectId,
      worktree_path: session.worktree,
    });
    expect(session.request).toMatchObject({
      repository: { kind: "working_copy", path: api.path },
      repositoryName: "github.com/acme/api",
      branch: "main",
      baseRevision: api.git("rev-parse", "main"),
      title: `${specName}: github.com/acme/api`,
    });
    expect(session.request.commitMessage).toContain(workspace.id);
    // The session opens on what the workspace ran and changed, steps numbered as the API does.
    const context = session.request.context;
    expect(context).toContain(`Taken over from the batch change **${specName}**`);
    expect(context).toContain(
      '- Step 0: `echo "from the step" >> README.md && printf step-said` — run',
    );
    expect(context).toContain("```diff");
    expect(context).toContain("+from the step");
    expect(readFileSync(join(session.worktree, "README.md"), "utf8")).toBe(
      "# api\nfrom the step\n",
    );
    expect((await service.getWorkspace(workspace.id)).takeover_session_id).toBe(session.id);

    expect(await service.takeOverWorkspace(workspace.id)).toEqual(taken);
    expect(sessions.sessions.size).toBe(1);
    // Once that session is closed, taking over opens a new one.
    session.open = false;
    const again = await service.takeOverWorkspace(workspace.id);
    expect(again.session_id).not.toBe(session.id);
    expect((await service.getWorkspace(workspace.id)).takeover_session_id).toBe(again.session_id);
  });

  it("takes a failed workspace over with what its steps changed before it failed, and why it failed", async () => {
    startWorker();
    const run = await finished(
      (
        await service.createRun({
          source: `
name: ${specName}
on:
  - repository: github.com/acme/api
steps:
  - run: echo "from the step" >> README.md
    container: alpine:3
  - run: echo broken >&2; exit 5
    container: alpine:3
changesetTemplate:
  title: Greet
  branch: greet
  commit:
    message: greet
`,
          options: { runtime: "local" },
        })
      ).id,
    );
    expect(run.status).toBe("failed");
    const workspace = await onlyWorkspace(run.id);
    const taken = await service.takeOverWorkspace(workspace.id);
    const session = sessions.sessions.get(taken.session_id)!;
    expect(readFileSync(join(session.worktree, "README.md"), "utf8")).toBe(
      "# api\nfrom the step\n",
    );
    const context = session.request.context;
    expect(context).toContain("which ended **failed**");
    expect(context).toContain("- Step 1: `echo broken >&2; exit 5` — failed (exit 5)");
    expect(context).toContain("Why it failed:");
    expect(context).toContain("broken");
  });

  it("refuses an unknown workspace, and one that has not finished", async () => {
    expect((await rejection(service.takeOverWorkspace(crypto.randomUUID()))).code).toBe(
      "not_found",
    );
    const run = await service.createRun({ source: spec(), options: { runtime: "local" } });
    const pending = await onlyWorkspace(run.id);
    const refused = await rejection(service.takeOverWorkspace(pending.id));
    expect(refused.code).toBe("conflict");
    expect(refused.message).toContain("still pending");
    await service.cancelRun(run.id);
  });

  it("refuses without sessions, and a run then runs the steps with a warning", async () => {
    startWorker();
    const first = await preview();
    const workspace = await onlyWorkspace(first.id);
    await service.takeOverWorkspace(workspace.id);
    await worker!.stop();
    service = serviceWith(undefined);
    expect((await rejection(service.takeOverWorkspace(workspace.id))).code).toBe("conflict");
    startWorker();
    const second = await preview();
    expect(second.warnings.join("\n")).toContain("cannot read; its steps run instead");
    expect(second.stats.steps_run + second.stats.steps_cached).toBe(1);
    expect((await onlyWorkspace(second.id)).takeover_session_id).toBeNull();
  });
});

describe("the next run of a taken-over workspace", () => {
  it("takes the session's work instead of running the steps, and renders the changeset as usual", async () => {
    startWorker();
    const first = await preview();
    const taken = await service.takeOverWorkspace((await onlyWorkspace(first.id)).id);
    sessions.apply(taken.session_id, "src/app.txt", "one\nTWO\nthree\n");
    // Not applied in the session, so not its work.
    writeFileSync(join(taken.worktree_path, "scratch.txt"), "draft\n");

    const second = await preview();
    expect(second.status).toBe("completed");
    expect(second.stats).toMatchObject({ steps_run: 0, steps_cached: 0, changesets: 1 });
    const workspace = await onlyWorkspace(second.id);
    expect(workspace.takeover_session_id).toBe(taken.session_id);
    expect(workspace.steps).toMatchObject([{ step_index: 0, outcome: "skipped" }]);
    const [changeset] = await service.listChangesets(second.id);
    expect(changeset!.diff).toContain("+from the step");
    expect(changeset!.diff).toContain("+TWO");
    expect(changeset!.diff).not.toContain("scratch.txt");
    // The template sees the step's outputs from the run taken over, and the session's files.
    expect(changeset!.title).toBe("Greet (step-said)");
    expect(changeset!.body).toBe("README.md, src/app.txt");
    expect(changeset!.stats).toEqual({ files: 2, insertions: 2, deletions: 1 });
    const events = await eventsOf(second.id);
    expect(events.find((event) => event.type === "workspace_taken_over")).toMatchObject({
      session_id: taken.session_id,
      base_revision: api.git("rev-parse", "main"),
      head: gitIn(taken.worktree_path, "rev-parse", "HEAD"),
      rebased: false,
    });
    expect(events.filter((event) => event.type === "step_finished")).toMatchObject([
      { step_index: 0, outcome: "skipped", exit_code: null },
    ]);

    // A third run continues the same session and sees what was applied since.
    sessions.apply(taken.session_id, "README.md", "# api, by hand\n");
    const third = await preview();
    expect((await onlyWorkspace(third.id)).takeover_session_id).toBe(taken.session_id);
    const [latest] = await service.listChangesets(third.id);
    expect(latest!.diff).toContain("+# api, by hand");
    expect(latest!.diff).not.toContain("+from the step");
    expect(latest!.title).toBe("Greet (step-said)");
    // Taking the third run's workspace over answers the same open session.
    expect((await service.takeOverWorkspace((await onlyWorkspace(third.id)).id)).session_id).toBe(
      taken.session_id,
    );
    // Another spec on the same repository is not affected.
    const other = await preview(`${specName}-other`);
    expect(other.stats.steps_run + other.stats.steps_cached).toBe(1);
    expect((await onlyWorkspace(other.id)).takeover_session_id).toBeNull();
  });

  it("merges the work onto a revision that moved, and fails with what to do when it conflicts", async () => {
    startWorker();
    const first = await preview();
    const taken = await service.takeOverWorkspace((await onlyWorkspace(first.id)).id);
    sessions.apply(taken.session_id, "src/app.txt", "one\nTWO\nthree\n");
    const base = api.git("rev-parse", "main");

    writeFileSync(join(api.path, "NEW.md"), "upstream\n");
    api.git("add", "-A");
    api.git("commit", "--quiet", "-m", "upstream adds a file");
    const moved = api.git("rev-parse", "main");
    const second = await preview();
    expect(second.status).toBe("completed");
    expect(second.warnings).toEqual([
      `workspace github.com/acme/api continues session ${taken.session_id}, whose work is based on ${base.slice(0, 12)}, but main is now at ${moved.slice(0, 12)}: the work is merged onto it, and the workspace fails if that conflicts`,
    ]);
    const [changeset] = await service.listChangesets(second.id);
    expect(changeset!.base_revision).toBe(moved);
    expect(changeset!.diff).toContain("+TWO");
    expect(changeset!.diff).toContain("+from the step");
    expect(changeset!.diff).not.toContain("NEW.md");
    expect(
      (await eventsOf(second.id)).find((e) => e.type === "workspace_taken_over"),
    ).toMatchObject({ base_revision: base, rebased: true });

    writeFileSync(join(api.path, "src/app.txt"), "one\nzwei\nthree\n");
    api.git("commit", "--quiet", "-am", "upstream changes the same line");
    const third = await preview();
    const workspace = await onlyWorkspace(third.id);
    expect(workspace.state).toBe("failed");
    expect(workspace.error).toContain("conflicts in src/app.txt");
    expect(workspace.error).toContain(`Merge ${api.git("rev-parse", "main").slice(0, 12)} into`);
    expect(workspace.error).toContain("the steps do not run instead");
    expect(await service.listChangesets(third.id)).toEqual([]);
    expect(existsSync(join(scratch.path, "work", workspace.id))).toBe(false);
  });

  it("runs the steps, with a warning, when the session's work cannot be read", async () => {
    startWorker();
    const first = await preview();
    const taken = await service.takeOverWorkspace((await onlyWorkspace(first.id)).id);
    sessions.sessions.delete(taken.session_id);
    const second = await preview();
    expect(second.warnings.join("\n")).toContain(
      `the work of session ${taken.session_id}, which took workspace github.com/acme/api over, cannot be read`,
    );
    expect(second.stats.steps_run + second.stats.steps_cached).toBe(1);
    expect((await service.listChangesets(second.id))[0]!.diff).toContain("+from the step");
  });
});

describe("where the session's repository is", () => {
  it("clones a git URL host's repository for the session, whose work the next run takes", async () => {
    const url = `file://${api.path}`;
    service = serviceWith(sessions, [{ type: "git", url, name: "acme/api" }]);
    startWorker();
    const on = "  - repository: acme/api";
    const first = await preview(specName, on);
    expect(first.status).toBe("completed");
    const taken = await service.takeOverWorkspace((await onlyWorkspace(first.id)).id);
    expect(sessions.sessions.get(taken.session_id)!.request.repository).toEqual({
      kind: "url",
      url,
    });
    sessions.apply(taken.session_id, "src/app.txt", "one\nTWO\nthree\n");
    const second = await preview(specName, on);
    const [changeset] = await service.listChangesets(second.id);
    expect(changeset!.diff).toContain("+from the step");
    expect(changeset!.diff).toContain("+TWO");
  });

  it("checks a sparse monorepo workspace out whole when it continues a session", async () => {
    const mono = repositoryAt(join(root, "github.com/acme/mono"), {
      "README.md": "# mono\n",
      "apps/web/package.json": "{}\n",
      "libs/shared/util.txt": "shared\n",
    });
    startWorker();
    const on = "  - repository: github.com/acme/mono";
    const workspacesConfig =
      "workspaces:\n  - rootAtLocationOf: package.json\n    onlyFetchWorkspace: true";
    const first = await preview(specName, on, workspacesConfig);
    const workspace = await onlyWorkspace(first.id);
    expect(workspace.path).toBe("apps/web");
    const taken = await service.takeOverWorkspace(workspace.id);
    sessions.apply(taken.session_id, "libs/shared/util.txt", "shared, changed\n");
    const second = await preview(specName, on, workspacesConfig);
    expect(second.status).toBe("completed");
    const [changeset] = await service.listChangesets(second.id);
    expect(changeset!.diff).toContain("+shared, changed");
    expect(changeset!.diff).toContain("apps/web/README.md");
    expect(mono.git("status", "--porcelain")).toBe("");
  });
});
