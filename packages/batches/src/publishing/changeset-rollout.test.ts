// Paced rollouts end to end inside the package, on PGlite and on PostgreSQL: real apply runs
// against the testkit's fake GitHub, a clock the test moves (no waiting), and the rollout's queue
// task run when the test says its time has come. What waits is read back from the database, so
// a publisher made afresh (a restarted server) goes on with the same schedule.
import type { CodeHostConnection } from "@deckhand/code-hosts";
import { type DbHandle, type DbKind, TaskRegistry, TaskWorker, tasks } from "@deckhand/db";
import {
  createPostgresTestDatabase,
  type FakeCodeHost,
  startFakeCodeHost,
  testPostgresUrl,
} from "@deckhand/testkit";
import type { BatchRun, RolloutWindow } from "@deckhand/wire";
import { and, asc, eq, lte } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { temporaryDirectory, testEnvironment } from "../../test/support.ts";
import { readRunEvents } from "../batch-run-events.ts";
import { BatchRunService } from "../batch-run-service.ts";
import { ChangesetPublisher } from "./changeset-publisher.ts";
import { CHANGESET_ROLLOUT_TASK } from "./changeset-rollout.ts";
import { CodeHostAccess } from "./code-host-access.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const REPOSITORIES = ["acme/one", "acme/two", "acme/three", "acme/four"];
const RECHECK_MS = 5 * MINUTE;

const backends: DbKind[] = testPostgresUrl ? ["pglite", "postgres"] : ["pglite"];
if (!testPostgresUrl) it.skip("paced rollouts on PostgreSQL (set DATABASE_URL)", () => {});

// Each test applies a spec over four repositories for real (clone, step, push): minutes on a
// loaded machine.
describe.each(backends)("paced rollouts on %s", { timeout: 240_000 }, (kind) => {
  let scratch: ReturnType<typeof temporaryDirectory>;
  let github: FakeCodeHost;
  let database: DbHandle;
  let dropDatabase: () => Promise<void>;
  let service: BatchRunService;
  let worker: TaskWorker;
  let access: CodeHostAccess;
  let serverWindows: RolloutWindow[] | null;
  /** The publishers' clock; it starts years ahead, so the real queue never runs a turn itself. */
  const clock = { now: 0 };

  function makePublisher(): { publisher: ChangesetPublisher; registry: TaskRegistry } {
    const publisher = new ChangesetPublisher({
      database,
      access,
      now: () => clock.now,
      rolloutWindows: () => serverWindows,
      rolloutRecheckMs: RECHECK_MS,
    });
    const registry = new TaskRegistry();
    publisher.register(registry);
    return { publisher, registry };
  }
  let current: { publisher: ChangesetPublisher; registry: TaskRegistry };

  beforeEach(async () => {
    scratch = temporaryDirectory();
    github = await startFakeCodeHost({ type: "github" });
    for (const path of REPOSITORIES) {
      github.createRepository(path, { files: { "README.md": `# ${path}\n` } });
    }
    const connections: CodeHostConnection[] = [
      { type: "github", url: github.url, apiUrl: github.apiUrl, tokenEnv: "TEST_GH_TOKEN" },
    ];
    const environment = { PATH: process.env.PATH, TEST_GH_TOKEN: github.token };
    if (kind === "postgres") {
      const created = await createPostgresTestDatabase();
      const { createDb } = await import("@deckhand/db");
      database = await createDb({ databaseUrl: created.url, poolSize: 4 });
      dropDatabase = () => created.drop();
    } else {
      const { createDb } = await import("@deckhand/db");
      database = await createDb({ dataDir: "memory://" });
      dropDatabase = async () => {};
    }
    access = new CodeHostAccess({
      connections: () => connections,
      environment,
      policyOptions: { baseDelayMs: 1, maxDelayMs: 5, maxWaitMs: 2_000 },
    });
    serverWindows = null;
    // Monday 3 June 2030, 10:00 UTC.
    clock.now = Date.parse("2030-06-03T10:00:00Z");
    current = makePublisher();
    service = new BatchRunService({
      database,
      codeHosts: () =>
        REPOSITORIES.map((path) => ({ type: "git" as const, url: github.cloneUrl(path) })),
      environment: testEnvironment(scratch.path, {
        containerRuntime: null,
        outerEnvironment: environment,
      }),
      publishing: current.publisher,
    });
    // The real queue runs the runs' jobs; rollout turns are due years from now for it.
    const registry = new TaskRegistry();
    service.register(registry);
    worker = new TaskWorker({ database, registry, concurrency: 2, pollIntervalMs: 50 });
    void worker.start();
  });

  afterEach(async () => {
    await worker.stop();
    await database.close();
    await dropDatabase();
    await github.close();
    scratch.remove();
  });

  async function finished(runId: string): Promise<BatchRun> {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const run = await service.getRun(runId);
      if (run.status !== "queued" && run.status !== "running") return run;
      if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status}`);
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
  }

  async function apply(rollout: string): Promise<BatchRun> {
    const source = `version: 3
name: paced
on:
  - repositoriesMatchingQuery: repo:.
steps:
  - run: echo hello > HELLO.md
    container: alpine:3
changesetTemplate:
  title: Greet
  branch: say-hello
  commit:
    message: say hello
  published: true
${rollout}`;
    const created = await service.createRun({
      source,
      action: "apply",
      options: { runtime: "local", publish_rate: 6_000 },
    });
    const run = await finished(created.id);
    expect(run.error).toBeNull();
    return run;
  }

  /** The queue's rollout turns due by `at`, run in order as a worker would, with the clock there. */
  async function runDueTurns(at: number): Promise<number> {
    clock.now = at;
    let ran = 0;
    for (let round = 0; round < 50; round += 1) {
      const [due] = await database.db
        .select()
        .from(tasks)
        .where(
          and(
            eq(tasks.type, CHANGESET_ROLLOUT_TASK),
            eq(tasks.status, "pending"),
            lte(tasks.runAt, new Date(at)),
          ),
        )
        .orderBy(asc(tasks.runAt), asc(tasks.id))
        .limit(1);
      if (due === undefined) return ran;
      await database.db.update(tasks).set({ status: "succeeded" }).where(eq(tasks.id, due.id));
      await current.registry.run(due.type, due.payload, {
        id: due.id,
        type: due.type,
        attempt: 1,
        maxAttempts: due.maxAttempts,
        workerId: "test",
        signal: new AbortController().signal,
      });
      ran += 1;
    }
    throw new Error("rollout turns kept coming due");
  }

  /** When the queue will next run a rollout turn. */
  async function nextTurnAt(): Promise<string | null> {
    const [next] = await database.db
      .select({ runAt: tasks.runAt })
      .from(tasks)
      .where(and(eq(tasks.type, CHANGESET_ROLLOUT_TASK), eq(tasks.status, "pending")))
      .orderBy(asc(tasks.runAt))
      .limit(1);
    return next?.runAt.toISOString() ?? null;
  }

  const openedTitles = () => github.pullRequests().length;

  // Each case applies a spec for real, tens of seconds on a loaded machine. The plan and the
  // windows are the database's business only through the rollout store, whose queries the
  // restart and the concurrent-limit cases cover on PostgreSQL; the rest run on PGlite alone.
  const onPgliteOnly = kind === "pglite" ? it : it.skip;

  onPgliteOnly(
    "opens at most N pull requests per hour, and the rest when the hour allows",
    async () => {
      const start = clock.now;
      const run = await apply("rollout:\n  hourlyLimit: 2\n");
      expect(openedTitles()).toBe(0);
      const scheduled = (await readRunEvents(database.db, run.id, 0)).filter(
        (entry) => entry.event.type === "changeset_scheduled",
      );
      expect(scheduled).toHaveLength(4);

      await runDueTurns(start);
      expect(openedTitles()).toBe(2);
      const status = await current.publisher.rollout("paced");
      expect(status.state).toBe("waiting");
      expect(status.published_last_hour).toBe(2);
      expect(status.pending.map((item) => [item.at, item.waiting_for])).toEqual([
        [new Date(start + HOUR).toISOString(), "hourly_limit"],
        [new Date(start + HOUR).toISOString(), "hourly_limit"],
      ]);
      expect(await nextTurnAt()).toBe(new Date(start + HOUR).toISOString());

      await runDueTurns(start + 59 * MINUTE);
      expect(openedTitles()).toBe(2);
      await runDueTurns(start + HOUR);
      expect(openedTitles()).toBe(4);
      expect((await current.publisher.rollout("paced")).state).toBe("idle");
      expect(await nextTurnAt()).toBeNull();
      // Tracking went on beside the rollout: every pull request is tracked.
      const change = await current.publisher.getBatchChange("paced");
      expect(change.stats.open).toBe(4);
    },
  );

  it("keeps at most M open at once, and publishes more as they merge", async () => {
    await apply("rollout:\n  concurrentLimit: 2\n");
    await runDueTurns(clock.now);
    expect(openedTitles()).toBe(2);
    const waiting = await current.publisher.rollout("paced");
    expect(waiting.open).toBe(2);
    expect(waiting.pending.every((item) => item.waiting_for === "concurrent_limit")).toBe(true);
    expect(waiting.pending.every((item) => item.at === null)).toBe(true);
    // It looks again on the recheck grid.
    expect(await nextTurnAt()).toBe(new Date(clock.now + RECHECK_MS).toISOString());

    const first = github.pullRequests()[0]!;
    github.merge(first.repository, first.number);
    // Nothing changes until tracking has read the merge.
    await runDueTurns(clock.now + RECHECK_MS);
    expect(openedTitles()).toBe(2);
    await current.publisher.refresh({ batchChange: "paced" });
    await runDueTurns(clock.now + RECHECK_MS);
    expect(openedTitles()).toBe(3);
    expect((await current.publisher.rollout("paced")).open).toBe(2);

    // A newer apply without a pace publishes its changesets at once, and what the older one
    // still had waiting is not opened behind its back.
    await apply("");
    expect(openedTitles()).toBe(4);
    const after = await current.publisher.rollout("paced");
    expect(after).toMatchObject({ paced: false, state: "idle", pending: [] });
    await runDueTurns(clock.now + 2 * RECHECK_MS);
    expect(openedTitles()).toBe(4);
  });

  onPgliteOnly(
    "publishes only inside windows on their zone's clock, across a daylight-saving shift",
    async () => {
      // Friday 29 March 2030, 17:30 in Berlin (CET, UTC+1); the clocks go forward on Sunday.
      clock.now = Date.parse("2030-03-29T16:30:00Z");
      await apply(`rollout:
  windows:
    - rate: 2/hour
      days: [monday, tuesday, wednesday, thursday, friday]
      start: "09:00"
      end: "17:00"
      timezone: Europe/Berlin
`);
      await runDueTurns(clock.now);
      expect(openedTitles()).toBe(0);
      const monday = Date.parse("2030-04-01T07:00:00Z"); // 09:00 CEST
      const status = await current.publisher.rollout("paced");
      expect(status.pending[0]).toMatchObject({
        at: new Date(monday).toISOString(),
        waiting_for: "window",
      });
      expect(status.pending.map((item) => item.at)).toEqual(
        [0, 30, 60, 90].map((minutes) => new Date(monday + minutes * MINUTE).toISOString()),
      );
      expect(await nextTurnAt()).toBe(new Date(monday).toISOString());
      await runDueTurns(monday - MINUTE);
      expect(openedTitles()).toBe(0);
      await runDueTurns(monday);
      expect(openedTitles()).toBe(1);
      await runDueTurns(monday + 29 * MINUTE);
      expect(openedTitles()).toBe(1);
      await runDueTurns(monday + 30 * MINUTE);
      expect(openedTitles()).toBe(2);
    },
  );

  onPgliteOnly(
    "applies the server's windows to every batch change, in the windows' zone",
    async () => {
      // New York, Sunday 10 March 2030: 02:00 EST becomes 03:00 EDT. A window from 08:00 New York
      // time opens at 13:00 UTC the day before and at 12:00 UTC from that Sunday on.
      serverWindows = [
        { rate: "unlimited", start: "08:00", end: "18:00", timezone: "America/New_York" },
      ];
      clock.now = Date.parse("2030-03-09T23:30:00Z"); // Saturday 18:30 EST: closed
      await apply("");
      await runDueTurns(clock.now);
      expect(openedTitles()).toBe(0);
      const status = await current.publisher.rollout("paced");
      expect(status.paced).toBe(true);
      expect(status.settings.server_windows).toEqual(serverWindows);
      expect(status.pending[0]!.at).toBe("2030-03-10T12:00:00.000Z");
      await runDueTurns(Date.parse("2030-03-10T12:00:00Z"));
      expect(openedTitles()).toBe(4);
    },
  );

  onPgliteOnly("publishes the canary first and the rest once its checks pass", async () => {
    await apply("rollout:\n  canary:\n    count: 1\n");
    await runDueTurns(clock.now);
    expect(openedTitles()).toBe(1);
    const [canary] = github.pullRequests();
    let status = await current.publisher.rollout("paced");
    expect(status.canary).toEqual({ count: 1, published: 1, passed: 0, failing: [] });
    expect(status.pending.map((item) => item.waiting_for)).toEqual(Array(3).fill("canary"));

    github.setChecks(canary!.repository, canary!.number, "pending");
    await runDueTurns(clock.now + RECHECK_MS);
    expect(openedTitles()).toBe(1);

    github.setChecks(canary!.repository, canary!.number, "passing");
    await runDueTurns(clock.now + RECHECK_MS);
    expect(openedTitles()).toBe(4);
    status = await current.publisher.rollout("paced");
    expect(status.canary).toEqual({ count: 1, published: 1, passed: 1, failing: [] });
    expect(status.state).toBe("idle");
  });

  onPgliteOnly("halts the rollout when a canary's checks fail", async () => {
    await apply("rollout:\n  canary:\n    count: 2\n");
    await runDueTurns(clock.now);
    const canaries = github.pullRequests();
    expect(canaries).toHaveLength(2);
    github.setChecks(canaries[0]!.repository, canaries[0]!.number, "passing");
    github.setChecks(canaries[1]!.repository, canaries[1]!.number, "failing");
    await runDueTurns(clock.now + RECHECK_MS);
    expect(openedTitles()).toBe(2);
    const status = await current.publisher.rollout("paced");
    expect(status.state).toBe("halted");
    expect(status.reason).toMatch(/halted: the checks of canary .*acme\/\w+@say-hello failed/);
    expect(status.pending.every((item) => item.waiting_for === "canary_failed")).toBe(true);
  });

  it("keeps the schedule across a restart: a new publisher on the same database goes on", async () => {
    const start = clock.now;
    await apply("rollout:\n  hourlyLimit: 3\n");
    await runDueTurns(start);
    expect(openedTitles()).toBe(3);
    // The server stops; one starts again and knows nothing but the database.
    await worker.stop();
    current = makePublisher();
    const restarted = await current.publisher.rollout("paced");
    expect(restarted.pending).toHaveLength(1);
    expect(restarted.pending[0]!.at).toBe(new Date(start + HOUR).toISOString());
    expect(await nextTurnAt()).toBe(new Date(start + HOUR).toISOString());
    await runDueTurns(start + HOUR);
    expect(openedTitles()).toBe(4);
    expect(new Set(github.pullRequests().map((pr) => pr.repository)).size).toBe(4);
  });
});
