import { join } from "node:path";
import { createDb, type DbHandle } from "@deckhand/db";
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

describe("a fully cached workspace job", () => {
  it("writes its whole end in one transaction: what completing it at run creation must match", async () => {
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
      progressHoldMs: 600_000,
    });
    const runOnce = async () => {
      const created = await service.createRun({
        source: threeSteps,
        options: { runtime: "local" },
      });
      const [workspace] = await service.listWorkspaces(created.id);
      const statements = countStatements(database);
      await job.run(workspace!.id, { workerId: "test", signal: new AbortController().signal });
      statements.stop();
      return { runId: created.id, statements: statements.texts };
    };
    const cold = await runOnce();
    const cached = await runOnce();

    const events = await readRunEvents(database.db, cached.runId, 0);
    const writes = new Map<string, string[]>();
    for (const { created_at, event } of events) {
      writes.set(created_at, [...(writes.get(created_at) ?? []), label(event)]);
    }
    // The run's creation, then the job's one write: no step starts, each step's end says cached.
    expect([...writes.values()]).toEqual([
      ["run_started"],
      [
        "workspace_started",
        "step_finished 0",
        "step_finished 1",
        "step_finished 2",
        "workspace_finished",
        "changeset",
        "run_finished",
      ],
    ]);
    const cachedEnds = events.filter(({ event }) => event.type === "step_finished");
    expect(cachedEnds.map(({ event }) => event)).toEqual(
      [0, 1, 2].map((index) =>
        expect.objectContaining({
          step_index: index,
          outcome: "cached",
          exit_code: null,
          duration_ms: 0,
        }),
      ),
    );
    const coldEvents = await readRunEvents(database.db, cold.runId, 0);
    const changesetOf = (list: typeof events) =>
      list.find(({ event }) => event.type === "changeset")?.event;
    expect(changesetOf(events)).toEqual(changesetOf(coldEvents));
    // The job's row, its claim, its start (the run running, earlier step rows gone), the cache
    // looked up once, then one transaction: the workspace's end, the log (its lock, the events,
    // the notice), the step rows, the changeset, the run's end (its lock, three counts, the
    // update, the summary's three reads, the log again).
    expect(cached.statements.filter((text) => text === "BEGIN")).toHaveLength(1);
    expect(cached.statements, cached.statements.join("\n")).toHaveLength(23);

    const [finished] = await service.listWorkspaces(cached.runId);
    expect(finished!.state).toBe("completed");
    expect(finished!.steps.map((step) => [step.step_index, step.outcome, step.started_at])).toEqual(
      [
        [0, "cached", null],
        [1, "cached", null],
        [2, "cached", null],
      ],
    );
    const run = await service.getRun(cached.runId);
    expect(run.status).toBe("completed");
    expect(run.stats).toMatchObject({ completed: 1, changesets: 1, steps_run: 0, steps_cached: 3 });
  });
});

function label(event: BatchRunEvent): string {
  return "step_index" in event ? `${event.type} ${event.step_index}` : event.type;
}
