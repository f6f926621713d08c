import { join } from "node:path";
import { createDb, type DbHandle, tasks } from "@deckhand/db";
import type { BatchRunEvent } from "@deckhand/wire";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, temporaryDirectory, testEnvironment } from "../test/support.ts";
import { readRunEvents } from "./batch-run-events.ts";
import { BatchRunService } from "./batch-run-service.ts";
import { DatabaseStepCache } from "./database-step-cache.ts";
import { RepositorySource } from "./repository-source.ts";
import { RunStore } from "./run-store.ts";
import { WorkspaceJob } from "./workspace-job.ts";

let scratch: ReturnType<typeof temporaryDirectory>;
let root: string;
let database: DbHandle;

beforeEach(async () => {
  scratch = temporaryDirectory();
  root = join(scratch.path, "code");
  repositoryAt(join(root, "github.com/acme/api"), { "README.md": "# api\n" });
  database = await createDb({ dataDir: "memory://" });
});

afterEach(async () => {
  await database.close();
  scratch.remove();
});

/** Three steps that each name an image and run locally: each tells a runtime fallback too. */
const threeSteps = `
name: count
on:
  - repositoriesMatchingQuery: repo:acme
steps:
${["one", "two", "three"].map((word) => `  - run: echo ${word} >> STEPS\n    container: alpine:3`).join("\n")}
changesetTemplate:
  title: Count
  body: Counts
  branch: count
  commit:
    message: count
`;

/**
 * Counts the SQL statements PGlite is sent (each begins with a Parse or a simple Query message),
 * leaving out the claim watch's once-a-second look at the workspace, whose number depends on
 * how long the job takes.
 */
function countStatements(handle: DbHandle): { texts: string[]; stop(): void } {
  const client = (
    handle.db as unknown as { $client: { execProtocolRawSync(message: Uint8Array): Uint8Array } }
  ).$client;
  const original = client.execProtocolRawSync;
  const texts: string[] = [];
  const decoder = new TextDecoder();
  client.execProtocolRawSync = (message: Uint8Array) => {
    const type = message[0];
    if (type === 0x50 || type === 0x51) {
      const start = type === 0x51 ? 5 : message.indexOf(0, 5) + 1;
      const text = decoder.decode(message.subarray(start, message.indexOf(0, start)));
      if (!text.startsWith('select "status", "executor", "attempts" from "workspaces"')) {
        texts.push(text);
      }
    }
    return original.call(client, message);
  };
  return {
    texts,
    stop: () => {
      client.execProtocolRawSync = original;
    },
  };
}

describe("a workspace job", () => {
  it("writes its progress a step boundary at a time, and its last step's end with its own", async () => {
    const service = new BatchRunService({
      database,
      codeHosts: () => [{ type: "directory", path: root }],
      environment: testEnvironment(scratch.path, {
        containerRuntime: null,
        outerEnvironment: { PATH: process.env.PATH },
      }),
    });
    const created = await service.createRun({
      source: threeSteps,
      options: { runtime: "local" },
    });
    const [workspace] = await service.listWorkspaces(created.id);
    const environment = testEnvironment(scratch.path, {
      containerRuntime: null,
      outerEnvironment: { PATH: process.env.PATH },
    });
    const job = new WorkspaceJob({
      store: new RunStore(database),
      cache: new DatabaseStepCache(database.db),
      environment,
      repositories: new RepositorySource({
        codeHosts: () => [{ type: "directory", path: root }],
        cacheDirectory: environment.directories.cacheDirectory,
      }),
      // Longer than any step boundary here, however loaded the machine: only boundaries write.
      progressHoldMs: 600_000,
    });
    const statements = countStatements(database);
    await job.run(workspace!.id, { workerId: "test", signal: new AbortController().signal });
    statements.stop();

    const events = await readRunEvents(database.db, created.id, 0);
    const told = events.map(({ event }) => event.type);
    expect(told).toEqual([
      "run_started",
      "workspace_started",
      ...[0, 1, 2].flatMap(() => ["step_runtime_fallback", "step_started", "step_finished"]),
      "workspace_finished",
      "changeset",
      "run_finished",
    ]);
    // A transaction stamps its rows with its start: one stamp per write of the log.
    const writes = new Map<string, string[]>();
    for (const { created_at, event } of events) {
      writes.set(created_at, [...(writes.get(created_at) ?? []), label(event)]);
    }
    expect([...writes.values()]).toEqual([
      ["run_started"],
      ["workspace_started", "step_runtime_fallback 0", "step_started 0"],
      ["step_finished 0", "step_runtime_fallback 1", "step_started 1"],
      ["step_finished 1", "step_runtime_fallback 2", "step_started 2"],
      ["step_finished 2", "workspace_finished", "changeset", "run_finished"],
    ]);
    // The job, its claim, its start, the cache looked up once, a result cached per step, three
    // writes of the log (its lock, events, notice and step rows each) and the end with the run's
    // (11 transactions and 84 statements when each event was written as it happened, and the
    // cache was asked for each step in turn).
    expect(statements.texts.filter((text) => text === "BEGIN")).toHaveLength(4);
    expect(statements.texts, statements.texts.join("\n")).toHaveLength(46);

    const [finished] = await service.listWorkspaces(created.id);
    expect(finished!.state).toBe("completed");
    expect(finished!.steps.map((step) => [step.step_index, step.outcome])).toEqual([
      [0, "run"],
      [1, "run"],
      [2, "run"],
    ]);
  });
});

describe("a fully cached workspace", () => {
  it("is completed at its run's creation with what its job writes, and queues no task", async () => {
    const codeHosts = () => [{ type: "directory" as const, path: root }];
    const environment = () =>
      testEnvironment(scratch.path, {
        containerRuntime: null,
        outerEnvironment: { PATH: process.env.PATH },
      });
    const service = new BatchRunService({ database, codeHosts, environment: environment() });
    // Budgets that cannot say what a run not made yet would find: its workspaces run as jobs.
    const jobService = new BatchRunService({
      database,
      codeHosts,
      environment: environment(),
      budgets: { runBudgetReached: async () => null },
    });
    const jobEnvironment = environment();
    const job = new WorkspaceJob({
      store: new RunStore(database),
      cache: new DatabaseStepCache(database.db),
      environment: jobEnvironment,
      repositories: new RepositorySource({
        codeHosts,
        cacheDirectory: jobEnvironment.directories.cacheDirectory,
      }),
      progressHoldMs: 600_000,
    });
    const runJobs = async (runId: string) => {
      for (const workspace of await service.listWorkspaces(runId)) {
        await job.run(workspace.id, { workerId: "test", signal: new AbortController().signal });
      }
    };
    const request = { source: threeSteps, options: { runtime: "local" as const } };
    // The cold run fills the cache; nothing of it is complete when it is made.
    const cold = await service.createRun(request);
    expect(cold.status).toBe("queued");
    await runJobs(cold.id);

    const viaJob = await jobService.createRun(request);
    const jobStatements = countStatements(database);
    await runJobs(viaJob.id);
    jobStatements.stop();

    const tasksBefore = await database.db.select({ id: tasks.id }).from(tasks);
    const statements = countStatements(database);
    const created = await service.createRun(request);
    statements.stop();
    expect(await database.db.select({ id: tasks.id }).from(tasks)).toHaveLength(tasksBefore.length);
    expect(created.status).toBe("completed");
    // What the job would have written, in the run's creation: a run of one workspace of three
    // steps sends no more statements than that workspace's job did.
    expect(statements.texts.filter((text) => text === "BEGIN")).toHaveLength(1);
    expect(statements.texts.length).toBeLessThanOrEqual(jobStatements.texts.length);

    const told = async (runId: string) => {
      const events = await readRunEvents(database.db, runId, 0);
      return events.map(({ event }) => event);
    };
    const expected = await told(viaJob.id);
    expect(expected.map(label)).toEqual([
      "run_started",
      "workspace_started",
      "step_finished 0",
      "step_finished 1",
      "step_finished 2",
      "workspace_finished",
      "changeset",
      "run_finished",
    ]);
    expect(await told(created.id)).toEqual(expected);

    const store = new RunStore(database);
    const withoutIds = async (runId: string) => {
      const run = await service.getRun(runId);
      const workspaces = await service.listWorkspaces(runId);
      const changesets = await service.listChangesets(runId);
      return {
        run: {
          status: run.status,
          error: run.error,
          stats: run.stats,
          started: run.started_at !== null,
        },
        workspaces: workspaces.map((workspace) => ({
          state: workspace.state,
          error: workspace.error,
          steps: workspace.steps.map(({ finished_at, ...step }) => ({
            ...step,
            finished: finished_at !== null,
          })),
        })),
        diffs: await Promise.all(
          workspaces.map(async (workspace) => (await store.workspaceRow(workspace.id)).diff),
        ),
        changesets: changesets.map(({ id, batch_run_id, workspace_id, ...rest }) =>
          Object.fromEntries(Object.entries(rest).filter(([key]) => !key.endsWith("_at"))),
        ),
      };
    };
    expect(await withoutIds(created.id)).toEqual(await withoutIds(viaJob.id));
    const [workspace] = await service.listWorkspaces(created.id);
    expect(workspace!.steps.map((step) => step.outcome)).toEqual(["cached", "cached", "cached"]);
  });
});

describe("a run with some workspaces cached", () => {
  it("completes the fully cached ones at creation and queues jobs for the rest", async () => {
    const codeHosts = () => [{ type: "directory" as const, path: root }];
    const environment = () =>
      testEnvironment(scratch.path, {
        containerRuntime: null,
        outerEnvironment: { PATH: process.env.PATH },
      });
    const service = new BatchRunService({ database, codeHosts, environment: environment() });
    const jobEnvironment = environment();
    const job = new WorkspaceJob({
      store: new RunStore(database),
      cache: new DatabaseStepCache(database.db),
      environment: jobEnvironment,
      repositories: new RepositorySource({
        codeHosts,
        cacheDirectory: jobEnvironment.directories.cacheDirectory,
      }),
    });
    const runJobs = async (runId: string) => {
      for (const workspace of await service.listWorkspaces(runId)) {
        if (workspace.state !== "pending") continue;
        await job.run(workspace.id, { workerId: "test", signal: new AbortController().signal });
      }
    };
    const request = { source: threeSteps, options: { runtime: "local" as const } };
    await runJobs((await service.createRun(request)).id);
    repositoryAt(join(root, "github.com/acme/web"), { "README.md": "# web\n" });

    const mixed = await service.createRun(request);
    // Started by the workspace that is complete, as its job would have started it.
    expect(mixed.status).toBe("running");
    const states = async (runId: string) =>
      Object.fromEntries(
        (await service.listWorkspaces(runId)).map((workspace) => [
          workspace.repository,
          workspace.state,
        ]),
      );
    expect(await states(mixed.id)).toEqual({
      "github.com/acme/api": "completed",
      "github.com/acme/web": "pending",
    });
    // The queue's tasks of this run's workspaces: only the one left to run has one.
    const ofRun = await service.listWorkspaces(mixed.id);
    const queued = (await database.db.select({ payload: tasks.payload }).from(tasks))
      .map(({ payload }) => (payload as { workspace_id: string }).workspace_id)
      .filter((id) => ofRun.some((workspace) => workspace.id === id));
    expect(queued).toEqual(
      ofRun.filter((workspace) => workspace.state === "pending").map(({ id }) => id),
    );
    await runJobs(mixed.id);
    const finished = await service.getRun(mixed.id);
    expect(finished.status).toBe("completed");
    expect(finished.stats).toMatchObject({
      completed: 2,
      changesets: 2,
      steps_cached: 3,
      steps_run: 3,
    });
    const types = (await readRunEvents(database.db, mixed.id, 0)).map(({ event }) => event.type);
    expect(types.filter((type) => type === "run_finished")).toHaveLength(1);
    expect(types.at(-1)).toBe("run_finished");

    // Its first steps cached and its last not: its job runs the last step.
    const changedLast = threeSteps.replace("echo three", "echo four");
    const resumed = await service.createRun({ ...request, source: changedLast });
    expect(resumed.status).toBe("queued");
    expect(Object.values(await states(resumed.id))).toEqual(["pending", "pending"]);
    // A run that clears the cache runs every workspace.
    const cleared = await service.createRun({
      ...request,
      options: { ...request.options, clear_cache: true },
    });
    expect(Object.values(await states(cleared.id))).toEqual(["pending", "pending"]);
  });
});

function label(event: BatchRunEvent): string {
  return "step_index" in event ? `${event.type} ${event.step_index}` : event.type;
}
