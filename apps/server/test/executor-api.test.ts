// The executor API (issue #25): executor tokens reach it and nothing else, a job is held by one
// executor at a time and only its lease settles it, a job whose executor stopped heartbeating is
// taken over, and a revoked token is refused at its next call.
import { join } from "node:path";
import {
  type BatchRun,
  type CreateExecutorTokenResponse,
  type ErrorResponse,
  type ExecutorJob,
  type ExecutorLease,
  isExecutorApiPath,
  ServerPath,
  serverPath,
  serverRoutes,
  WireHeader,
  WirePath,
} from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import {
  backends,
  Cleanups,
  databaseUrlFor,
  gitIn,
  makeRepository,
  startTestServer,
  type TestServer,
  tempDir,
  waitUntil,
} from "./harness.ts";

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

const spec = `
name: mark
on:
  - repository: acme/api
steps:
  - run: echo marked > MARK
    container: alpine:3
changesetTemplate:
  title: Mark
  body: Marks
  branch: batch/mark
  commit:
    message: Mark
`;

const SOME_ID = "3b241101-e2bb-4255-8caf-4136c566a962";

describe.each(backends)("executor API ($backend)", ({ backend }) => {
  async function setUp(): Promise<TestServer> {
    const root = tempDir(cleanups, "deckhand-executor-hosts-");
    const repository = makeRepository(cleanups, { "README.md": "# api\n" });
    gitIn(repository, "clone", "--quiet", repository, join(root, "acme", "api"));
    return startTestServer(cleanups, {
      dataDir: tempDir(cleanups),
      config: {
        databaseUrl: await databaseUrlFor(cleanups, backend),
        workspaceAgent: false,
        codeHosts: [{ type: "directory", path: root }],
        // No worker of the server's own: the jobs are the executors'.
        batchConcurrency: 0,
      },
    });
  }

  async function executorToken(server: TestServer, name: string) {
    const created = await server.api<CreateExecutorTokenResponse>(
      "POST",
      ServerPath.executorTokens,
      { body: { name } },
    );
    expect(created.status, created.text).toBe(201);
    expect(created.body.token).toMatch(/^dhexe_/);
    return created.body;
  }

  it("refuses an executor token on every route but the executor API, and the executor API anything else", async () => {
    const server = await setUp();
    const { token } = await executorToken(server, "builders");
    for (const route of serverRoutes) {
      if (isExecutorApiPath(route.path)) continue;
      const path = route.path.replace(/:[a-z_]+/g, SOME_ID);
      const answer = await server.api<ErrorResponse>(route.method.toUpperCase(), path, {
        token,
        ...(route.method === "post" || route.method === "patch" ? { body: {} } : {}),
      });
      expect(answer.status, `${route.method} ${route.path}`).toBe(401);
      expect(answer.body.error.message).toContain(
        `an executor token reaches only the executor API (${WirePath.executorApi}/…); ${route.method.toUpperCase()} ${path} needs an admin or API token`,
      );
    }
    // Nor the model proxy, nor the web UI.
    for (const path of [`${WirePath.modelProvider}/codex/v1/responses`, "/"]) {
      const response = await fetch(`${server.server.url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: "{}",
      });
      expect(response.status, path).toBe(401);
      expect(await response.text()).toContain("reaches only the executor API");
    }
    // The executor API takes an executor token only: none, an API token or a made-up one is 401.
    const apiToken = await server.api<{ token: string }>("POST", ServerPath.apiTokens, {
      body: { name: "ci" },
    });
    for (const presented of [null, apiToken.body.token, "dhexe_made-up"]) {
      const answer = await server.api<ErrorResponse>("POST", ServerPath.executorJobClaim, {
        token: presented,
        body: { executor_id: "builder-1", lease_ms: 5_000 },
      });
      expect(answer.status).toBe(401);
      expect(answer.body.error.message).toContain(
        `POST ${ServerPath.executorJobClaim} needs a live executor token`,
      );
    }
    // The admin lists executor tokens without the tokens themselves.
    const listed = await server.api<{ executor_tokens: { name: string }[] }>(
      "GET",
      ServerPath.executorTokens,
    );
    expect(listed.body.executor_tokens.map((entry) => entry.name)).toEqual(["builders"]);
    expect(listed.text).not.toContain(token);
  }, 120_000);

  it("lets only the executor holding a job settle it, hands it over when its lease lapses, and refuses a revoked token at once", async () => {
    const server = await setUp();
    const first = await executorToken(server, "first");
    const second = await executorToken(server, "second");
    const created = await server.api<BatchRun>("POST", ServerPath.batchRuns, {
      body: { source: spec, options: { runtime: "local" } },
    });
    expect(created.status, created.text).toBe(201);
    const claim = async (token: string, id: string) => {
      const answer = await server.api<{ job: ExecutorJob | null }>(
        "POST",
        ServerPath.executorJobClaim,
        { token, body: { executor_id: id, lease_ms: 1_000 } },
      );
      expect(answer.status).toBe(200);
      return answer.body.job;
    };
    const complete = (token: string, lease: ExecutorLease) =>
      server.api<ErrorResponse | null>("POST", ServerPath.executorJobComplete, {
        token,
        body: {
          lease,
          status: "completed",
          error: null,
          diff: null,
          steps: [],
          changesets: [],
          events: [],
        },
      });
    const heartbeat = async (token: string, lease: ExecutorLease) =>
      (
        await server.api<{ jobs: { holds: boolean; running: boolean }[] }>(
          "POST",
          ServerPath.executorJobHeartbeat,
          { token, body: { leases: [lease], lease_ms: 1_000 } },
        )
      ).body.jobs[0];

    const held = await claim(first.token, "builder-1");
    expect(held).not.toBeNull();
    const lease = held!.lease;
    expect(lease.executor).toBe(`builder-1@${first.executor_token.id.slice(0, 13)}`);
    expect(held!.spec.source).toBe(spec);
    // One workspace, held: nothing for anyone else.
    expect(await claim(second.token, "builder-2")).toBeNull();
    // Another token cannot settle it, even with the lease in hand.
    const foreign = await complete(second.token, lease);
    expect(foreign.status).toBe(409);
    expect((foreign.body as ErrorResponse).error.message).toContain(
      "belongs to an executor of another executor token",
    );
    // Nor can its own token with a lease of an attempt it does not hold.
    const forged = await complete(first.token, { ...lease, workspace_attempt: 7, task_attempt: 7 });
    expect(forged.status).toBe(409);
    expect((forged.body as ErrorResponse).error.message).toContain(
      "holds neither its workspace nor its task",
    );
    expect(await heartbeat(first.token, lease)).toEqual({
      task_id: lease.task_id,
      holds: true,
      running: true,
    });

    // The job's model token is the server's to mint, for this job only; released, it is revoked.
    const minted = await server.api<{ base_url: string; token: string; job_id: string }>(
      "POST",
      ServerPath.executorJobModelToken,
      { token: first.token, body: { lease } },
    );
    expect(minted.status).toBe(201);
    expect(minted.body.job_id).toBe(`batch-workspace:${lease.workspace_id}`);
    expect(minted.body.base_url).toBe(`${server.server.url}${WirePath.modelProvider}`);
    expect(
      (
        await server.api("POST", ServerPath.executorJobModelToken, {
          token: second.token,
          body: { lease },
        })
      ).status,
    ).toBe(409);
    // The proxy takes it for this job until it is released, then refuses it.
    const throughProxy = () =>
      fetch(`${minted.body.base_url}/codex/v1/responses`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${minted.body.token}`,
          [WireHeader.jobId]: minted.body.job_id,
          "content-type": "application/json",
        },
        body: "{}",
      });
    expect((await throughProxy()).status).not.toBe(401);
    const releasedToken = await server.api("POST", ServerPath.executorJobModelTokenRelease, {
      token: first.token,
      body: { lease, token: minted.body.token },
    });
    expect(releasedToken.status).toBe(204);
    expect((await throughProxy()).status).toBe(401);

    // builder-1 stops heartbeating: once its lease lapsed, builder-2 takes the job over.
    let takenOver: ExecutorJob | null = null;
    await waitUntil(
      async () => {
        takenOver = await claim(second.token, "builder-2");
        return takenOver !== null;
      },
      60_000,
      "the job to be taken over",
    );
    const newLease = (takenOver as ExecutorJob | null)!.lease;
    expect(newLease).toMatchObject({
      task_id: lease.task_id,
      workspace_id: lease.workspace_id,
      task_attempt: 2,
      workspace_attempt: 2,
    });
    // The first executor hears that it no longer holds the job, and cannot complete it.
    expect(await heartbeat(first.token, lease)).toMatchObject({ holds: false });
    const late = await complete(first.token, lease);
    expect(late.status).toBe(409);
    expect((await complete(second.token, newLease)).status).toBe(204);
    // Written once: completing again is refused.
    expect((await complete(second.token, newLease)).status).toBe(409);
    const run = await server.api<BatchRun>(
      "GET",
      serverPath(ServerPath.batchRun, { batch_run_id: created.body.id }),
    );
    expect(run.body.status).toBe("completed");
    expect(run.body.stats).toMatchObject({ workspaces: 1, completed: 1 });

    // Revoked: refused at its very next call.
    const revoked = await server.api(
      "DELETE",
      serverPath(ServerPath.executorToken, { token_id: first.executor_token.id }),
    );
    expect(revoked.status).toBe(204);
    const refused = await server.api<ErrorResponse>("POST", ServerPath.executorJobClaim, {
      token: first.token,
      body: { executor_id: "builder-1", lease_ms: 1_000 },
    });
    expect(refused.status).toBe(401);
    expect(await claim(second.token, "builder-2")).toBeNull();
  }, 120_000);

  it("tells the executor holding a job that its workspace was cancelled, and settles its task", async () => {
    const server = await setUp();
    const { token } = await executorToken(server, "builders");
    const created = await server.api<BatchRun>("POST", ServerPath.batchRuns, {
      body: { source: spec, options: { runtime: "local" } },
    });
    const claimed = await server.api<{ job: ExecutorJob | null }>(
      "POST",
      ServerPath.executorJobClaim,
      { token, body: { executor_id: "builder-1", lease_ms: 30_000 } },
    );
    const lease = claimed.body.job!.lease;
    const cancelled = await server.api(
      "POST",
      serverPath(ServerPath.batchRunCancel, { batch_run_id: created.body.id }),
    );
    expect(cancelled.status).toBeLessThan(300);
    const beat = await server.api<{ jobs: { holds: boolean; running: boolean }[] }>(
      "POST",
      ServerPath.executorJobHeartbeat,
      { token, body: { leases: [lease], lease_ms: 30_000 } },
    );
    expect(beat.body.jobs).toEqual([{ task_id: lease.task_id, holds: true, running: false }]);
    // Progress of a cancelled workspace is refused; its end is not written, but its task is
    // settled, so the queue does not hand it out again.
    const progress = await server.api<ErrorResponse>("POST", ServerPath.executorJobEvents, {
      token,
      body: {
        lease,
        events: [
          {
            type: "workspace_started",
            workspace: { repository: "acme/api", branch: "main", path: "", revision: "x" },
          },
        ],
      },
    });
    expect(progress.status).toBe(409);
    const ended = await server.api("POST", ServerPath.executorJobComplete, {
      token,
      body: {
        lease,
        status: "completed",
        error: null,
        diff: null,
        steps: [],
        changesets: [],
        events: [],
      },
    });
    expect(ended.status).toBe(204);
    const run = await server.api<BatchRun>(
      "GET",
      serverPath(ServerPath.batchRun, { batch_run_id: created.body.id }),
    );
    expect(run.body.status).toBe("cancelled");
    expect(run.body.stats).toMatchObject({ completed: 0 });
    const again = await server.api<{ job: ExecutorJob | null }>(
      "POST",
      ServerPath.executorJobClaim,
      { token, body: { executor_id: "builder-1", lease_ms: 30_000 } },
    );
    expect(again.body.job).toBeNull();
  }, 120_000);
});
