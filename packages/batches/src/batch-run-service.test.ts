import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createDb, type DbHandle, TaskRegistry, TaskWorker, workspaceSteps } from "@deckhand/db";
import {
  eventually,
  fakeCodexDirective,
  gitIn,
  startFakeCodexRelease,
  startFakeModel,
  turn,
} from "@deckhand/testkit";
import type { BatchRun, BatchRunEvent } from "@deckhand/wire";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, temporaryDirectory, testEnvironment } from "../test/support.ts";
import { readRunEvents } from "./batch-run-events.ts";
import { BATCH_APPLY_TASK, BATCH_WORKSPACE_TASK, BatchRunService } from "./batch-run-service.ts";
import { BatchesError } from "./batches-error.ts";

let scratch: ReturnType<typeof temporaryDirectory>;
let root: string;
let database: DbHandle;
let service: BatchRunService;
let worker: TaskWorker | null;

beforeEach(async () => {
  scratch = temporaryDirectory();
  root = join(scratch.path, "code");
  for (const name of ["api", "web", "docs"]) {
    repositoryAt(join(root, `github.com/acme/${name}`), { "README.md": `# ${name}\n` });
  }
  database = await createDb({ dataDir: "memory://" });
  service = new BatchRunService({
    database,
    codeHosts: () => [{ type: "directory", path: root }],
    environment: testEnvironment(scratch.path, {
      // The steps name an image; these tests run them with sh (the container runtime has its own).
      containerRuntime: null,
      outerEnvironment: { PATH: process.env.PATH },
    }),
  });
  worker = null;
});

afterEach(async () => {
  await worker?.stop();
  await database.close();
  scratch.remove();
});

function startWorker(concurrency = 2): void {
  const registry = new TaskRegistry();
  service.register(registry);
  worker = new TaskWorker({ database, registry, concurrency, pollIntervalMs: 50 });
  void worker.start();
}

async function finished(runId: string, timeoutMs = 60_000): Promise<BatchRun> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await service.getRun(runId);
    if (run.status !== "queued" && run.status !== "running") return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 50));
  }
}

const spec = (run: string, extra = "") => `
name: greet
on:
  - repositoriesMatchingQuery: repo:acme
steps:
  - run: ${run}
    container: alpine:3
${extra}
changesetTemplate:
  title: Greet \${{ repository.name }}
  body: Says hello
  branch: greet
  commit:
    message: greet
`;

describe("BatchRunService", () => {
  it("queues one job per workspace and stores a changeset per repository with its rendered template", async () => {
    const created = await service.createRun({
      source: spec("echo hello > HELLO.md"),
      options: { runtime: "local" },
    });
    expect(created.status).toBe("queued");
    expect(created.stats.workspaces).toBe(3);
    startWorker();
    const run = await finished(created.id);
    expect(run.status).toBe("completed");
    expect(run.stats).toMatchObject({ completed: 3, failed: 0, changesets: 3, steps_run: 3 });
    const changesets = await service.listChangesets(run.id);
    expect(changesets.map((changeset) => changeset.title).sort()).toEqual([
      "Greet github.com/acme/api",
      "Greet github.com/acme/docs",
      "Greet github.com/acme/web",
    ]);
    expect(changesets[0]!.diff).toContain("+hello");
    expect(changesets[0]!.state).toBe("unpublished");
    // Each step is named by what it runs, numbered from 0 like the API.
    const [first] = await service.listWorkspaces(run.id);
    expect(first!.steps.map((step) => [step.step_index, step.label])).toEqual([
      [0, "echo hello > HELLO.md"],
    ]);
    // Listed as a batch change by its spec name, with its latest run.
    expect(await service.listBatchChanges()).toEqual([
      expect.objectContaining({
        name: "greet",
        latest_run: expect.objectContaining({ id: run.id, status: "completed" }),
        stats: expect.objectContaining({ total: 0 }),
        burndown: [],
      }),
    ]);
    const events = await readRunEvents(database.db, run.id, 0);
    expect(events[0]!.event).toEqual({ type: "run_started", workspaces: 3 });
    expect(events.at(-1)!.event).toMatchObject({
      type: "run_finished",
      status: "completed",
      summary: { workspaces: 3, changesets: 3, steps_run: 3, steps_cached: 0, failed: 0 },
    });
    // Checkouts are removed once their job ends.
    expect(readdirSync(join(scratch.path, "work"))).toEqual([]);
  });

  it("answers a second run of the same spec from the shared step cache without running a step", async () => {
    startWorker();
    const first = await finished((await service.createRun({ source: spec("echo hi > A") })).id);
    expect(first.stats.steps_run).toBe(3);
    const resolved = await service.resolve({ source: spec("echo hi > A") });
    expect(resolved.workspaces.map((workspace) => workspace.cached_steps)).toEqual([1, 1, 1]);
    const second = await finished((await service.createRun({ source: spec("echo hi > A") })).id);
    expect(second.stats).toMatchObject({ steps_run: 0, steps_cached: 3, changesets: 3 });
    const [workspace] = await service.listWorkspaces(second.id);
    const step = await service.getStep(workspace!.id, 0);
    expect(step.step.outcome).toBe("cached");
    expect(step.diff).toContain("+hi");
  });

  it("records a failing workspace with its step's stderr and fails the run unless skip_errors", async () => {
    startWorker();
    const script = `if [ "$(basename $PWD)" = "" ]; then :; fi; grep -q web README.md && { echo broken >&2; exit 3; }; echo ok > OK`;
    const failed = await finished(
      (await service.createRun({ source: spec(JSON.stringify(script)) })).id,
    );
    expect(failed.status).toBe("failed");
    // The step that ran and failed counts as run, like the two that succeeded.
    expect(failed.stats).toMatchObject({ completed: 2, failed: 1, changesets: 2, steps_run: 3 });
    const workspaces = await service.listWorkspaces(failed.id);
    const web = workspaces.find((workspace) => workspace.repository === "github.com/acme/web")!;
    expect(web.state).toBe("failed");
    // Steps are numbered from 0 in messages, as in step_index and the UI's cards.
    expect(web.error).toBe("step 0 failed with exit code 3: broken");
    const step = await service.getStep(web.id, 0);
    expect(step.step).toMatchObject({ outcome: "failed", exit_code: 3 });
    expect(step.step.shell).toMatch(/\/bash$/);
    expect(step.stderr).toContain("broken");
    const events = await readRunEvents(database.db, failed.id, 0);
    expect(events.at(-1)!.event).toMatchObject({
      type: "run_finished",
      status: "failed",
      error:
        "1 workspace failed; see each workspace's error, retry them, or run with skip_errors to keep the others' changesets",
      error_code: "workspaces_failed",
      summary: { steps_run: 3, failed: 1 },
    });

    const skipped = await finished(
      (
        await service.createRun({
          source: spec(JSON.stringify(script)),
          options: { skip_errors: true },
        })
      ).id,
    );
    expect(skipped.status).toBe("completed");
    expect(skipped.stats.failed).toBe(1);
  });

  it("fails a workspace whose repository is gone or lost its commit by the time it runs, saying which", async () => {
    const run = await service.createRun({ source: spec("echo hi > HI") });
    // Between resolving and running: one repository removed, another rewritten without the
    // commit the run resolved.
    const web = join(root, "github.com/acme/web");
    const webRevision = gitIn(web, "rev-parse", "HEAD").trim();
    rmSync(web, { recursive: true, force: true });
    const api = join(root, "github.com/acme/api");
    const resolved = gitIn(api, "rev-parse", "HEAD").trim();
    gitIn(api, "checkout", "--quiet", "--orphan", "fresh");
    gitIn(
      api,
      "-c",
      "user.name=T",
      "-c",
      "user.email=t@localhost",
      "commit",
      "--quiet",
      "-m",
      "new",
    );
    gitIn(api, "branch", "--quiet", "-D", "main");
    gitIn(api, "reflog", "expire", "--expire=now", "--all");
    gitIn(api, "gc", "--quiet", "--prune=now");
    startWorker();
    const ended = await finished(run.id);
    expect(ended.stats).toMatchObject({ completed: 1, failed: 2 });
    const errors = Object.fromEntries(
      (await service.listWorkspaces(run.id)).map((workspace) => [
        workspace.repository,
        workspace.error,
      ]),
    );
    expect(errors["github.com/acme/web"]).toBe(
      `checking the workspace out failed: repository github.com/acme/web is not at ${web} on this machine, or lacks commit ${webRevision}; executors need the directory code hosts at the same paths (a shared file system)`,
    );
    expect(errors["github.com/acme/api"]).toBe(
      `checking the workspace out failed: repository github.com/acme/api is not at ${api} on this machine, or lacks commit ${resolved}; executors need the directory code hosts at the same paths (a shared file system)`,
    );
    expect(errors["github.com/acme/docs"]).toBeNull();
  });

  it("applies the changesets of the workspaces that succeeded in a failed run, with skip_errors", async () => {
    startWorker();
    const script = `grep -q web README.md && { echo broken >&2; exit 3; }; echo ok > OK`;
    const failed = await finished(
      (await service.createRun({ source: spec(JSON.stringify(script)) })).id,
    );
    expect(failed.status).toBe("failed");
    // Without skip_errors a failed run is refused, as before.
    await expect(service.applyRun(failed.id)).rejects.toMatchObject({ code: "conflict" });
    const applying = await service.applyRun(failed.id, { skipErrors: true });
    expect(applying).toMatchObject({ action: "apply", status: "running" });
    expect(applying.options.skip_errors).toBe(true);
    const applied = await finished(failed.id);
    expect(applied.status).toBe("completed");
    expect(applied.stats).toMatchObject({ completed: 2, failed: 1, changesets: 2 });
    const changesets = await service.listChangesets(failed.id);
    expect(changesets.map((changeset) => changeset.apply_operation)).toEqual([
      "created",
      "created",
    ]);
    for (const name of ["api", "docs"]) {
      expect(gitIn(join(root, `github.com/acme/${name}`), "show", "greet:OK")).toBe("ok");
    }
    expect(() =>
      gitIn(join(root, "github.com/acme/web"), "rev-parse", "--verify", "greet"),
    ).toThrow();
  });

  it("refuses to apply a failed run none of whose workspaces produced a changeset", async () => {
    startWorker();
    const failed = await finished(
      (await service.createRun({ source: spec(JSON.stringify("exit 4")) })).id,
    );
    expect(failed.status).toBe("failed");
    await expect(service.applyRun(failed.id, { skipErrors: true })).rejects.toThrow(
      /nothing to apply; retry its workspaces first/,
    );
  });

  it("retries a failed workspace and keeps the run's other results", async () => {
    startWorker();
    const marker = join(scratch.path, "fixed");
    const script = `test -e ${marker} || { echo not yet >&2; exit 1; }; echo done > DONE`;
    const run = await finished(
      (
        await service.createRun({
          source: spec(JSON.stringify(script)),
          options: { exclude_repositories: ["github.com/acme/web", "github.com/acme/docs"] },
        })
      ).id,
    );
    expect(run.status).toBe("failed");
    repositoryAt(marker);
    await service.retryRun(run.id);
    const retried = await finished(run.id);
    expect(retried.status).toBe("completed");
    expect(retried.stats).toMatchObject({ workspaces: 1, completed: 1, changesets: 1 });
    const [workspace] = await service.listWorkspaces(run.id);
    expect(workspace!.attempts).toBe(2);
  });

  it("cancels a run: waiting workspaces end cancelled and a running step is stopped", async () => {
    startWorker(1);
    const created = await service.createRun({ source: spec("sleep 30") });
    const deadline = Date.now() + 60_000;
    while ((await service.getRun(created.id)).stats.running === 0) {
      if (Date.now() > deadline) throw new Error("nothing started");
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
    const started = Date.now();
    await service.cancelRun(created.id);
    const run = await service.getRun(created.id);
    expect(run.status).toBe("cancelled");
    expect(run.stats.cancelled).toBe(3);
    // The running job notices and stops its step well before the sleep ends.
    while (
      existsSync(join(scratch.path, "work")) &&
      readdirSync(join(scratch.path, "work")).length > 0
    ) {
      // Short of the step's own 30 s, so only a stop ends it in time, however busy the machine.
      if (Date.now() - started > 25_000) throw new Error("the step was not stopped");
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
    const events = await readRunEvents(database.db, created.id, 0);
    expect(events.filter((event) => event.event.type === "run_finished")).toHaveLength(1);
    // The running job's own end adds nothing: the cancel told of every workspace, once.
    expect(events.filter((event) => event.event.type === "workspace_finished")).toHaveLength(3);
  });

  it("refuses an invalid spec with every problem located", async () => {
    const error = await service
      .createRun({ source: "name: x\nsteps: 3\n", file: "bad.yaml" })
      .catch((caught: unknown) => caught);
    expect(BatchesError.isInstance(error)).toBe(true);
    expect((error as BatchesError).code).toBe("invalid_spec");
    expect((error as BatchesError).message).toMatch(/bad\.yaml:2:\d+: steps/);
  });

  it("starts detecting the container runtime when a run whose steps name images is created, before any job runs", async () => {
    const calls = join(scratch.path, "podman-calls");
    const podman = join(scratch.path, "podman");
    writeFileSync(podman, `#!/bin/sh\necho "$*" >> ${calls}\necho '4.9.0|false'\n`, {
      mode: 0o755,
    });
    const detecting = new BatchRunService({
      database,
      codeHosts: () => [{ type: "directory", path: root }],
      environment: testEnvironment(scratch.path, {
        containerDetection: { candidates: ["podman"], binaries: { podman }, restrictedHost: true },
        outerEnvironment: { PATH: process.env.PATH },
      }),
    });
    // No worker: nothing places a step, so only the run's creation can have started it.
    await detecting.createRun({ source: spec("echo hi > A"), options: { runtime: "container" } });
    expect(await eventually(() => existsSync(calls), 60_000)).toBe(true);
    expect(readFileSync(calls, "utf8")).toMatch(/^--runtime runc --cgroup-manager cgroupfs info /);
  });

  it("resolves the workspaces a spec would run in without running anything", async () => {
    const resolved = await service.resolve({ source: spec("echo") });
    expect(resolved.workspaces.map((workspace) => workspace.repository)).toEqual([
      "github.com/acme/api",
      "github.com/acme/docs",
      "github.com/acme/web",
    ]);
    expect(resolved.workspaces.map((workspace) => workspace.cached_steps)).toEqual([0, 0, 0]);
    expect(await service.listRuns()).toEqual([]);
  });
});

/** The run's events of one type. */
async function eventsOf(runId: string, type: BatchRunEvent["type"]): Promise<BatchRunEvent[]> {
  return (await readRunEvents(database.db, runId, 0))
    .map((stored) => stored.event)
    .filter((event) => event.type === type);
}

async function waitUntil(check: () => Promise<boolean>, what: string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 50));
  }
}

/** One workspace (api), run on this machine: the others are excluded. */
const apiOnly = {
  runtime: "local" as const,
  exclude_repositories: ["github.com/acme/web", "github.com/acme/docs"],
};

describe("BatchRunService on many executors", () => {
  it("takes over a job whose executor died mid-step: it runs again and completes once", async () => {
    const created = await service.createRun({
      source: spec("echo hello > HELLO.md"),
      options: apiOnly,
    });
    const [workspace] = await service.listWorkspaces(created.id);
    // As if executor "dead" had claimed the job and was killed mid-step: the task's lease has
    // expired, the workspace is running under it, and its checkout is left on disk.
    await database.query(
      `update tasks set status = 'running', locked_by = 'dead', attempts = 1,
         locked_until = now() - interval '1 second' where type = $1`,
      [BATCH_WORKSPACE_TASK],
    );
    await database.query(
      "update workspaces set status = 'running', executor = 'dead', attempts = 1 where id = $1",
      [workspace!.id],
    );
    const leftover = join(scratch.path, "work", `${workspace!.id}.1`);
    gitIn(join(root, "github.com/acme/api"), "worktree", "add", "--detach", leftover, "HEAD");
    writeFileSync(join(leftover, "HALF.md"), "half done\n");

    startWorker();
    const run = await finished(created.id);
    expect(run.status).toBe("completed");
    const [after] = await service.listWorkspaces(run.id);
    expect(after).toMatchObject({ state: "completed", attempts: 2, executor: worker!.workerId });
    const changesets = await service.listChangesets(run.id);
    expect(changesets).toHaveLength(1);
    expect(changesets[0]!.diff).toContain("+hello");
    expect(changesets[0]!.diff).not.toContain("HALF");
    const ends = await eventsOf(run.id, "workspace_finished");
    expect(ends).toEqual([expect.objectContaining({ status: "completed" })]);
    expect(await eventsOf(run.id, "run_finished")).toHaveLength(1);
    // The dead executor's checkout went with the new attempt's own.
    expect(readdirSync(join(scratch.path, "work"))).toEqual([]);
    expect(gitIn(join(root, "github.com/acme/api"), "worktree", "list")).not.toContain(leftover);
  });

  it("lets only the attempt holding the claim finish, when an earlier one is still alive", async () => {
    const marker = join(scratch.path, "go");
    const created = await service.createRun({
      source: spec(
        JSON.stringify(`while [ ! -e ${marker} ]; do sleep 0.05; done; echo done > DONE`),
      ),
      options: apiOnly,
    });
    const [workspace] = await service.listWorkspaces(created.id);
    const registry = new TaskRegistry();
    service.register(registry);
    const run = (workerId: string, attempt: number) =>
      registry.run(
        BATCH_WORKSPACE_TASK,
        { workspace_id: workspace!.id },
        {
          id: 1,
          type: BATCH_WORKSPACE_TASK,
          attempt,
          maxAttempts: 5,
          workerId,
          signal: new AbortController().signal,
        },
      );
    const stepRunning = async () => {
      const [row] = await database.db
        .select()
        .from(workspaceSteps)
        .where(eq(workspaceSteps.workspaceId, workspace!.id));
      return row?.outcome === "running";
    };
    // Executor A runs the step; its lease lapses (a long pause, a network split) and the queue
    // hands the job to executor B while A is still alive.
    const first = run("executor-a", 1);
    await waitUntil(stepRunning, "executor A's step");
    const second = run("executor-b", 2);
    await waitUntil(
      async () => (await service.getWorkspace(workspace!.id)).executor === "executor-b",
      "executor B's claim",
    );
    // A notices that B took the workspace over, stops its step (which waits for the marker, not
    // written yet, so only that stop ends A) and writes nothing.
    await first;
    expect(await eventsOf(created.id, "workspace_finished")).toEqual([]);
    await waitUntil(stepRunning, "executor B's step");
    writeFileSync(marker, "");
    await second;

    const after = await service.getWorkspace(workspace!.id);
    expect(after).toMatchObject({ state: "completed", executor: "executor-b", attempts: 2 });
    expect(await service.listChangesets(created.id)).toHaveLength(1);
    expect(await eventsOf(created.id, "workspace_finished")).toEqual([
      expect.objectContaining({ status: "completed" }),
    ]);
    expect(await eventsOf(created.id, "changeset")).toHaveLength(1);
    expect(await eventsOf(created.id, "run_finished")).toHaveLength(1);
    expect((await service.getRun(created.id)).status).toBe("completed");
    expect(readdirSync(join(scratch.path, "work"))).toEqual([]);
  });

  it("hands a running job back on a graceful stop; the next worker resumes it", async () => {
    const created = await service.createRun({
      source: spec("sleep 30; echo late > LATE"),
      options: apiOnly,
    });
    const registry = new TaskRegistry();
    service.register(registry);
    const stopping = new TaskWorker({
      database,
      registry,
      pollIntervalMs: 50,
      shutdownTimeoutMs: 100,
    });
    await stopping.start();
    await waitUntil(async () => (await service.getRun(created.id)).stats.running === 1, "a job");
    await stopping.stop();
    // The aborted job stops its step, says nobody runs the workspace now, and cleans up.
    await waitUntil(
      async () =>
        (await service.listWorkspaces(created.id))[0]!.state === "pending" &&
        // Stopped before its checkout was made, the job made no work directory at all.
        (!existsSync(join(scratch.path, "work")) ||
          readdirSync(join(scratch.path, "work")).length === 0),
      "the released job",
    );
    const [released] = await service.listWorkspaces(created.id);
    expect(released).toMatchObject({ state: "pending", attempts: 1 });
    const { rows } = await database.query<{ status: string; attempts: number }>(
      "select status, attempts from tasks where type = $1",
      [BATCH_WORKSPACE_TASK],
    );
    expect(rows).toEqual([{ status: "pending", attempts: 0 }]);
    expect(await eventsOf(created.id, "workspace_finished")).toEqual([]);
  });

  it("sweeps the checkouts no attempt runs any more, and keeps the running ones", async () => {
    const created = await service.createRun({
      source: spec("echo hello > HELLO.md"),
      options: { runtime: "local", exclude_repositories: ["github.com/acme/docs"] },
    });
    const [api, web] = await service.listWorkspaces(created.id);
    // api runs on its second attempt; its first attempt's executor was killed and left its
    // checkout. web waits; a killed executor left a checkout of it too.
    await database.query(
      "update workspaces set status = 'running', executor = 'b', attempts = 2 where id = $1",
      [api!.id],
    );
    const work = join(scratch.path, "work");
    const apiRepository = join(root, "github.com/acme/api");
    const webRepository = join(root, "github.com/acme/web");
    for (const [repository, name] of [
      [apiRepository, `${api!.id}.1`],
      [apiRepository, `${api!.id}.2`],
      [webRepository, `${web!.id}.1`],
    ] as const) {
      gitIn(repository, "worktree", "add", "--detach", join(work, name), "HEAD");
    }
    const unknown = join(work, `${randomUUID()}.3`);
    mkdirSync(unknown);
    mkdirSync(join(work, "notes"));

    expect(await service.sweepCheckouts()).toBe(3);
    expect(readdirSync(work).sort()).toEqual([`${api!.id}.2`, "notes"].sort());
    expect(gitIn(apiRepository, "worktree", "list")).not.toContain(`${api!.id}.1`);
    expect(gitIn(apiRepository, "worktree", "list")).toContain(`${api!.id}.2`);
    expect(gitIn(webRepository, "worktree", "list")).not.toContain(work);
  });

  it("fails a workspace whose job the queue gave up on, and finishes its run", async () => {
    const created = await service.createRun({
      source: spec("echo hello > HELLO.md"),
      options: { runtime: "local", exclude_repositories: ["github.com/acme/docs"] },
    });
    const [api, web] = await service.listWorkspaces(created.id);
    // api's executor died on every attempt: the queue failed its task for good.
    await database.query(
      `update tasks set status = 'failed', attempts = 5, locked_by = null, locked_until = null,
         last_error = 'lease expired on the last attempt (worker w stopped heartbeating)'
       where payload ->> 'workspace_id' = $1`,
      [api!.id],
    );
    await database.query(
      "update workspaces set status = 'running', executor = 'w', attempts = 5 where id = $1",
      [api!.id],
    );
    expect(await service.recoverAbandonedJobs()).toEqual({ workspaces: 1, runs: 0 });
    // Done once: another executor's sweep finds nothing more.
    expect(await service.recoverAbandonedJobs()).toEqual({ workspaces: 0, runs: 0 });
    const failed = await service.getWorkspace(api!.id);
    expect(failed.state).toBe("failed");
    expect(failed.error).toMatch(/given up after 5 attempts: lease expired on the last attempt/);
    expect((await service.getWorkspace(web!.id)).state).toBe("pending");

    startWorker();
    const run = await finished(created.id);
    expect(run.status).toBe("failed");
    expect(run.stats).toMatchObject({ completed: 1, failed: 1 });
    expect(await eventsOf(run.id, "workspace_finished")).toHaveLength(2);
    expect(await eventsOf(run.id, "run_finished")).toHaveLength(1);
  });

  it("fails a run whose apply job the queue gave up on", async () => {
    startWorker();
    const created = await service.createRun({
      source: spec("echo hello > HELLO.md"),
      options: apiOnly,
    });
    await finished(created.id);
    // Being applied, with its apply job failed for good.
    await database.query(
      "update batch_runs set status = 'running', action = 'apply', finished_at = null where id = $1",
      [created.id],
    );
    await database.query(
      `insert into tasks (type, payload, status, attempts, last_error)
       values ($1, $2, 'failed', 5, 'Error: the disk is full')`,
      [BATCH_APPLY_TASK, { batch_run_id: created.id }],
    );
    expect(await service.recoverAbandonedJobs()).toEqual({ workspaces: 0, runs: 1 });
    const run = await service.getRun(created.id);
    expect(run.status).toBe("failed");
    expect(run.error).toMatch(/given up after 5 attempts: Error: the disk is full/);
    expect(await eventsOf(run.id, "run_finished")).toHaveLength(2);
  });
});

describe("BatchRunService with codingAgent steps", () => {
  it("installs agents of local steps under agentInstallDirectory, not in the home directory", async () => {
    const release = await startFakeCodexRelease({ version: "0.0.1-fake" });
    const model = await startFakeModel();
    try {
      model.script([turn.text(fakeCodexDirective.write("GREETING.md", "hi\n"))]);
      const home = join(scratch.path, "home");
      const agents = join(scratch.path, "data", "agents");
      let released = 0;
      service = new BatchRunService({
        database,
        codeHosts: () => [{ type: "directory", path: root }],
        environment: testEnvironment(scratch.path, {
          containerRuntime: null,
          outerEnvironment: { PATH: process.env.PATH, HOME: home },
          // The agent talks to the fake model directly: what is under test is where it lands.
          modelProvider: {
            lease: async () => ({
              baseUrl: model.url,
              token: "service-test-token-0123456789",
              release: async () => {
                released += 1;
              },
            }),
          },
          codingAgent: {
            versions: { codex: "0.0.1-fake" },
            models: { codex: "gpt-5.5" },
            install_source: { kind: "release", base_url: release.baseUrl },
          },
          directories: { agentInstallDirectory: agents },
        }),
      });
      startWorker();
      const run = await finished(
        (
          await service.createRun({
            source: `
version: 3
name: agent
on:
  - repository: github.com/acme/api
steps:
  - codingAgent:
      type: codex
      prompt: greet
    image: node:22
changesetTemplate:
  title: Agent
  branch: agent
  commit:
    message: agent
`,
            options: { runtime: "local" },
          })
        ).id,
      );
      expect(run.error).toBeNull();
      expect(run.status).toBe("completed");
      const [workspace] = await service.listWorkspaces(run.id);
      const step = await service.getStep(workspace!.id, 0);
      expect(step.stderr).toContain("deckhand: installing codex 0.0.1-fake");
      expect(step.diff).toContain("+hi");
      expect(readdirSync(join(agents, "codex", "0.0.1-fake"))).toContain("bin");
      expect(existsSync(home)).toBe(false);
      expect(released).toBe(1);
    } finally {
      await release.close();
      await model.close();
    }
  });
});
