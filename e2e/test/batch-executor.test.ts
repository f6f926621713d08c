// Batch runs on executors (issue #13): `deckhand up` on PostgreSQL with `batchConcurrency: 0`
// runs no workspace job itself; two `deckhand executor` processes claim them from the shared
// queue. One is killed with SIGKILL in the middle of its steps; the other takes its jobs over
// once their leases expire, and the run ends with every workspace completed exactly once.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDb, type DbHandle } from "@deckhand/db";
import {
  createPostgresTestDatabase,
  createTempRepository,
  gitIn,
  type PostgresTestDatabase,
  type SpawnedService,
  testPostgresUrl,
} from "@deckhand/testkit";
import {
  type BatchRun,
  type BatchRunEvent,
  type BatchWorkspace,
  ServerPath,
  type StoredBatchChangeset,
  serverPath,
  WireEnv,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repositoryRoot, spawnDeckhandUp } from "./deckhand-up.ts";
import { waitFor } from "./wait-for.ts";

const REPOSITORIES = 8;
/** Short, so the test waits seconds, not the default 30 s, for the take-over. */
const LEASE_MS = 3_000;

// PGlite lives inside one process: executors on other processes need PostgreSQL.
const title = testPostgresUrl
  ? "deckhand executor on a shared PostgreSQL"
  : "deckhand executor on a shared PostgreSQL (skipped: needs PostgreSQL: set DATABASE_URL; scripts/ci-postgres.sh start prints one)";

interface Executor {
  id: string;
  child: ChildProcess;
  output: string[];
  exited: Promise<unknown>;
}

/** Whether a process runs (a zombie waiting to be reaped does not). */
/**
 * The host pids of the `sleep` processes of the steps an executor runs (their environment names
 * it). Steps run in a sandbox with a process namespace of their own, so the pid a step sees of
 * itself is not the host's: the host's /proc is where to find them.
 */
function stepSleepsOf(executorId: string): number[] {
  const marker = `E2E_EXECUTOR=${executorId}`;
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const command = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0")[0] ?? "";
      if (!command.endsWith("sleep")) continue;
      const environment = readFileSync(`/proc/${entry}/environ`, "utf8").split("\0");
      if (environment.includes(marker)) pids.push(Number(entry));
    } catch {
      // The process ended while being read.
    }
  }
  return pids;
}

function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX]/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

describe.skipIf(!testPostgresUrl)(title, () => {
  let scratch: string;
  let database: PostgresTestDatabase;
  let handle: DbHandle;
  let server: SpawnedService;
  const executors: Executor[] = [];
  let environment: NodeJS.ProcessEnv;
  let code: string;

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), "deckhand-e2e-executors-"));
    database = await createPostgresTestDatabase();
    environment = { ...process.env, DATABASE_URL: database.url };
    for (const name of [
      WireEnv.adminToken,
      WireEnv.serverDataDir,
      WireEnv.serverListen,
      WireEnv.serverLogLevel,
    ]) {
      delete environment[name];
    }
    // Eight small repositories on a directory code host, at the same path for every process
    // (as a shared file system would give machines).
    code = join(scratch, "code");
    for (let index = 0; index < REPOSITORIES; index += 1) {
      const repository = createTempRepository({ "README.md": `# repo-${index}\n` });
      mkdirSync(join(code, "github.com/acme"), { recursive: true });
      renameSync(repository.path, join(code, `github.com/acme/repo-${index}`));
    }
    const config = { codeHosts: [{ type: "directory", path: code }] };
    for (const name of ["server", "exec-a", "exec-b"]) {
      mkdirSync(join(scratch, name));
      writeFileSync(
        join(scratch, name, "config.json"),
        // The server runs no workspace job: only the executors do.
        JSON.stringify(name === "server" ? { ...config, batchConcurrency: 0 } : config),
      );
    }
    server = await spawnDeckhandUp(join(scratch, "server"), environment);
    handle = await createDb({ databaseUrl: database.url, migrate: false, poolSize: 2 });
  }, 120_000);

  afterAll(async () => {
    for (const executor of executors) {
      if (executor.child.exitCode === null && executor.child.signalCode === null) {
        executor.child.kill("SIGKILL");
        await executor.exited;
      }
    }
    if (server && server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
    await handle?.close();
    await database?.drop();
    rmSync(scratch, { recursive: true, force: true });
  });

  async function api<Body>(method: string, path: string, body?: unknown): Promise<Body> {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return JSON.parse(text) as Body;
  }

  async function startExecutor(id: string): Promise<Executor> {
    const child = spawn(
      process.execPath,
      [
        "--conditions=source",
        join(repositoryRoot, "apps/cli/src/bin.ts"),
        "executor",
        "--data-dir",
        join(scratch, id),
        "-j",
        "2",
        "--id",
        id,
        "--lease-ms",
        String(LEASE_MS),
      ],
      // Each executor's steps see which executor runs them (not a secret: it is passed on).
      {
        cwd: repositoryRoot,
        env: { ...environment, E2E_EXECUTOR: id },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const output: string[] = [];
    for (const stream of [child.stdout, child.stderr]) {
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => output.push(...chunk.split("\n").filter(Boolean)));
    }
    const executor = { id, child, output, exited: once(child, "exit") };
    executors.push(executor);
    await waitFor(() => {
      if (child.exitCode !== null) throw new Error(`${id} exited:\n${output.join("\n")}`);
      return output.some((line) => line.includes("deckhand executor ready"));
    }, `${id} to be ready`);
    return executor;
  }

  it("loses no workspace and completes none twice when an executor is killed mid-step", async () => {
    expect(server.output.join("\n")).toContain("this server runs no batch workspace jobs");
    const spec = `
name: executors
on:
  - repositoriesMatchingQuery: repo:^github\\.com/acme/
steps:
  - run: if [ "$E2E_EXECUTOR" = exec-a ]; then sleep 60; else sleep 2; fi; echo \${{ repository.name }} > X
    container: alpine:3
    env:
      - E2E_EXECUTOR
changesetTemplate:
  title: Mark \${{ repository.name }}
  body: Marks the repository
  branch: mark
  commit:
    message: mark
`;
    const victim = await startExecutor("exec-a");
    const survivor = await startExecutor("exec-b");
    const created = await api<BatchRun>("POST", ServerPath.batchRuns, {
      source: spec,
      options: { runtime: "local" },
    });
    expect(created.stats.workspaces).toBe(REPOSITORIES);

    // exec-a is in the middle of its steps: both its slots hold a workspace whose step runs.
    const interrupted = await waitFor(async () => {
      const { rows } = await handle.query<{ id: string; repository: string }>(
        `select w.id, w.repository from workspaces w
           join workspace_steps s on s.workspace_id = w.id
           where w.executor = 'exec-a' and w.status = 'running' and s.outcome = 'running'`,
      );
      return rows.length === 2 ? rows : undefined;
    }, "exec-a to run two steps");
    const victimSteps = await waitFor(() => {
      const mine = stepSleepsOf("exec-a");
      return mine.length === 2 ? mine : undefined;
    }, "exec-a's step processes");
    victim.child.kill("SIGKILL");
    await victim.exited;
    // Its steps die with it (they watch their executor), instead of working on as orphans: long
    // before their minute of sleep is over.
    await waitFor(() => !victimSteps.some(running), "exec-a's steps to die", 60_000);

    const run = await waitFor(
      async () => {
        const current = await api<BatchRun>(
          "GET",
          serverPath(ServerPath.batchRun, { batch_run_id: created.id }),
        );
        return current.status === "queued" || current.status === "running" ? undefined : current;
      },
      "the run to finish",
      120_000,
    );

    expect(run.status, JSON.stringify(run)).toBe("completed");
    expect(run.stats).toMatchObject({
      workspaces: REPOSITORIES,
      completed: REPOSITORIES,
      failed: 0,
      cancelled: 0,
      changesets: REPOSITORIES,
    });
    const { workspaces: list } = await api<{ workspaces: BatchWorkspace[] }>(
      "GET",
      serverPath(ServerPath.batchRunWorkspaces, { batch_run_id: created.id }),
    );
    expect(list).toHaveLength(REPOSITORIES);
    for (const workspace of list) {
      expect(workspace.state, workspace.repository).toBe("completed");
      expect(["exec-a", "exec-b"]).toContain(workspace.executor);
    }
    // The two interrupted workspaces were taken over by exec-b, on their second attempt.
    for (const { id, repository } of interrupted) {
      const workspace = list.find((candidate) => candidate.id === id)!;
      expect(workspace, repository).toMatchObject({ executor: "exec-b", attempts: 2 });
    }

    // The run's log tells each workspace's end once, and the run's once.
    const { rows: events } = await handle.query<{ payload: BatchRunEvent }>(
      "select payload from batch_run_events where batch_run_id = $1 order by id",
      [created.id],
    );
    const ends = events
      .map((row) => row.payload)
      .filter((event) => event.type === "workspace_finished");
    expect(ends.map((event) => event.status)).toEqual(Array(REPOSITORIES).fill("completed"));
    expect(new Set(ends.map((event) => event.workspace.repository)).size).toBe(REPOSITORIES);
    expect(events.filter((row) => row.payload.type === "changeset")).toHaveLength(REPOSITORIES);
    const finished = events.filter((row) => row.payload.type === "run_finished");
    expect(finished).toHaveLength(1);
    expect(finished[0]!.payload).toMatchObject({
      status: "completed",
      summary: { workspaces: REPOSITORIES, changesets: REPOSITORIES, failed: 0 },
    });
    // The interrupted workspaces started twice and ended once.
    for (const { repository } of interrupted) {
      const started = events.filter(
        (row) =>
          row.payload.type === "workspace_started" &&
          row.payload.workspace.repository === repository,
      );
      expect(started, repository).toHaveLength(2);
    }

    // One changeset per workspace, each with that repository's change.
    const { changesets: stored } = await api<{ changesets: StoredBatchChangeset[] }>(
      "GET",
      serverPath(ServerPath.batchRunChangesets, { batch_run_id: created.id }),
    );
    expect(stored).toHaveLength(REPOSITORIES);
    expect(new Set(stored.map((changeset) => changeset.workspace_id)).size).toBe(REPOSITORIES);
    for (const changeset of stored) {
      expect(changeset.title).toBe(`Mark ${changeset.repository}`);
      expect(changeset.branch).toBe("mark");
      expect(changeset.diff).toContain(`+${changeset.repository}`);
      expect(changeset.stats).toEqual({ files: 1, insertions: 1, deletions: 0 });
    }

    // Every job succeeded in the queue; none is left running for a dead executor.
    const { rows: tasks } = await handle.query<{ status: string; count: number }>(
      "select status, count(*)::int as count from tasks where type = 'batch_workspace' group by status",
    );
    expect(tasks).toEqual([{ status: "succeeded", count: REPOSITORIES }]);

    // The killed executor left its two checkouts behind; started again on its data directory,
    // it removes them (and their worktree registrations) before it claims anything.
    const leftovers = join(scratch, "exec-a", "workspaces", "batches");
    expect(readdirSync(leftovers).sort()).toEqual(interrupted.map(({ id }) => `${id}.1`).sort());
    const restarted = await startExecutor("exec-a");
    expect(readdirSync(leftovers)).toEqual([]);
    for (const { repository } of interrupted) {
      expect(gitIn(join(code, repository), "worktree", "list")).not.toContain(leftovers);
    }

    // Both stop cleanly.
    for (const executor of [survivor, restarted]) {
      executor.child.kill("SIGTERM");
      const [exitCode] = (await executor.exited) as [number | null];
      expect(exitCode, executor.id).toBe(0);
    }
  }, 240_000);
});
