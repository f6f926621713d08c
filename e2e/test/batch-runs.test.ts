// Batch runs end to end, on repositories made with real git in a temporary code host: the
// `deckhand batch preview|apply` command as a process (with its own in-process server, or
// --server), and the batch-run API and run stream of a running `deckhand up`.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createTempRepository, gitIn, type SpawnedService } from "@deckhand/testkit";
import {
  type BatchRun,
  type BatchRunStreamFrame,
  BatchRunStreamFrameSchema,
  type CreateBatchRunRequest,
  ServerPath,
  type StoredBatchChangeset,
  type StoredBatchRunEvent,
  serverPath,
  WireEnv,
  WireSubprotocol,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { repositoryRoot, spawnDeckhandUp } from "./deckhand-up.ts";

const cliEntry = join(repositoryRoot, "apps/cli/src/bin.ts");
const SERVICES = 20;
/** The services whose package.json depends on left-pad: every fourth. */
const LEFT_PAD = [0, 4, 8, 12, 16].map((index) => service(index));

let scratch: string;
let code: string;
/** The data directory of the CLI's own (in-process) server, shared by the CLI tests. */
let cliData: string;
let upData: string;
let up: SpawnedService;
let starting: Promise<SpawnedService> | undefined;
const children = new Set<ChildProcess>();

function service(index: number): string {
  return `github.com/acme/svc-${String(index).padStart(2, "0")}`;
}

/** A repository with one commit of `files` on main, placed in the code host as `name`. */
function repository(name: string, files: Record<string, string>): void {
  const made = createTempRepository(files);
  const path = join(code, name);
  mkdirSync(dirname(path), { recursive: true });
  renameSync(made.path, path);
}

function git(name: string, ...args: string[]): string {
  return gitIn(join(code, name), ...args);
}

/** This machine's environment without anything that would point a process at another Deckhand. */
function cleanEnvironment(): NodeJS.ProcessEnv {
  const environment = { ...process.env };
  for (const name of [
    "DATABASE_URL",
    WireEnv.adminToken,
    WireEnv.serverDataDir,
    WireEnv.serverListen,
    WireEnv.serverLogLevel,
  ]) {
    delete environment[name];
  }
  return environment;
}

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout's JSON lines, parsed. */
  lines: Record<string, unknown>[];
}

interface CliRun {
  child: ChildProcess;
  /** Resolves once a stdout line satisfies `predicate`. */
  lineMatching(predicate: (line: Record<string, unknown>) => boolean): Promise<void>;
  done: Promise<CliResult>;
}

/** `deckhand <args>` from the sources, as a process, in the scratch directory. */
function startCli(args: string[]): CliRun {
  const child = spawn(process.execPath, ["--conditions=source", cliEntry, ...args], {
    cwd: scratch,
    env: cleanEnvironment(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stdout = "";
  let stderr = "";
  const waiters: (() => void)[] = [];
  child.stdout!.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
    for (const wake of waiters.splice(0)) wake();
  });
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const parse = () =>
    stdout
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  const done = new Promise<CliResult>((resolveDone) =>
    child.once("close", (exitCode) => {
      children.delete(child);
      for (const wake of waiters.splice(0)) wake();
      resolveDone({ code: exitCode, stdout, stderr, lines: parse() });
    }),
  );
  return {
    child,
    done,
    async lineMatching(predicate) {
      while (!parse().some(predicate)) {
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${stderr}`);
        await new Promise<void>((wake) => waiters.push(wake));
      }
    },
  };
}

function cli(args: string[]): Promise<CliResult> {
  return startCli(args).done;
}

function writeSpec(name: string, text: string): string {
  writeFileSync(join(scratch, name), text);
  return name;
}

/** The options every in-process run here takes: the code host, the shared data dir, small and local. */
const local = () => [
  "--code-host",
  code,
  "--data-dir",
  cliData,
  "--runtime",
  "local",
  "-j",
  "2",
  "--json",
];

function ofType(result: CliResult, type: string): Record<string, unknown>[] {
  return result.lines.filter((line) => line.type === type);
}

async function api<Body>(method: string, path: string, body?: unknown): Promise<Body> {
  const response = await fetch(`${up.url}${path}`, {
    method,
    ...(body !== undefined
      ? { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }
      : {}),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as Body;
}

/**
 * Reads a run's stream from `after` until `stop` says so (given the events so far), then
 * closes it; the events in the order they came.
 */
function readStream(
  runId: string,
  after: number,
  stop: (events: StoredBatchRunEvent[]) => boolean,
): Promise<StoredBatchRunEvent[]> {
  const url = `${up.url.replace(/^http/, "ws")}${serverPath(ServerPath.batchRunStream, { batch_run_id: runId })}${after > 0 ? `?after=${after}` : ""}`;
  return new Promise((resolveRead, rejectRead) => {
    const socket = new WebSocket(url, [WireSubprotocol.batchRunStream]);
    const events: StoredBatchRunEvent[] = [];
    const timer = setTimeout(() => {
      socket.terminate();
      rejectRead(new Error(`stream read timed out after ${events.length} events`));
    }, 60_000);
    socket.on("message", (data) => {
      const frame: BatchRunStreamFrame = BatchRunStreamFrameSchema.parse(JSON.parse(String(data)));
      if (frame.type === "error") rejectRead(new Error(frame.error.message));
      if (frame.type !== "event") return;
      events.push(frame.event);
      if (stop(events)) {
        clearTimeout(timer);
        socket.close();
        resolveRead(events);
      }
    });
    socket.once("error", rejectRead);
  });
}

const finished = (events: StoredBatchRunEvent[]) => events.at(-1)?.event.type === "run_finished";

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "deckhand-e2e-batch-"));
  code = join(scratch, "code");
  cliData = join(scratch, "cli-data");
  upData = join(scratch, "up-data");
  mkdirSync(upData);
  writeFileSync(
    join(upData, "config.json"),
    JSON.stringify({ codeHosts: [{ type: "directory", path: code }], batchConcurrency: 2 }),
  );
  // The server starts while the repositories are made; it reads the code host at each run.
  starting = spawnDeckhandUp(upData, cleanEnvironment());
  starting.catch(() => {});
  for (let index = 0; index < SERVICES; index++) {
    const files: Record<string, string> = { "README.md": `# ${service(index)}\n` };
    if (index % 4 === 0) {
      files["package.json"] = `{"name":"svc-${index}","dependencies":{"left-pad":"1.3.0"}}\n`;
    } else if (index % 4 === 1) {
      files["package.json"] = `{"name":"svc-${index}","dependencies":{"right-pad":"1.0.0"}}\n`;
    } else if (index % 4 === 2) {
      // left-pad, but not in a package.json: the query's file: filter leaves it out.
      files["NOTES.md"] = "we once used left-pad\n";
    }
    repository(service(index), files);
  }
  repository("github.com/acme/mono", {
    "README.md": "# mono\n",
    "packages/a/package.json": '{"name":"a"}\n',
    "packages/b/package.json": '{"name":"b"}\n',
    "tools/c/package.json": '{"name":"c"}\n',
    "docs/README.md": "# docs\n",
  });
  repository("github.com/acme/app-1", { "README.md": "# app 1\n" });
  repository("github.com/acme/app-2", { "README.md": "# app 2\n" });
  up = await starting;
}, 120_000);

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  const server = await starting?.catch(() => undefined);
  if (server !== undefined && server.child.exitCode === null) {
    server.child.kill("SIGTERM");
    await server.exited;
  }
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

describe("deckhand batch preview, with its own server", () => {
  it("turns a version 1 run spec over 20 repositories into 20 changesets", async () => {
    const spec = writeSpec(
      "footer.yaml",
      `name: readme-footer
on:
  - repositoriesMatchingQuery: repo:^github\\.com/acme/svc-
steps:
  - run: echo "Maintained by the platform team" >> README.md
    container: alpine:3
changesetTemplate:
  title: Add a footer to \${{ repository.name }}
  body: Adds the maintainers' footer.
  branch: batch/readme-footer
  commit:
    message: Add a footer to the README
`,
    );
    const result = await cli(["batch", "preview", spec, ...local()]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.lines[0]).toMatchObject({ type: "batch_run", name: "readme-footer" });
    const changesets = ofType(result, "changeset");
    expect(changesets.map((changeset) => changeset.repository).sort()).toEqual(
      Array.from({ length: SERVICES }, (_, index) => service(index)),
    );
    for (const changeset of changesets) {
      const name = changeset.repository as string;
      expect(changeset).toMatchObject({
        path: "",
        base_branch: "main",
        base_revision: git(name, "rev-parse", "HEAD"),
        branch: "batch/readme-footer",
        title: `Add a footer to ${name}`,
        body: "Adds the maintainers' footer.",
        commit_message: "Add a footer to the README",
        published: null,
        stats: { files: 1, insertions: 1, deletions: 0 },
      });
      expect(changeset.diff).toContain("--- a/README.md\n+++ b/README.md\n");
      expect(changeset.diff).toContain(`\n # ${name}\n+Maintained by the platform team\n`);
    }
    expect(result.lines.at(-1)).toEqual({
      type: "summary",
      workspaces: 20,
      changesets: 20,
      steps_run: 20,
      steps_cached: 0,
      failed: 0,
      status: "completed",
    });
    // A preview writes nothing into the repositories.
    expect(git(service(3), "branch", "--list", "batch/*")).toBe("");
  }, 180_000);

  it("runs no step when the same spec runs again: every result comes from the step cache", async () => {
    const spec = writeSpec(
      "cached.yaml",
      `name: cached
on:
  - repositoriesMatchingQuery: repo:svc-0[0-4]$
steps:
  - run: echo cached >> README.md
    container: alpine:3
  - run: echo twice >> README.md
    container: alpine:3
changesetTemplate:
  title: Cached
  body: Twice
  branch: batch/cached
  commit:
    message: cached
`,
    );
    const first = await cli(["batch", "preview", spec, ...local()]);
    expect(first.code).toBe(0);
    expect(first.lines.at(-1)).toMatchObject({ workspaces: 5, steps_run: 10, steps_cached: 0 });
    // Before anything runs again, `batch workspaces` says every step would come from the cache
    // of a run with the same runtime (where a step runs is part of its cache key).
    const listed = await cli([
      "batch",
      "workspaces",
      spec,
      ...["--code-host", code, "--data-dir", cliData, "--runtime", "local", "--json"],
    ]);
    expect(listed.code).toBe(0);
    expect(
      listed.lines.filter((line) => line.type === "workspace").map((line) => line.cached_steps),
    ).toEqual(Array(5).fill(2));
    const second = await cli(["batch", "preview", spec, ...local()]);
    expect(second.stderr).toBe("");
    expect(second.code).toBe(0);
    expect(ofType(second, "step_started")).toEqual([]);
    expect(ofType(second, "step_finished").map((line) => line.outcome)).toEqual(
      Array(10).fill("cached"),
    );
    expect(second.lines.at(-1)).toEqual({
      type: "summary",
      workspaces: 5,
      changesets: 5,
      steps_run: 0,
      steps_cached: 10,
      failed: 0,
      status: "completed",
    });
    // The same changesets, diffs included.
    const diffs = (result: CliResult) =>
      ofType(result, "changeset")
        .map((line) => `${line.repository}\n${line.diff}`)
        .sort();
    expect(diffs(second)).toEqual(diffs(first));
  }, 120_000);

  it("says to use --server when deckhand up holds the data directory", async () => {
    const spec = writeSpec(
      "locked.yaml",
      "name: locked\non:\n  - repository: github.com/acme/app-1\n",
    );
    const result = await cli(["batch", "preview", spec, "--data-dir", upData, "--json"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/is in use by deckhand process \d+/);
    expect(result.stderr).toContain("with --server");
  });
});

describe("deckhand batch apply", () => {
  const license = (text: string) => `name: app-license
on:
  - repository: github.com/acme/app-1
  - repository: github.com/acme/app-2
steps:
  - run: echo "${text}" > LICENSE
    container: alpine:3
changesetTemplate:
  title: Add a license
  body: Adds the license file.
  branch: batch/license
  commit:
    message: Add a LICENSE file
`;

  it("writes each changeset as a branch, and a re-apply keeps a commit a person added", async () => {
    const first = await cli([
      "batch",
      "apply",
      writeSpec("license.yaml", license("Apache-2.0")),
      ...local(),
    ]);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    const applied = ofType(first, "changeset_applied");
    expect(
      applied.map((line) => [
        (line.workspace as { repository: string }).repository,
        line.operation,
      ]),
    ).toEqual([
      ["github.com/acme/app-1", "created"],
      ["github.com/acme/app-2", "created"],
    ]);
    // The run ends after the apply job: applied, then run_finished, then the summary.
    expect(first.lines.slice(-2).map((line) => line.type)).toEqual(["run_finished", "summary"]);
    expect(first.lines.at(-1)).toMatchObject({ status: "completed", applied: 2, apply_failed: 0 });
    for (const name of ["github.com/acme/app-1", "github.com/acme/app-2"]) {
      expect(git(name, "show", "batch/license:LICENSE")).toBe("Apache-2.0");
      expect(git(name, "log", "--format=%s", "main..batch/license")).toBe("Add a LICENSE file");
      // The working copy stays on main, untouched.
      expect(git(name, "rev-parse", "--abbrev-ref", "HEAD")).toBe("main");
      expect(git(name, "status", "--porcelain")).toBe("");
    }

    // A reviewer adds a commit on app-1's branch.
    const worktree = join(scratch, "review");
    git("github.com/acme/app-1", "worktree", "add", "--quiet", worktree, "batch/license");
    writeFileSync(join(worktree, "REVIEW.md"), "looks good\n");
    gitIn(worktree, "add", "REVIEW.md");
    gitIn(worktree, "commit", "--quiet", "-m", "Review notes");
    const reviewCommit = gitIn(worktree, "rev-parse", "HEAD");
    git("github.com/acme/app-1", "worktree", "remove", worktree);

    // The spec changes; applying it again replaces Deckhand's commit and keeps the reviewer's.
    const second = await cli([
      "batch",
      "apply",
      writeSpec("license.yaml", license("MIT")),
      ...local(),
    ]);
    expect(second.stderr).toBe("");
    expect(second.code).toBe(0);
    const reapplied = ofType(second, "changeset_applied").find(
      (line) => (line.workspace as { repository: string }).repository === "github.com/acme/app-1",
    )!;
    expect(reapplied.operation).toBe("updated");
    expect(reapplied.kept_commits).toHaveLength(1);
    expect(
      git("github.com/acme/app-1", "log", "--format=%s", "main..batch/license").split("\n"),
    ).toEqual(["Review notes", "Add a LICENSE file"]);
    expect(git("github.com/acme/app-1", "show", "batch/license:LICENSE")).toBe("MIT");
    expect(git("github.com/acme/app-1", "show", "batch/license:REVIEW.md")).toBe("looks good");
    // Replayed, so a new commit with the reviewer's message and author.
    expect(git("github.com/acme/app-1", "rev-parse", "batch/license")).not.toBe(reviewCommit);
    expect(git("github.com/acme/app-2", "show", "batch/license:LICENSE")).toBe("MIT");
  }, 180_000);
});

describe("batch runs on a running deckhand up", () => {
  async function runToEnd(request: CreateBatchRunRequest) {
    const run = await api<BatchRun>("POST", ServerPath.batchRuns, request);
    const events = await readStream(run.id, 0, finished);
    const { changesets } = await api<{ changesets: StoredBatchChangeset[] }>(
      "GET",
      serverPath(ServerPath.batchRunChangesets, { batch_run_id: run.id }),
    );
    return { run, events, changesets };
  }

  it("picks exactly the repositories a file: query with a content pattern matches", async () => {
    const { events, changesets } = await runToEnd({
      source: `name: left-pad
on:
  - repositoriesMatchingQuery: file:package\\.json$ left-pad
steps:
  - run: echo "drop left-pad" > MIGRATION.md
    container: alpine:3
changesetTemplate:
  title: Drop left-pad
  body: Replaces left-pad with String.prototype.padStart.
  branch: batch/drop-left-pad
  commit:
    message: Drop left-pad
`,
      file: "left-pad.yaml",
      options: { runtime: "local", parallelism: 2 },
    });
    expect(events[0]!.event).toEqual({ type: "run_started", workspaces: LEFT_PAD.length });
    expect(events.at(-1)!.event).toMatchObject({ type: "run_finished", status: "completed" });
    expect(changesets.map((changeset) => changeset.repository).sort()).toEqual(LEFT_PAD);
  }, 120_000);

  it("gives one changeset per project of a monorepo, through deckhand batch preview --server", async () => {
    const spec = writeSpec(
      "mono.yaml",
      `name: mono-notes
on:
  - repository: github.com/acme/mono
workspaces:
  - rootAtLocationOf: package.json
    in: github.com/acme/mono
steps:
  - run: echo "notes for \${{ steps.path }}" > NOTES.md
    container: alpine:3
changesetTemplate:
  title: Notes for \${{ steps.path }}
  body: Adds notes.
  branch: batch/notes-\${{ steps.path }}
  commit:
    message: Add notes
`,
    );
    const result = await cli([
      "batch",
      "preview",
      spec,
      "--server",
      up.url,
      "--runtime",
      "local",
      "--json",
    ]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const changesets = ofType(result, "changeset").sort((left, right) =>
      String(left.path).localeCompare(String(right.path)),
    );
    expect(
      changesets.map((changeset) => [changeset.path, changeset.branch, changeset.title]),
    ).toEqual([
      ["packages/a", "batch/notes-packages/a", "Notes for packages/a"],
      ["packages/b", "batch/notes-packages/b", "Notes for packages/b"],
      ["tools/c", "batch/notes-tools/c", "Notes for tools/c"],
    ]);
    for (const changeset of changesets) {
      expect(changeset.diff).toContain(`+++ b/${changeset.path}/NOTES.md\n`);
      expect(changeset.diff).toContain(`+notes for ${changeset.path}\n`);
    }
    expect(result.lines.at(-1)).toMatchObject({ type: "summary", workspaces: 3, changesets: 3 });
  }, 120_000);

  it("resumes a run's stream with ?after= without a gap or a duplicate", async () => {
    const run = await api<BatchRun>("POST", ServerPath.batchRuns, {
      source: `name: chatty
on:
  - repositoriesMatchingQuery: repo:svc-1[0-3]$
steps:
  - run: for i in 1 2 3; do echo "line $i"; sleep 0.2; done; echo chatty >> README.md
    container: alpine:3
changesetTemplate:
  title: Chatty
  body: Talks
  branch: batch/chatty
  commit:
    message: chatty
`,
      options: { runtime: "local", parallelism: 2 },
    } satisfies CreateBatchRunRequest);
    // Read a few events while the run is live, drop the connection, resume after the last one.
    const head = await readStream(run.id, 0, (events) => events.length >= 5 || finished(events));
    expect(finished(head)).toBe(false);
    await new Promise((resolveWait) => setTimeout(resolveWait, 500));
    const tail = await readStream(run.id, head.at(-1)!.id, finished);
    const whole = await readStream(run.id, 0, finished);
    const ids = [...head, ...tail].map((event) => event.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...ids].sort((left, right) => left - right));
    expect([...head, ...tail]).toEqual(whole);
    expect(whole.filter((event) => event.event.type === "step_output").length).toBeGreaterThan(0);
    expect(whole.at(-1)!.event).toMatchObject({ status: "completed" });
  }, 120_000);

  it("exits 1 with the located diagnostics of an invalid spec", async () => {
    const spec = writeSpec("invalid.yaml", "name: broken spec\n");
    const result = await cli(["batch", "preview", spec, "--server", up.url, "--json"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^invalid\.yaml:1:7: name: /);
    expect(result.stderr).toMatch(/\ndeckhand batch preview: invalid\.yaml: 1 problem\n$/);
  });

  it("cancels the run and exits 130 on Ctrl-C", async () => {
    const spec = writeSpec(
      "slow.yaml",
      `name: slow
on:
  - repository: ${service(5)}
steps:
  - run: sleep 60
    container: alpine:3
changesetTemplate:
  title: Slow
  body: Slow
  branch: batch/slow
  commit:
    message: slow
`,
    );
    const started = startCli([
      "batch",
      "preview",
      spec,
      "--server",
      up.url,
      "--runtime",
      "local",
      "--json",
    ]);
    await started.lineMatching((line) => line.type === "step_started");
    started.child.kill("SIGINT");
    const result = await started.done;
    expect(result.code).toBe(130);
    const runId = result.lines[0]!.id as string;
    expect(result.lines.at(-1)).toMatchObject({ type: "summary", status: "cancelled" });
    const run = await api<BatchRun>(
      "GET",
      serverPath(ServerPath.batchRun, { batch_run_id: runId }),
    );
    expect(run.status).toBe("cancelled");
    expect(readFileSync(join(code, service(5), "README.md"), "utf8")).toBe(`# ${service(5)}\n`);
  });
});
