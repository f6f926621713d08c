// Executors over HTTP (issue #25): `deckhand up` with `batchConcurrency: 0` runs no workspace job
// itself; three `deckhand executor --server-url` processes with an executor token, and no
// database, claim them through the executor API. One is killed with SIGKILL in the middle of its
// steps; the others take its jobs over once their leases expire, and the run ends with every
// workspace completed exactly once. Every step looks for the executor token in its own
// environment and in every process's it can see: the sandbox and the environment policy leave it
// none. Revoking the token stops the executors at their next call. On PGlite (executors need no
// database of their own now) and on PostgreSQL when DATABASE_URL is set.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gitIn } from "@deckhand/testkit";
import {
  type BatchRun,
  type BatchWorkspace,
  type CreateExecutorTokenResponse,
  ServerPath,
  type StoredBatchChangeset,
  serverPath,
  WireEnv,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BatchRunStreamClient,
  type BatchServer,
  databaseBackends,
  generateRepositories,
  startBatchServer,
} from "./batch-server.ts";
import { repositoryRoot } from "./deckhand-up.ts";

const REPOSITORIES = 8;
/** Short, so the test waits seconds, not the default 30 s, for the take-over. */
const LEASE_MS = 3_000;
const names = Array.from({ length: REPOSITORIES }, (_, index) => `github.com/acme/repo-${index}`);

interface Executor {
  id: string;
  child: ChildProcess;
  output: string[];
  exited: Promise<unknown>;
}

/**
 * The running processes (not zombies) whose environment says they work for `executor`: the
 * executor and its steps. Steps run in their own PID namespace, so the PIDs they see of
 * themselves are not this machine's; their environment is what finds them here.
 */
function processesOf(executor: string): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        if (/^\d+ \(.*\) [ZX]/.test(readFileSync(`/proc/${pid}/stat`, "utf8"))) return false;
        return readFileSync(`/proc/${pid}/environ`, "utf8")
          .split("\0")
          .includes(`E2E_EXECUTOR=${executor}`);
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 50));
  }
}

describe.each(databaseBackends)("deckhand executor over HTTP (%s)", (backend) => {
  let scratch: string;
  let code: string;
  let server: BatchServer;
  const executors: Executor[] = [];
  let environment: NodeJS.ProcessEnv;

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), "deckhand-e2e-http-executors-"));
    code = generateRepositories(names);
    server = await startBatchServer({
      backend,
      // The server runs no workspace job: only the executors do.
      config: { codeHosts: [{ type: "directory", path: code }], batchConcurrency: 0 },
    });
    // Each executor's config.json: the code host, and its steps in bubblewrap (required, not
    // "auto": the token checks below are about the sandbox), writing the step log outside their
    // workspace only to the directory the test reads.
    mkdirSync(join(scratch, "steps"));
    for (const id of ["exec-a", "exec-b", "exec-c"]) {
      mkdirSync(join(scratch, id));
      writeFileSync(
        join(scratch, id, "config.json"),
        JSON.stringify({
          codeHosts: [{ type: "directory", path: code }],
          // No network for the steps (they need none): with network, slirp4netns configures
          // the sandbox's namespace while bubblewrap still sets up its loopback there, and on
          // this machine the two collide now and then ("loopback: Failed RTM_NEWADDR").
          sandbox: { mode: "bubblewrap", stepNetwork: "none", writable: [join(scratch, "steps")] },
        }),
      );
    }
    environment = { ...process.env };
    for (const name of [
      "DATABASE_URL",
      WireEnv.adminToken,
      WireEnv.serverDataDir,
      WireEnv.serverListen,
      WireEnv.serverLogLevel,
    ]) {
      delete environment[name];
    }
  }, 120_000);

  afterAll(async () => {
    for (const executor of executors) {
      if (executor.child.exitCode === null && executor.child.signalCode === null) {
        executor.child.kill("SIGKILL");
        await executor.exited;
      }
    }
    await server?.close();
    rmSync(code, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  });

  function cli(args: string[]): string {
    return execFileSync(
      process.execPath,
      ["--conditions=source", join(repositoryRoot, "apps/cli/src/bin.ts"), ...args],
      { cwd: repositoryRoot, env: environment, encoding: "utf8" },
    );
  }

  async function startExecutor(id: string, token: string): Promise<Executor> {
    const child = spawn(
      process.execPath,
      [
        "--conditions=source",
        join(repositoryRoot, "apps/cli/src/bin.ts"),
        "executor",
        "--server-url",
        server.server.url,
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
        env: { ...environment, [WireEnv.executorToken]: token, E2E_EXECUTOR: id },
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

  it("loses no workspace and completes none twice when an executor is killed mid-step, and no step sees the executor token", async () => {
    const created = JSON.parse(
      cli(["executor-tokens", "create", "e2e", "--server", server.server.url, "--json"]),
    ) as CreateExecutorTokenResponse;
    const token = created.token;
    const pids = join(scratch, "steps", "pids");
    // The step counts what it can see of the token: in its own environment, and in the
    // environment of every process visible to it (its executor's, were it not hidden).
    const spec = `
name: executors
on:
  - repositoriesMatchingQuery: repo:^github\\.com/acme/
steps:
  - run: |
      echo "$E2E_EXECUTOR $$" >> ${pids}
      sleep 2
      echo "$E2E_EXECUTOR $$ done" >> ${pids}
      echo \${{ repository.name }} > X
      seen=$(cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c -e dhexe_ -e ${WireEnv.executorToken})
      own=$(env | grep -c -e dhexe_ -e ${WireEnv.executorToken})
      echo "token seen $seen own $own" > LEAK
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
    const victim = await startExecutor("exec-a", token);
    const survivors = [await startExecutor("exec-b", token), await startExecutor("exec-c", token)];
    // The survivors, and exec-a once it is started again: all stop when the token is revoked.
    const createdRun = await server.api<BatchRun>("POST", ServerPath.batchRuns, {
      source: spec,
      options: { runtime: "local" },
    });
    expect(createdRun.status).toBe(201);
    const runId = createdRun.body.id;
    const stream = new BatchRunStreamClient(server.server.url, runId);
    server.streams.push(stream);
    await stream.opened;

    // exec-a is in the middle of its steps: both its slots hold a workspace whose step runs.
    const victimSteps = await waitFor(() => {
      const lines = existsSync(pids) ? readFileSync(pids, "utf8").split("\n") : [];
      const mine = lines.filter((line) => /^exec-a \d+$/.test(line));
      return mine.length === 2 ? mine.map((line) => Number(line.split(" ")[1])) : undefined;
    }, "exec-a's step processes").catch((error: unknown) => {
      // What the executors and the run said, to see why.
      throw new Error(
        `${String(error)}\n${executors.map((executor) => `${executor.id}:\n${executor.output.slice(-20).join("\n")}`).join("\n")}\nevents: ${JSON.stringify(stream.events()).slice(-3000)}`,
      );
    });
    const { body: before } = await server.api<{ workspaces: BatchWorkspace[] }>(
      "GET",
      serverPath(ServerPath.batchRunWorkspaces, { batch_run_id: runId }),
    );
    const interrupted = before.workspaces.filter(
      (workspace) => workspace.state === "running" && workspace.executor?.startsWith("exec-a@"),
    );
    expect(interrupted).toHaveLength(2);
    expect(processesOf("exec-a").length).toBeGreaterThan(1);
    victim.child.kill("SIGKILL");
    await victim.exited;
    // Its steps die with it (they watch their executor), instead of working on as orphans.
    await waitFor(() => processesOf("exec-a").length === 0, "exec-a's steps to die", 60_000);

    const events = await stream.finished(180_000);
    const { body: run } = await server.api<BatchRun>(
      "GET",
      serverPath(ServerPath.batchRun, { batch_run_id: runId }),
    );
    expect(
      run.status,
      JSON.stringify(events.filter((event) => event.type === "workspace_finished")),
    ).toBe("completed");
    expect(run.stats).toMatchObject({
      workspaces: REPOSITORIES,
      completed: REPOSITORIES,
      failed: 0,
      cancelled: 0,
      changesets: REPOSITORIES,
    });
    const { body: after } = await server.api<{ workspaces: BatchWorkspace[] }>(
      "GET",
      serverPath(ServerPath.batchRunWorkspaces, { batch_run_id: runId }),
    );
    const executorName = (id: string) => `${id}@${created.executor_token.id.slice(0, 13)}`;
    for (const workspace of after.workspaces) {
      expect(workspace.state, workspace.repository).toBe("completed");
      expect(["exec-a", "exec-b", "exec-c"].map(executorName)).toContain(workspace.executor);
    }
    // The two interrupted workspaces were taken over by a survivor, on their second attempt.
    for (const { id, repository } of interrupted) {
      const workspace = after.workspaces.find((candidate) => candidate.id === id)!;
      expect(workspace.attempts, repository).toBe(2);
      expect(workspace.executor, repository).not.toBe(executorName("exec-a"));
    }

    // The run's log tells each workspace's end once, and the run's once.
    const ends = events.filter((event) => event.type === "workspace_finished");
    expect(ends.map((event) => event.status)).toEqual(Array(REPOSITORIES).fill("completed"));
    expect(new Set(ends.map((event) => event.workspace.repository)).size).toBe(REPOSITORIES);
    expect(events.filter((event) => event.type === "changeset")).toHaveLength(REPOSITORIES);
    expect(events.filter((event) => event.type === "run_finished")).toHaveLength(1);
    for (const { repository } of interrupted) {
      const started = events.filter(
        (event) => event.type === "workspace_started" && event.workspace.repository === repository,
      );
      expect(started, repository).toHaveLength(2);
    }
    // exec-a's steps never got past their sleep.
    const stepLog = readFileSync(pids, "utf8").split("\n");
    for (const pid of victimSteps) expect(stepLog).not.toContain(`exec-a ${pid} done`);

    // One changeset per workspace, each with that repository's change; and in no step was the
    // executor token to be seen, neither in its environment nor in any process's it could see.
    const { body: stored } = await server.api<{ changesets: StoredBatchChangeset[] }>(
      "GET",
      serverPath(ServerPath.batchRunChangesets, { batch_run_id: runId }),
    );
    expect(stored.changesets).toHaveLength(REPOSITORIES);
    expect(new Set(stored.changesets.map((changeset) => changeset.workspace_id)).size).toBe(
      REPOSITORIES,
    );
    for (const changeset of stored.changesets) {
      expect(changeset.diff).toContain(`+${changeset.repository}`);
      expect(changeset.diff, changeset.repository).toContain("+token seen 0 own 0");
    }
    // Nor anywhere the server answered with.
    expect(server.responses.join("\n")).not.toContain(token);
    expect(stream.raw.join("\n")).not.toContain(token);

    // The killed executor left its two checkouts behind; started again on its data directory,
    // it removes them (and their worktree registrations) before it claims anything, as the
    // server says no attempt runs them any more.
    const leftovers = join(scratch, "exec-a", "workspaces", "batches");
    expect(readdirSync(leftovers).sort()).toEqual(interrupted.map(({ id }) => `${id}.1`).sort());
    const restarted = await startExecutor("exec-a", token);
    expect(readdirSync(leftovers)).toEqual([]);
    for (const { repository } of interrupted) {
      expect(gitIn(join(code, repository), "worktree", "list")).not.toContain(leftovers);
    }
    survivors.push(restarted);

    // Revoking the token stops the survivors at their next call (a heartbeat or a claim).
    cli(["executor-tokens", "revoke", created.executor_token.id, "--server", server.server.url]);
    for (const survivor of survivors) {
      const [exitCode] = (await survivor.exited) as [number | null];
      expect(exitCode, survivor.id).toBe(1);
      expect(survivor.output.join("\n")).toContain("the server refused this executor's token");
      expect(survivor.output.join("\n")).not.toContain(token);
    }
    const listed = cli(["executor-tokens", "list", "--server", server.server.url]);
    expect(listed).toContain("revoked");
    expect(listed).not.toContain(token);
  }, 300_000);
});
