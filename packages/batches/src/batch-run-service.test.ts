import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { createDb, type DbHandle, TaskRegistry, TaskWorker } from "@deckhand/db";
import { fakeCodexDirective, startFakeCodexRelease, startFakeModel, turn } from "@deckhand/testkit";
import type { BatchRun } from "@deckhand/wire";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readRunEvents } from "./batch-run-events.ts";
import { BatchRunService } from "./batch-run-service.ts";
import { BatchesError } from "./batches-error.ts";
import { repositoryAt, temporaryDirectory } from "./test-fixtures.ts";

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
    // The steps name an image; these tests run them with sh (the container runtime has its own).
    containerRuntime: null,
    codeHosts: () => [{ type: "directory", path: root }],
    cacheDirectory: join(scratch.path, "cache"),
    workDirectory: join(scratch.path, "work"),
    outerEnvironment: { PATH: process.env.PATH },
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

async function finished(runId: string, timeoutMs = 30_000): Promise<BatchRun> {
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
    expect(failed.stats).toMatchObject({ completed: 2, failed: 1, changesets: 2 });
    const workspaces = await service.listWorkspaces(failed.id);
    const web = workspaces.find((workspace) => workspace.repository === "github.com/acme/web")!;
    expect(web.state).toBe("failed");
    expect(web.error).toContain("exit code 3");
    expect(web.error).toContain("broken");
    const step = await service.getStep(web.id, 0);
    expect(step.step).toMatchObject({ outcome: "failed", exit_code: 3 });
    expect(step.stderr).toContain("broken");

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
    const deadline = Date.now() + 10_000;
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
      if (Date.now() - started > 10_000) throw new Error("the step was not stopped");
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
    const events = await readRunEvents(database.db, created.id, 0);
    expect(events.filter((event) => event.event.type === "run_finished")).toHaveLength(1);
  });

  it("refuses an invalid spec with every problem located", async () => {
    const error = await service
      .createRun({ source: "name: x\nsteps: 3\n", file: "bad.yaml" })
      .catch((caught: unknown) => caught);
    expect(BatchesError.isInstance(error)).toBe(true);
    expect((error as BatchesError).code).toBe("invalid_spec");
    expect((error as BatchesError).message).toMatch(/bad\.yaml:2:\d+: steps/);
  });

  it("resolves the workspaces a spec would run in without running anything", async () => {
    const resolved = await service.resolve({ source: spec("echo") });
    expect(resolved.workspaces.map((workspace) => workspace.repository)).toEqual([
      "github.com/acme/api",
      "github.com/acme/docs",
      "github.com/acme/web",
    ]);
    expect(await service.listRuns()).toEqual([]);
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
        containerRuntime: null,
        codeHosts: () => [{ type: "directory", path: root }],
        cacheDirectory: join(scratch.path, "cache"),
        workDirectory: join(scratch.path, "work"),
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
        agentInstallDirectory: agents,
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
