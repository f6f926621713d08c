// The take-over round trip end to end, against `deckhand up` as its own process and only through
// its HTTP and WebSocket API: a spec previewed over a small repository, its workspace taken over
// by an interactive session, an agent's edit in that session applied, and the spec previewed
// again — whose changeset then holds the step's change and the session's edit.
import { mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTempRepository, SessionStreamClient, type SpawnedService } from "@deckhand/testkit";
import {
  type BatchRun,
  type BatchTakeoverResponse,
  type BatchWorkspace,
  type Chat,
  type PendingChange,
  ServerPath,
  type Session,
  type StoredBatchChangeset,
  serverPath,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DeckhandUp, runTurnAndWait, startDeckhandUp } from "./deckhand-up.ts";

let up: DeckhandUp;
let server: SpawnedService;
/** The code host: a directory holding only this test's repository, `acme/app`. */
let codeHost: string;
let repository: string;

async function api<Body>(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Body }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    ...(body !== undefined
      ? { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }
      : {}),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as Body };
}

beforeAll(async () => {
  up = await startDeckhandUp();
  ({ server } = up);
  codeHost = mkdtempSync(join(tmpdir(), "deckhand-e2e-code-"));
  const made = createTempRepository({ "README.md": "# app\n", "app.txt": "one\n" });
  repository = join(codeHost, "acme", "app");
  mkdirSync(join(codeHost, "acme"));
  renameSync(made.path, repository);
});

afterAll(async () => {
  await up?.close();
  if (codeHost) rmSync(codeHost, { recursive: true, force: true });
});

const spec = `
name: e2e-takeover
on:
  - repository: acme/app
steps:
  - run: echo "from the step" >> README.md
    container: alpine:3
changesetTemplate:
  title: Take-over round trip
  branch: e2e-takeover
  commit:
    message: e2e take-over
`;

async function preview(): Promise<{ run: BatchRun; workspace: BatchWorkspace }> {
  const created = await api<BatchRun>("POST", ServerPath.batchRuns, {
    source: spec,
    options: { runtime: "local", code_host_directories: [codeHost] },
  });
  expect(created.status).toBe(201);
  const deadline = Date.now() + 60_000;
  let run = created.body;
  while (run.status === "queued" || run.status === "running") {
    if (Date.now() > deadline) throw new Error(`run ${run.id} is still ${run.status}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    run = (await api<BatchRun>("GET", serverPath(ServerPath.batchRun, { batch_run_id: run.id })))
      .body;
  }
  const listed = await api<{ workspaces: BatchWorkspace[] }>(
    "GET",
    serverPath(ServerPath.batchRunWorkspaces, { batch_run_id: run.id }),
  );
  expect(listed.body.workspaces).toHaveLength(1);
  return { run, workspace: listed.body.workspaces[0]! };
}

async function changesetOf(runId: string): Promise<StoredBatchChangeset> {
  const listed = await api<{ changesets: StoredBatchChangeset[] }>(
    "GET",
    serverPath(ServerPath.batchRunChangesets, { batch_run_id: runId }),
  );
  expect(listed.body.changesets).toHaveLength(1);
  return listed.body.changesets[0]!;
}

describe("taking a batch workspace over through deckhand up", () => {
  it("previews, takes over, applies an agent's edit in the session, and previews the session's work", async () => {
    const first = await preview();
    expect(first.run.status).toBe("completed");
    expect(first.workspace.steps).toMatchObject([{ step_index: 0, outcome: "run" }]);
    expect((await changesetOf(first.run.id)).diff).toContain("+from the step");

    const takeover = serverPath(ServerPath.batchWorkspaceTakeover, {
      workspace_id: first.workspace.id,
    });
    const taken = await api<BatchTakeoverResponse>("POST", takeover);
    expect(taken.status).toBe(201);
    expect(taken.body.workspace_id).toBe(first.workspace.id);
    const session = await api<Session>(
      "GET",
      serverPath(ServerPath.session, { session_id: taken.body.session_id }),
    );
    expect(session.body).toMatchObject({
      status: "open",
      worktree_path: taken.body.worktree_path,
      base_commit: first.workspace.revision,
    });
    // Taking it over again answers the same session while it is open.
    expect((await api<BatchTakeoverResponse>("POST", takeover)).body).toEqual(taken.body);

    // In the session, an agent edits a file and its pending change is applied.
    const chat = await api<Chat>(
      "POST",
      serverPath(ServerPath.sessionChats, { session_id: taken.body.session_id }),
      {},
    );
    expect(chat.status).toBe(201);
    const stream = new SessionStreamClient(
      server.url,
      serverPath(ServerPath.sessionStream, { session_id: taken.body.session_id }),
    );
    try {
      await stream.opened;
      const events = await runTurnAndWait(
        api,
        stream,
        chat.body.id,
        "scripted",
        "write app.txt edited in the session",
      );
      expect(events.map((event) => event.event.type).at(-1)).toBe("turn_finished");
    } finally {
      await stream.close();
    }
    const pending = await api<{ pending_changes: PendingChange[] }>(
      "GET",
      `${serverPath(ServerPath.sessionPendingChanges, { session_id: taken.body.session_id })}?status=pending`,
    );
    expect(pending.body.pending_changes.map((change) => change.path)).toEqual(["app.txt"]);
    const applied = await api<{ commit: string }>(
      "POST",
      serverPath(ServerPath.applyPendingChange, {
        pending_change_id: pending.body.pending_changes[0]!.id,
      }),
    );
    expect(applied.status).toBe(200);

    const second = await preview();
    expect(second.run.status).toBe("completed");
    expect(second.workspace.takeover_session_id).toBe(taken.body.session_id);
    expect(second.workspace.steps).toMatchObject([{ step_index: 0, outcome: "skipped" }]);
    expect(second.run.stats).toMatchObject({ steps_run: 0, changesets: 1 });
    const changeset = await changesetOf(second.run.id);
    expect(changeset.title).toBe("Take-over round trip");
    expect(changeset.base_revision).toBe(first.workspace.revision);
    expect(changeset.diff).toContain("+from the step");
    expect(changeset.diff).toContain("+edited in the session");
    expect(changeset.stats.files).toBe(2);
  });
});
