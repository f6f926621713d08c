// Taking a batch workspace over through the server: the batch engine and the session domain as
// `startServer` composes them (the real SessionService behind WorkspaceSessions), on PGlite and
// real git, every call through the HTTP API and checked against the wire.
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import {
  type BatchRun,
  type BatchTakeoverResponse,
  type BatchWorkspace,
  type Project,
  ServerPath,
  type Session,
  type StoredBatchChangeset,
  serverPath,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  backends,
  Cleanups,
  databaseUrlFor,
  gitIn,
  makeRepository,
  startTestServer,
  type TestServer,
  tempDir,
  waitUntil,
} from "./harness.ts";

describe.each(backends)("taking a batch workspace over on $backend", ({ backend }) => {
  const cleanups = new Cleanups();
  let harness: TestServer;
  let repository: string;

  beforeAll(async () => {
    const made = makeRepository(cleanups, { "README.md": "# demo\n", "app.txt": "one\n" });
    // The run's code host directory holds this repository alone: the temporary directory it was
    // made in is shared with every other test on the machine, whose repositories come and go
    // while the run resolves them (one removed mid-way failed the run's creation with a 500).
    repository = join(tempDir(cleanups), basename(made));
    renameSync(made, repository);
    const databaseUrl = await databaseUrlFor(cleanups, backend);
    harness = await startTestServer(cleanups, {
      dataDir: tempDir(cleanups),
      ...(databaseUrl ? { config: { databaseUrl } } : {}),
    });
  });
  afterAll(() => cleanups.run());

  const source = () => `
name: takeover-server
on:
  - repository: ${basename(repository)}
steps:
  - run: echo "from the step" >> README.md
    container: alpine:3
changesetTemplate:
  title: Takeover
  branch: takeover
  commit:
    message: takeover
`;

  async function preview(): Promise<{ run: BatchRun; workspace: BatchWorkspace }> {
    const created = await harness.api<BatchRun>("POST", ServerPath.batchRuns, {
      body: {
        source: source(),
        options: { runtime: "local", code_host_directories: [dirname(repository)] },
      },
    });
    expect(created.status, created.text).toBe(201);
    let run = created.body;
    await waitUntil(
      async () => {
        run = (
          await harness.api<BatchRun>(
            "GET",
            serverPath(ServerPath.batchRun, { batch_run_id: created.body.id }),
          )
        ).body;
        return run.status !== "queued" && run.status !== "running";
      },
      60_000,
      "the run to finish",
    );
    const listed = await harness.api<{ workspaces: BatchWorkspace[] }>(
      "GET",
      serverPath(ServerPath.batchRunWorkspaces, { batch_run_id: run.id }),
    );
    expect(listed.body.workspaces).toHaveLength(1);
    return { run, workspace: listed.body.workspaces[0]! };
  }

  function takeOver(workspaceId: string) {
    return harness.api<BatchTakeoverResponse>(
      "POST",
      serverPath(ServerPath.batchWorkspaceTakeover, { workspace_id: workspaceId }),
    );
  }

  async function changesetsOf(runId: string): Promise<StoredBatchChangeset[]> {
    return (
      await harness.api<{ changesets: StoredBatchChangeset[] }>(
        "GET",
        serverPath(ServerPath.batchRunChangesets, { batch_run_id: runId }),
      )
    ).body.changesets;
  }

  it("answers 404 for a workspace that does not exist", async () => {
    expect((await takeOver("not-a-uuid")).status).toBe(404);
    const unknown = await takeOver(crypto.randomUUID());
    expect(unknown.status).toBe(404);
    expect(unknown.text).toContain("no workspace");
  });

  it("opens a session on the workspace, and its applied work is the next preview's changeset", async () => {
    const first = await preview();
    expect(first.run.status).toBe("completed");
    const taken = await takeOver(first.workspace.id);
    expect(taken.status, taken.text).toBe(201);
    const session = (
      await harness.api<Session>(
        "GET",
        serverPath(ServerPath.session, { session_id: taken.body.session_id }),
      )
    ).body;
    expect(session).toMatchObject({
      project_id: taken.body.project_id,
      status: "open",
      worktree_path: taken.body.worktree_path,
      base_commit: first.workspace.revision,
      title: `takeover-server: ${basename(repository)}`,
    });
    const project = (
      await harness.api<Project>(
        "GET",
        serverPath(ServerPath.project, { project_id: taken.body.project_id }),
      )
    ).body;
    expect(project.repository_path).toBe(gitIn(repository, "rev-parse", "--show-toplevel"));
    const worktree = taken.body.worktree_path;
    expect(readFileSync(join(worktree, "README.md"), "utf8")).toBe("# demo\nfrom the step\n");
    expect(gitIn(worktree, "rev-parse", "HEAD^")).toBe(first.workspace.revision);
    expect(gitIn(worktree, "log", "-1", "--format=%an|%s")).toBe(
      `Deckhand|takeover-server: the result of batch workspace ${basename(repository)}`,
    );
    expect((await takeOver(first.workspace.id)).body).toEqual(taken.body);

    // What a person applies in the session (here, a commit made in its worktree).
    writeFileSync(join(worktree, "app.txt"), "one, by hand\n");
    gitIn(worktree, "commit", "--quiet", "-am", "by hand");
    const second = await preview();
    expect(second.run.status).toBe("completed");
    expect(second.workspace.takeover_session_id).toBe(taken.body.session_id);
    expect(second.workspace.steps).toMatchObject([{ step_index: 0, outcome: "skipped" }]);
    const [changeset] = await changesetsOf(second.run.id);
    expect(changeset!.diff).toContain("+from the step");
    expect(changeset!.diff).toContain("+one, by hand");
    expect(changeset!.title).toBe("Takeover");

    // The later workspace belongs to the same session; once it is closed, taking over again
    // opens a new session in the same project, from that workspace's result.
    expect((await takeOver(second.workspace.id)).body.session_id).toBe(taken.body.session_id);
    const closed = await harness.api<Session>(
      "DELETE",
      `${serverPath(ServerPath.session, { session_id: taken.body.session_id })}?force=true`,
    );
    expect(closed.body.status).toBe("closed");
    const again = await takeOver(second.workspace.id);
    expect(again.status).toBe(201);
    expect(again.body.session_id).not.toBe(taken.body.session_id);
    expect(again.body.project_id).toBe(taken.body.project_id);
    expect(readFileSync(join(again.body.worktree_path, "app.txt"), "utf8")).toBe("one, by hand\n");
  });
});
