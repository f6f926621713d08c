// Publishing end to end inside the package: apply runs over git URL code hosts served by the
// testkit's fake GitHub and GitLab (API and git over loopback, both checking the token), with
// the run service's apply job publishing, re-publishing in place, closing what a newer spec no
// longer produces, tracking, hooks and bulk operations.
import { join } from "node:path";
import type { CodeHostConnection } from "@deckhand/code-hosts";
import { createDb, type DbHandle, TaskRegistry, TaskWorker } from "@deckhand/db";
import { detectSandbox, ProcessLauncher } from "@deckhand/sandbox";
import { agentEnvironmentPolicy } from "@deckhand/secrets";
import {
  type FakeCodeHost,
  fakeRateLimit,
  sandboxTestSetup,
  startFakeCodeHost,
} from "@deckhand/testkit";
import type { BatchRun } from "@deckhand/wire";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { temporaryDirectory, testEnvironment } from "../../test/support.ts";
import { readRunEvents } from "../batch-run-events.ts";
import { BatchRunService } from "../batch-run-service.ts";
import { createHookRunner } from "./changeset-hooks.ts";
import { ChangesetPublisher } from "./changeset-publisher.ts";
import { CodeHostAccess } from "./code-host-access.ts";

let scratch: ReturnType<typeof temporaryDirectory>;
let github: FakeCodeHost;
let gitlab: FakeCodeHost;
let database: DbHandle;
let service: BatchRunService;
let publisher: ChangesetPublisher;
let worker: TaskWorker | null;
let connections: CodeHostConnection[];
let launcher: ProcessLauncher | null;

const sandbox = sandboxTestSetup();
/** In this process's environment, withheld from steps: only reading this process's finds it. */
const CANARY = "sbxcanary-publisher-process-7e21";

const GH = ["acme/api", "acme/web"];
const GL = ["tools/cli", "tools/lib"];

beforeEach(async () => {
  scratch = temporaryDirectory();
  github = await startFakeCodeHost({ type: "github" });
  gitlab = await startFakeCodeHost({ type: "gitlab" });
  for (const path of GH) github.createRepository(path, { files: { "README.md": `# ${path}\n` } });
  for (const path of GL) gitlab.createRepository(path, { files: { "README.md": `# ${path}\n` } });
  connections = [
    { type: "github", url: github.url, apiUrl: github.apiUrl, tokenEnv: "TEST_GH_TOKEN" },
    { type: "gitlab", url: gitlab.url, apiUrl: gitlab.apiUrl, tokenEnv: "TEST_GL_TOKEN" },
  ];
  const environment = {
    PATH: process.env.PATH,
    TEST_GH_TOKEN: github.token,
    TEST_GL_TOKEN: gitlab.token,
  };
  database = await createDb({ dataDir: "memory://" });
  process.env.DECKHAND_TEST_PUBLISHER_CANARY = CANARY;
  launcher = sandbox.available
    ? new ProcessLauncher({
        capability: await detectSandbox("bubblewrap"),
        // As the server's: code host tokens are Deckhand's, never a step's.
        policy: agentEnvironmentPolicy({
          secretNames: ["TEST_GH_TOKEN", "TEST_GL_TOKEN"],
          secretValues: [CANARY, github.token, gitlab.token],
        }),
        sourceEnvironment: environment,
        hidden: [join(scratch.path, "cache")],
      })
    : null;
  const access = new CodeHostAccess({
    connections: () => connections,
    environment,
    policyOptions: { baseDelayMs: 1, maxDelayMs: 5, maxWaitMs: 2_000 },
  });
  const codeHosts = () => [
    ...GH.map((path) => ({ type: "git" as const, url: github.cloneUrl(path) })),
    ...GL.map((path) => ({ type: "git" as const, url: gitlab.cloneUrl(path) })),
  ];
  publisher = new ChangesetPublisher({
    database,
    access,
    hooks: createHookRunner({
      access,
      codeHosts,
      environment: testEnvironment(scratch.path, {
        outerEnvironment: environment,
        containerRuntime: null,
        // Hooks run sandboxed where bubblewrap works, as the server and executors run them.
        ...(launcher ? { launcher } : {}),
      }),
    }),
    retryWorkspace: (id) => service.retryWorkspace(id),
    trackingIntervalMs: 300,
  });
  service = new BatchRunService({
    database,
    codeHosts,
    publishing: publisher,
    environment: testEnvironment(scratch.path, {
      containerRuntime: null,
      outerEnvironment: environment,
    }),
  });
  const registry = new TaskRegistry();
  // The service registers its publisher's tasks (tracking, hooks) with its own.
  service.register(registry);
  worker = new TaskWorker({ database, registry, concurrency: 2, pollIntervalMs: 50 });
  void worker.start();
});

afterEach(async () => {
  await launcher?.close();
  await worker?.stop();
  await database.close();
  await github.close();
  await gitlab.close();
  scratch.remove();
});

async function finished(runId: string, timeoutMs = 60_000): Promise<BatchRun> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await service.getRun(runId);
    if (run.status !== "queued" && run.status !== "running") return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 50));
  }
}

const spec = (title: string, extra = "") => `
version: 3
name: hello
on:
  - repositoriesMatchingQuery: repo:.
steps:
  - run: echo hello > HELLO.md
    container: alpine:3
changesetTemplate:
  title: ${title} \${{ repository.name }}
  body: Says hello to \${{ repository.name }}
  branch: say-hello
  commit:
    message: say hello
  published: true
${extra}`;

async function apply(source: string, options: Record<string, unknown> = {}): Promise<BatchRun> {
  const created = await service.createRun({
    source,
    action: "apply",
    options: { runtime: "local", publish_rate: 6_000, ...options },
  });
  return finished(created.id);
}

function allPullRequests() {
  return [...github.pullRequests(), ...gitlab.pullRequests()];
}

describe("publishing changesets", () => {
  it("opens one pull request per changeset, updates them in place on re-apply, closes what the spec drops", async () => {
    const first = await apply(spec("Greet"));
    expect(first.error).toBeNull();
    expect(first.status).toBe("completed");
    const changesets = await service.listChangesets(first.id);
    expect(
      allPullRequests()
        .map((pr) => pr.title)
        .sort(),
    ).toEqual(changesets.map((changeset) => `Greet ${changeset.repository}`).sort());
    expect(github.pullRequests("acme/api")[0]!.body).toMatch(/^Says hello to .*acme\/api$/);
    expect(changesets.every((changeset) => changeset.tracked && changeset.external_url)).toBe(true);
    expect(changesets.map((changeset) => changeset.state)).toEqual([
      "open",
      "open",
      "open",
      "open",
    ]);
    const events = await readRunEvents(database.db, first.id, 0);
    expect(events.filter((entry) => entry.event.type === "changeset_published")).toHaveLength(4);

    // Before applying, a preview says what apply would do: update each open pull request in
    // place, and close the one of the repository the spec no longer reaches.
    const web = changesets.find((changeset) => changeset.repository.endsWith("acme/web"))!;
    const preview = await finished(
      (
        await service.createRun({
          source: spec("Greet").replace("echo hello", "echo hi"),
          options: { runtime: "local", exclude_repositories: [web.repository] },
        })
      ).id,
    );
    const planned = await service.listChangesetsWithDropped(preview.id);
    expect(planned.changesets).toHaveLength(3);
    for (const changeset of planned.changesets) {
      const number = changesets.find((old) => old.repository === changeset.repository)!.external_id;
      expect(changeset.apply_plan).toEqual({
        branch: "update",
        push: true,
        pull_request: "update",
        pull_request_number: number,
        summary: `push branch update, update pull request #${number}`,
      });
    }
    expect(planned.dropped.map((changeset) => changeset.apply_plan?.summary)).toEqual([
      `close pull request #${web.external_id}`,
    ]);
    expect(changesets.every((changeset) => changeset.apply_plan === null)).toBe(true);

    // A person adds a commit to one branch; a template change then updates every pull request
    // in place (none is opened) and keeps that commit on top of Deckhand's new one.
    github.commitToBranch("acme/api", "say-hello", { "PERSON.md": "mine\n" });
    const creates = github.requestsTo("POST", /\/pulls$/).length;
    const second = await apply(spec("Wave at"));
    expect(second.status).toBe("completed");
    const applied = (await readRunEvents(database.db, second.id, 0))
      .map((entry) => entry.event)
      .filter((event) => event.type === "changeset_applied");
    expect(
      applied.find((event) => event.workspace.repository.endsWith("acme/api"))?.kept_commits,
    ).toHaveLength(1);
    expect(github.requestsTo("POST", /\/pulls$/).length).toBe(creates);
    expect(allPullRequests()).toHaveLength(4);
    expect(allPullRequests().every((pr) => pr.title.startsWith("Wave at "))).toBe(true);
    const stats = await publisher.getBatchChange("hello");
    expect(stats.stats).toMatchObject({ total: 4, open: 4, merged: 0 });

    // A spec that no longer reaches acme/web closes its pull request and deletes its branch.
    const third = await apply(spec("Wave at"), {
      exclude_repositories: changesets
        .filter((changeset) => changeset.repository.endsWith("acme/web"))
        .map((changeset) => changeset.repository),
      delete_branches: true,
    });
    expect(third.status).toBe("completed");
    expect(github.pullRequests("acme/web")[0]!.state).toBe("closed");
    expect(github.branchSha("acme/web", "say-hello")).toBeUndefined();
    const after = await publisher.getBatchChange("hello");
    expect(after.stats).toMatchObject({ open: 3, closed: 1 });

    // A spec that reaches no repository at all closes the rest.
    const none = await apply(spec("Wave at").replace("repo:.", "repo:^nothing-matches$"));
    expect(none.status).toBe("completed");
    expect((await publisher.getBatchChange("hello")).stats).toMatchObject({ open: 0, closed: 4 });
  }, 180_000);

  it("tracks state, runs onCIFailure on failing checks and pushes its commit, reports merges", async () => {
    const hooks = `changesetHooks:
  onCIFailure:
    steps:
      - run: echo fixed > FIXED.md
        container: alpine:3
        maxAttempts: 1
`;
    const run = await apply(spec("Greet", hooks));
    expect(run.status).toBe("completed");
    const pr = github.pullRequests("acme/api")[0]!;
    const before = github.branchSha("acme/api", "say-hello");
    github.setChecks("acme/api", pr.number, "failing");
    await publisher.refresh({ batchChange: "hello" });
    const after = github.branchSha("acme/api", "say-hello");
    expect(after).not.toBe(before);
    const change = await publisher.getBatchChange("hello");
    const api = change.changesets.find((changeset) => changeset.repository.endsWith("acme/api"))!;
    expect(api.checks_state).toBe("failing");
    expect(api.applied_commit).toBe(after);
    const history = await publisher.listEvents(api.id);
    expect(history.map((event) => event.type)).toEqual([
      "pull_request_created",
      "status",
      "hook_pushed",
    ]);
    // Bounded: the next refresh with checks still failing does not run it again.
    await publisher.refresh({ batchChange: "hello" });
    expect(github.branchSha("acme/api", "say-hello")).toBe(after);

    github.merge("acme/api", pr.number);
    await publisher.refresh({ batchChange: "hello" });
    const merged = await publisher.getBatchChange("hello");
    expect(merged.stats).toMatchObject({ merged: 1, open: 3 });
    expect(merged.burndown.at(-1)).toMatchObject({ merged: 1, open: 3 });
  }, 90_000);

  it("comments on and merges selected changesets in bulk, each with its own result", async () => {
    const run = await apply(spec("Greet"));
    const changesets = await service.listChangesets(run.id);
    const ids = changesets.map((changeset) => changeset.id);
    const commented = await publisher.bulk("hello", {
      operation: "comment",
      changeset_ids: ids,
      body: "ping",
    });
    expect(commented.results.every((result) => result.ok)).toBe(true);
    expect(github.pullRequests("acme/api")[0]!.comments.map((comment) => comment.body)).toEqual([
      "ping",
    ]);
    const merged = await publisher.bulk("hello", { operation: "merge", changeset_ids: [ids[0]!] });
    expect(merged.results).toEqual([{ changeset_id: ids[0], ok: true, error: null }]);
    expect((await publisher.getBatchChange("hello")).stats.merged).toBe(1);
  }, 90_000);

  it("stops where a host keeps refusing, says where, and a re-apply resumes there", async () => {
    // A limit that outlasts the longest wait the policy accepts: the rollout stops there.
    github.failNext(fakeRateLimit.retryAfter(4), {
      when: (request) => request.method === "POST" && /\/pulls$/.test(request.path),
    });
    const stopped = await apply(spec("Greet"));
    expect(stopped.status).toBe("failed");
    expect(stopped.error).toMatch(
      /publishing stopped at .*acme\/api@say-hello: .*not yet published: .*acme\/web@say-hello, .*tools\/cli@say-hello, .*tools\/lib@say-hello; apply the run again to resume there/,
    );
    expect(allPullRequests()).toHaveLength(0);
    // Applying again goes on where it stopped, once the host's wait is over: every pull request
    // once.
    await service.applyRun(stopped.id);
    const resumed = await finished(stopped.id);
    expect(resumed.error).toBeNull();
    expect(resumed.status).toBe("completed");
    expect(allPullRequests()).toHaveLength(4);
    expect(github.requestsTo("POST", /\/pulls$/).length).toBe(3);
  }, 120_000);

  it("leaves changesets unpublished when the spec says published: false, and publishes them in bulk", async () => {
    const run = await apply(spec("Greet").replace("published: true", "published: false"));
    expect(run.status).toBe("completed");
    expect(allPullRequests()).toHaveLength(0);
    const change = await publisher.getBatchChange("hello");
    expect(change.stats).toMatchObject({ total: 4, unpublished: 4, open: 0 });
    const [first] = await service.listChangesets(run.id);
    const result = await publisher.bulk("hello", {
      operation: "publish",
      changeset_ids: [first!.id],
      draft: true,
    });
    expect(result.results[0]).toEqual({ changeset_id: first!.id, ok: true, error: null });
    expect(allPullRequests()).toHaveLength(1);
    expect((await publisher.getBatchChange("hello")).stats).toMatchObject({
      draft: 1,
      unpublished: 3,
    });
  }, 90_000);
  it.skipIf(!sandbox.available)(
    "runs a hook's steps in the sandbox, where they see no process, cache or credential of this one",
    async () => {
      // The hook prints what it found and fails, so what it saw comes back in the hook's error.
      const hooks = `changesetHooks:
  onCIFailure:
    steps:
      - run: |
          echo "sbx-count=$({ cat /proc/[0-9]*/environ; grep -r . ${join(scratch.path, "cache")}; } 2>/dev/null | tr '\\000' '\\n' | grep -c -e sbxcanary -e ${github.token})" >&2
          exit 3
        container: alpine:3
        maxAttempts: 1
`;
      const run = await apply(spec("Greet", hooks));
      expect(run.status).toBe("completed");
      const pr = github.pullRequests("acme/api")[0]!;
      github.setChecks("acme/api", pr.number, "failing");
      await publisher.refresh({ batchChange: "hello" });
      const change = await publisher.getBatchChange("hello");
      const api = change.changesets.find((changeset) => changeset.repository.endsWith("acme/api"));
      expect(api?.publish_error).toMatch(/^onCIFailure \(attempt 1\) failed: .*sbx-count=0/s);
    },
    90_000,
  );

  it("refreshes on a schedule, and reports a failing onMergeConflict hook on the changeset", async () => {
    const hooks = `changesetHooks:
  onMergeConflict:
    steps:
      - run: echo cannot resolve >&2; exit 4
        container: alpine:3
        maxAttempts: 1
`;
    const run = await apply(spec("Greet", hooks));
    expect(run.status).toBe("completed");
    const pr = gitlab.pullRequests("tools/cli")[0]!;
    gitlab.setMergeable("tools/cli", pr.number, false);
    // Nobody asks: the tracking task, scheduled once, refreshes and schedules itself again.
    await publisher.scheduleTracking();
    const deadline = Date.now() + 30_000;
    let cli: Awaited<ReturnType<typeof publisher.getBatchChange>>["changesets"][number] | undefined;
    for (;;) {
      const change = await publisher.getBatchChange("hello");
      cli = change.changesets.find((changeset) => changeset.repository.endsWith("tools/cli"));
      if (cli?.publish_error) break;
      if (Date.now() > deadline) throw new Error("tracking did not run the hook");
      await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    }
    expect(cli!.mergeable).toBe("conflicting");
    expect(cli!.publish_error).toMatch(/^onMergeConflict \(attempt 1\) failed: .*cannot resolve/);
    const history = (await publisher.listEvents(cli!.id)).map((event) => event.type);
    expect(history).toContain("hook_exhausted");
    const events = await readRunEvents(database.db, run.id, 0);
    expect(events.map((entry) => entry.event)).toContainEqual(
      expect.objectContaining({
        type: "changeset_hook",
        hook: "onMergeConflict",
        status: "exhausted",
      }),
    );
    // It keeps running on its schedule: a merge on the host is seen without asking.
    gitlab.merge("tools/lib", gitlab.pullRequests("tools/lib")[0]!.number);
    for (;;) {
      const change = await publisher.getBatchChange("hello");
      if (change.stats.merged === 1) break;
      if (Date.now() > deadline) throw new Error("tracking did not see the merge");
      await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    }
  }, 120_000);
});
