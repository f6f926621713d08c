import { join } from "node:path";
import {
  type BatchRun,
  type BatchRunStreamFrame,
  type BatchStepDetail,
  type BatchWorkspace,
  type ErrorResponse,
  ServerPath,
  type StoredBatchChangeset,
  serverPath,
  WireSubprotocol,
} from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import {
  backends,
  Cleanups,
  databaseUrlFor,
  gitIn,
  makeRepository,
  startTestServer,
  type TestServer,
  tempDir,
} from "./harness.ts";

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

const spec = `
name: hello
on:
  - repository: acme/api
  - repository: acme/web
steps:
  - run: echo "hello from \${{ repository.name }}" > HELLO.md
    container: alpine:3
changesetTemplate:
  title: Say hello
  body: Adds HELLO.md to \${{ repository.name }}
  branch: batch/hello
  commit:
    message: Say hello
`;

/** The frames of a run's stream from `after`, until `run_finished` (or the timeout). */
async function streamUntilFinished(
  server: TestServer,
  runId: string,
  after = 0,
): Promise<BatchRunStreamFrame[]> {
  const url = `${server.server.url.replace(/^http/, "ws")}${serverPath(ServerPath.batchRunStream, { batch_run_id: runId })}?after=${after}`;
  const socket = new WebSocket(url, [WireSubprotocol.batchRunStream]);
  const frames: BatchRunStreamFrame[] = [];
  try {
    await new Promise<void>((resolveDone, rejectDone) => {
      const timer = setTimeout(() => rejectDone(new Error("no run_finished within 60 s")), 60_000);
      socket.on("message", (data) => {
        const frame = JSON.parse(String(data)) as BatchRunStreamFrame;
        frames.push(frame);
        if (frame.type === "event" && frame.event.event.type === "run_finished") {
          clearTimeout(timer);
          resolveDone();
        }
      });
      socket.on("error", rejectDone);
    });
  } finally {
    socket.close();
  }
  return frames;
}

describe.each(backends)("batch runs API ($backend)", ({ backend }) => {
  async function setUp(): Promise<TestServer> {
    const root = tempDir(cleanups, "deckhand-batch-hosts-");
    for (const name of ["api", "web"]) {
      const repository = makeRepository(cleanups, { "README.md": `# ${name}\n` });
      gitIn(repository, "clone", "--quiet", repository, join(root, "acme", name));
    }
    return startTestServer(cleanups, {
      dataDir: tempDir(cleanups),
      config: {
        databaseUrl: await databaseUrlFor(cleanups, backend),
        workspaceAgent: false,
        codeHosts: [{ type: "directory", path: root }],
        batchConcurrency: 2,
      },
    });
  }

  it("runs a spec: the stream tells each workspace's progress and changeset, the API serves the results", async () => {
    const server = await setUp();
    const created = await server.api<BatchRun>("POST", ServerPath.batchRuns, {
      body: { source: spec, file: "hello.yaml", options: { runtime: "local" } },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: "hello", action: "preview", status: "queued" });
    const runId = created.body.id;

    const frames = await streamUntilFinished(server, runId);
    const events = frames.flatMap((frame) => (frame.type === "event" ? [frame.event] : []));
    expect(events[0]!.event).toEqual({ type: "run_started", workspaces: 2 });
    expect(events.filter((event) => event.event.type === "changeset")).toHaveLength(2);
    expect(events.at(-1)!.event).toMatchObject({
      type: "run_finished",
      status: "completed",
      summary: { workspaces: 2, changesets: 2, steps_run: 2, failed: 0 },
    });
    expect(frames.some((frame) => frame.type === "ready")).toBe(true);

    // Resuming after an event id gives the rest, with no gap and no duplicate.
    const middle = events[2]!.id;
    const resumed = (await streamUntilFinished(server, runId, middle)).flatMap((frame) =>
      frame.type === "event" ? [frame.event.id] : [],
    );
    expect(resumed).toEqual(events.filter((event) => event.id > middle).map((event) => event.id));

    const run = await server.api<BatchRun>(
      "GET",
      serverPath(ServerPath.batchRun, { batch_run_id: runId }),
    );
    expect(run.body).toMatchObject({
      status: "completed",
      stats: { workspaces: 2, completed: 2, changesets: 2, steps_run: 2 },
    });
    const workspaces = await server.api<{ workspaces: BatchWorkspace[] }>(
      "GET",
      serverPath(ServerPath.batchRunWorkspaces, { batch_run_id: runId }),
    );
    expect(workspaces.body.workspaces.map((workspace) => workspace.repository)).toEqual([
      "acme/api",
      "acme/web",
    ]);
    const [api] = workspaces.body.workspaces;
    expect(api!.steps).toMatchObject([{ step_index: 0, outcome: "run", runtime: "local" }]);
    const step = await server.api<BatchStepDetail>(
      "GET",
      serverPath(ServerPath.batchWorkspaceStep, { workspace_id: api!.id, step_index: "0" }),
    );
    expect(step.body.diff).toContain("+hello from acme/api");
    const changesets = await server.api<{ changesets: StoredBatchChangeset[] }>(
      "GET",
      serverPath(ServerPath.batchRunChangesets, { batch_run_id: runId }),
    );
    expect(changesets.body.changesets.map((changeset) => changeset.body)).toEqual([
      "Adds HELLO.md to acme/api",
      "Adds HELLO.md to acme/web",
    ]);
    expect(changesets.body.changesets[0]).toMatchObject({
      branch: "batch/hello",
      state: "unpublished",
      applied_commit: null,
    });
  });

  it("answers an invalid spec with 400 and every problem located, and unknown ids with 404", async () => {
    const server = await setUp();
    const invalid = await server.api<ErrorResponse>("POST", ServerPath.batchRuns, {
      body: { source: "name: broken\nsteps:\n  - run: 3\n", file: "broken.yaml" },
    });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.message).toMatch(/broken\.yaml:3:\d+: steps\[0\]\.run/);
    const missing = await server.api<ErrorResponse>("POST", ServerPath.batchRuns, {
      body: { source: spec.replace("acme/web", "acme/nowhere") },
    });
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toContain("acme/nowhere");
    for (const path of [
      serverPath(ServerPath.batchRun, { batch_run_id: "00000000-0000-4000-8000-000000000000" }),
      serverPath(ServerPath.batchRun, { batch_run_id: "not-a-uuid" }),
      serverPath(ServerPath.batchWorkspace, { workspace_id: "not-a-uuid" }),
    ]) {
      expect((await server.api("GET", path)).status).toBe(404);
    }
    expect(
      await server.api("GET", serverPath(ServerPath.batchRunStream, { batch_run_id: "x" })),
    ).toMatchObject({ status: 426 });
  });

  it("previews what a spec would run without running it, and refuses to apply a run that has not finished", async () => {
    const server = await setUp();
    const resolved = await server.api<{ workspaces: { repository: string; revision: string }[] }>(
      "POST",
      ServerPath.resolveBatchWorkspaces,
      { body: { source: spec } },
    );
    expect(resolved.status).toBe(200);
    expect(resolved.body.workspaces.map((workspace) => workspace.repository)).toEqual([
      "acme/api",
      "acme/web",
    ]);
    expect(resolved.body.workspaces[0]!.revision).toMatch(/^[0-9a-f]{40}$/);
    const runs = await server.api<{ batch_runs: BatchRun[] }>("GET", ServerPath.batchRuns);
    expect(runs.body.batch_runs).toEqual([]);

    const created = await server.api<BatchRun>("POST", ServerPath.batchRuns, {
      body: { source: spec.replace("echo", "sleep 5; echo"), options: { runtime: "local" } },
    });
    const apply = await server.api<ErrorResponse>(
      "POST",
      serverPath(ServerPath.batchRunApply, { batch_run_id: created.body.id }),
    );
    expect(apply.status).toBe(409);
    const cancelled = await server.api<BatchRun>(
      "POST",
      serverPath(ServerPath.batchRunCancel, { batch_run_id: created.body.id }),
    );
    expect(cancelled.body.status).toBe("cancelled");
  });
});
