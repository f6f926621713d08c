// The apply job through the run service, on PGlite: changesets of different repositories are
// applied side by side, and stored in the order of their workspaces whichever finishes first.
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createDb, type DbHandle, TaskRegistry, TaskWorker } from "@deckhand/db";
import { gitIn } from "@deckhand/testkit";
import type { BatchRun } from "@deckhand/wire";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, temporaryDirectory, testEnvironment } from "../test/support.ts";
import { readRunEvents } from "./batch-run-events.ts";
import { BatchRunService } from "./batch-run-service.ts";

const NAMES = ["api", "docs", "web"];

let scratch: ReturnType<typeof temporaryDirectory>;
let root: string;
let database: DbHandle;
let service: BatchRunService;
let worker: TaskWorker;

/** The bare origin of repository `name`. */
const originOf = (name: string) => join(scratch.path, "origins", `${name}.git`);

beforeEach(async () => {
  scratch = temporaryDirectory();
  root = join(scratch.path, "code");
  for (const name of NAMES) {
    const placed = repositoryAt(join(root, `github.com/acme/${name}`), {
      "README.md": `# ${name}\n`,
    });
    gitIn(scratch.path, "clone", "--quiet", "--bare", placed.path, originOf(name));
    placed.git("remote", "add", "origin", originOf(name));
  }
  database = await createDb({ dataDir: "memory://" });
  service = new BatchRunService({
    database,
    codeHosts: () => [{ type: "directory", path: root }],
    environment: testEnvironment(scratch.path, {
      containerRuntime: null,
      outerEnvironment: { PATH: process.env.PATH },
    }),
  });
  const registry = new TaskRegistry();
  service.register(registry);
  worker = new TaskWorker({ database, registry, concurrency: 2, pollIntervalMs: 50 });
  void worker.start();
});

afterEach(async () => {
  await worker.stop();
  await database.close();
  scratch.remove();
});

async function finished(runId: string, timeoutMs: number): Promise<BatchRun> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await service.getRun(runId);
    if (run.status !== "queued" && run.status !== "running") return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 50));
  }
}

describe("the apply job", () => {
  it("applies changesets of different repositories at once, and stores them in workspace order", async () => {
    // api's origin accepts the push only once docs' origin has the branch: applied one after
    // another, api's push would wait for docs' and then fail.
    const waitsForDocs = join(originOf("api"), "hooks", "pre-receive");
    writeFileSync(
      waitsForDocs,
      `#!/bin/sh
cat >/dev/null
deadline=$(( $(date +%s) + 90 ))
while [ "$(date +%s)" -lt "$deadline" ]; do
  [ -f '${originOf("docs")}/refs/heads/greet' ] && exit 0
  sleep 0.05
done
echo "docs was not pushed while api waited" >&2
exit 1
`,
    );
    chmodSync(waitsForDocs, 0o755);
    const created = await service.createRun({
      source: `name: greet
on:
  - repositoriesMatchingQuery: repo:acme
steps:
  - run: echo hello > HELLO.md
    container: alpine:3
changesetTemplate:
  title: Greet
  branch: greet
  commit:
    message: greet
`,
      action: "apply",
      options: { push: true },
    });
    const run = await finished(created.id, 150_000);
    expect(run.error).toBeNull();
    expect(run.status).toBe("completed");
    const applied = (await readRunEvents(database.db, run.id, 0))
      .map((entry) => entry.event)
      .filter((event) => event.type === "changeset_applied");
    // docs was pushed before api, and the events still follow the workspaces.
    expect(applied.map((event) => [event.workspace.repository, event.operation])).toEqual(
      NAMES.map((name) => [`github.com/acme/${name}`, "created"]),
    );
    for (const name of NAMES) {
      expect(gitIn(originOf(name), "show", "greet:HELLO.md")).toBe("hello");
    }
    const changesets = await service.listChangesets(run.id);
    expect(changesets.map((changeset) => [changeset.repository, changeset.pushed])).toEqual(
      NAMES.map((name) => [`github.com/acme/${name}`, true]),
    );
  }, 200_000);
});
