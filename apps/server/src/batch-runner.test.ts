import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import type { StoredBatchRunEvent } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import { HttpError, type RunningBatchRunner, startBatchRunner } from "./batch-runner.ts";
import { resolveServerConfig } from "./config.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "deckhand-batch-runner-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A git repository with one file, under a directory code host. */
function codeHost(): string {
  const code = tempDir();
  const repository = join(code, "github.com/acme/one");
  mkdirSync(repository, { recursive: true });
  writeFileSync(join(repository, "README.md"), "the old way\n");
  const git = (...args: string[]) =>
    execFileSync("git", args, {
      cwd: repository,
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: "t",
        GIT_AUTHOR_EMAIL: "t@example.com",
        GIT_COMMITTER_NAME: "t",
        GIT_COMMITTER_EMAIL: "t@example.com",
      },
    });
  git("init", "-q");
  git("add", "-A");
  git("commit", "-qm", "init");
  return code;
}

async function start(dataDir: string): Promise<RunningBatchRunner> {
  const config = resolveServerConfig(
    { listen: "127.0.0.1:0", dataDir, workspaceAgent: false, logLevel: "silent" },
    { environment: {} },
  );
  const runner = await startBatchRunner(
    { ...config, sandbox: { ...config.sandbox, mode: "none" }, batchConcurrency: 1 },
    { logDestination: new PassThrough() },
  );
  cleanups.push(() => runner.close());
  return runner;
}

/** The run's events from the feed, up to its `run_finished`. */
function eventsOf(runner: RunningBatchRunner, runId: string): Promise<StoredBatchRunEvent[]> {
  return new Promise((resolveEvents, rejectEvents) => {
    const events: StoredBatchRunEvent[] = [];
    const subscription = runner.api.events.subscribe({
      key: runId,
      afterId: 0,
      deliver: (event) => {
        events.push(event);
        if (event.event.type === "run_finished") {
          subscription.close();
          resolveEvents(events);
        }
      },
      onError: rejectEvents,
    });
  });
}

const listeningSockets = () =>
  process.getActiveResourcesInfo().filter((resource) => resource === "TCPServerWrap").length;

describe("the batch runner", () => {
  it("runs a spec through the run API in-process, listening on no socket", async () => {
    const code = codeHost();
    const before = listeningSockets();
    const runner = await start(tempDir());
    expect(listeningSockets()).toBe(before);
    const run = await runner.api.createBatchRun({
      source: `name: sed-one
on:
  - repository: github.com/acme/one
steps:
  - run: sed -i 's/old/new/' README.md
    container: alpine:3
changesetTemplate:
  title: Replace old
  branch: batch/sed-one
  commit:
    message: Replace old
`,
      file: "sed.yaml",
      action: "preview",
      options: { code_host_directories: [code], runtime: "local" },
    });
    expect(run).toMatchObject({ name: "sed-one", action: "preview" });
    const events = await eventsOf(runner, run.id);
    expect(events.at(-1)?.event).toMatchObject({
      type: "run_finished",
      status: "completed",
      summary: { workspaces: 1, changesets: 1, steps_run: 1, failed: 0 },
    });
    const { changesets } = await runner.api.listBatchRunChangesets(run.id);
    expect(changesets).toHaveLength(1);
    expect(JSON.stringify(changesets[0])).toContain("+the new way");
    expect(listeningSockets()).toBe(before);
  }, 120_000);

  it("refuses an invalid spec as the route does: a 400 with the located problems", async () => {
    const runner = await start(tempDir());
    const refusal = await runner.api
      .createBatchRun({ source: "name: [\n", file: "bad.yaml", action: "preview", options: {} })
      .catch((error: unknown) => error);
    expect(HttpError.isInstance(refusal)).toBe(true);
    expect(refusal).toMatchObject({ status: 400, code: "invalid_request" });
    expect((refusal as Error).message).toMatch(/^bad\.yaml is invalid:\nbad\.yaml:\d+:\d+: /);
  });
});
