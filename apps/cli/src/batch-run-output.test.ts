import {
  type BatchChangeset,
  type BatchRun,
  type BatchRunEvent,
  BatchRunEventSchema,
  type StoredBatchChangeset,
  type StoredBatchRunEvent,
} from "@deckhand/wire";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  changesetTable,
  eventLine,
  formatElapsed,
  RunProgress,
  renderProgress,
  runErrorText,
  summaryText,
} from "./batch-run-output.ts";
import { JsonLinesView, TerminalView } from "./batch-run-view.ts";

const api = {
  repository: "github.com/acme/api",
  branch: "main",
  path: "",
  revision: "a".repeat(40),
};
const web = {
  repository: "github.com/acme/web",
  branch: "main",
  path: "",
  revision: "b".repeat(40),
};
const monoA = {
  repository: "github.com/acme/mono",
  branch: "main",
  path: "packages/a",
  revision: "c".repeat(40),
};

const changeset: BatchChangeset = {
  repository: "github.com/acme/api",
  base_branch: "main",
  base_revision: "a".repeat(40),
  path: "",
  branch: "batch/hello",
  title: "Say hello",
  body: "Adds a greeting",
  commit_message: "hello",
  commit_author: null,
  published: false,
  diff: "diff --git a/README.md b/README.md\n",
  stats: { files: 1, insertions: 2, deletions: 1 },
};

/** A run of two workspaces: api runs its step, web comes from the cache, then the run ends. */
const events: BatchRunEvent[] = [
  { type: "run_started", workspaces: 2 },
  { type: "workspace_started", workspace: api },
  { type: "step_started", workspace: api, step_index: 0, runtime: "local", image: null },
  { type: "step_output", workspace: api, step_index: 0, stream: "stdout", text: "hi\n" },
  {
    type: "step_finished",
    workspace: api,
    step_index: 0,
    outcome: "run",
    exit_code: 0,
    duration_ms: 12,
  },
  { type: "workspace_finished", workspace: api, status: "completed", error: null },
  { type: "changeset", workspace: api, changeset },
  { type: "workspace_started", workspace: web },
  {
    type: "step_finished",
    workspace: web,
    step_index: 0,
    outcome: "cached",
    exit_code: null,
    duration_ms: 0,
  },
  { type: "workspace_finished", workspace: web, status: "completed", error: null },
  {
    type: "run_finished",
    status: "completed",
    error: null,
    summary: { workspaces: 2, changesets: 1, steps_run: 1, steps_cached: 1, failed: 0 },
  },
];

function stored(list: BatchRunEvent[]): StoredBatchRunEvent[] {
  return list.map((event, index) => ({
    id: index + 1,
    batch_run_id: "00000000-0000-4000-8000-000000000001",
    created_at: "2025-01-01T00:00:00.000Z",
    event,
  }));
}

const run: BatchRun = {
  id: "00000000-0000-4000-8000-000000000001",
  batch_spec_id: "00000000-0000-4000-8000-000000000002",
  name: "hello",
  action: "preview",
  status: "queued",
  options: {},
  warnings: ["repository github.com/acme/old is excluded from this run"],
  error: null,
  stats: {
    workspaces: 2,
    pending: 2,
    running: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
    changesets: 0,
    steps_run: 0,
    steps_cached: 0,
  },
  created_at: "2025-01-01T00:00:00.000Z",
  started_at: null,
  finished_at: null,
};

function sink() {
  const chunks: string[] = [];
  return { chunks, write: (text: string) => chunks.push(text), text: () => chunks.join("") };
}

describe("the JSON lines", () => {
  it("forward each event with its wire fields and flatten a changeset event's changeset", () => {
    expect(eventLine(events[2]!)).toEqual({
      type: "step_started",
      workspace: api,
      step_index: 0,
      runtime: "local",
      image: null,
    });
    expect(eventLine(events[6]!)).toEqual({ type: "changeset", ...changeset });
  });

  it("are a batch_run line, warnings, every event and a last summary, each one JSON object", () => {
    const stdout = sink();
    const stderr = sink();
    const view = new JsonLinesView(stdout, stderr);
    view.started(run);
    for (const event of stored(events)) view.event(event);
    view.note("Cancelling the run…");
    view.finished({
      summary: {
        workspaces: 2,
        changesets: 1,
        steps_run: 1,
        steps_cached: 1,
        failed: 0,
        status: "completed",
      },
      error: null,
      elapsedMs: 1_000,
    });
    expect(
      stdout.chunks.every((chunk) => chunk.endsWith("\n") && !chunk.slice(0, -1).includes("\n")),
    ).toBe(true);
    const lines = stdout
      .text()
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toEqual({ type: "batch_run", id: run.id, name: "hello", action: "preview" });
    expect(lines[1]).toEqual({
      type: "warning",
      message: "repository github.com/acme/old is excluded from this run",
    });
    expect(lines.slice(2, -1).map((line) => line.type)).toEqual(events.map((event) => event.type));
    // Every event line but the flattened changeset parses back as the wire event it was.
    for (const line of lines.slice(2, -1)) {
      if (line.type !== "changeset") expect(BatchRunEventSchema.parse(line)).toEqual(line);
    }
    expect(lines.find((line) => line.type === "changeset")).toMatchObject({
      repository: "github.com/acme/api",
      path: "",
      branch: "batch/hello",
      title: "Say hello",
      body: "Adds a greeting",
      commit_message: "hello",
      published: false,
      diff: changeset.diff,
    });
    expect(lines.at(-1)).toEqual({
      type: "summary",
      workspaces: 2,
      changesets: 1,
      steps_run: 1,
      steps_cached: 1,
      failed: 0,
      status: "completed",
    });
    expect(stderr.text()).toBe("Cancelling the run…\n");
  });
});

describe("RunProgress", () => {
  it("counts workspaces done, running, failed and cached as the events arrive", () => {
    const progress = new RunProgress();
    for (const event of events.slice(0, 3)) progress.apply(event);
    expect(progress.counts()).toEqual({
      total: 2,
      done: 0,
      running: 1,
      failed: 0,
      cancelled: 0,
      cached: 0,
    });
    for (const event of events.slice(3)) progress.apply(event);
    expect(progress.counts()).toEqual({
      total: 2,
      done: 2,
      running: 0,
      failed: 0,
      cancelled: 0,
      cached: 1,
    });
    expect(progress.changesets).toEqual([changeset]);
    expect(progress.finished?.status).toBe("completed");
    expect(progress.summary("completed")).toEqual({
      workspaces: 2,
      changesets: 1,
      steps_run: 1,
      steps_cached: 1,
      failed: 0,
      status: "completed",
    });
  });

  it("starts a workspace over when it runs again, and counts failures and cancellations", () => {
    const progress = new RunProgress();
    progress.apply({ type: "run_started", workspaces: 3 });
    progress.apply({ type: "workspace_started", workspace: api });
    progress.apply({
      type: "step_finished",
      workspace: api,
      step_index: 0,
      outcome: "run",
      exit_code: 0,
      duration_ms: 1,
    });
    progress.apply({ type: "workspace_started", workspace: api });
    progress.apply({
      type: "workspace_finished",
      workspace: api,
      status: "timed_out",
      error: "slow",
    });
    progress.apply({ type: "workspace_finished", workspace: web, status: "cancelled", error: "x" });
    expect(progress.counts()).toMatchObject({ total: 3, done: 2, failed: 1, cancelled: 1 });
    expect(progress.summary("cancelled")).toMatchObject({ steps_run: 0, failed: 2 });
  });
});

describe("the terminal view", () => {
  afterEach(() => vi.useRealTimers());

  it("renders counts, elapsed time and each running workspace's current step", () => {
    const progress = new RunProgress();
    progress.apply({ type: "run_started", workspaces: 5 });
    for (const workspace of [api, web, monoA]) {
      progress.apply({ type: "workspace_started", workspace });
    }
    progress.apply({
      type: "step_started",
      workspace: api,
      step_index: 1,
      runtime: "local",
      image: null,
    });
    progress.apply({
      type: "workspace_finished",
      workspace: web,
      status: "failed",
      error: "exit 1",
    });
    const lines = renderProgress(progress, {
      title: "preview spec.yaml",
      action: "preview",
      elapsedMs: 65_000,
      columns: 100,
      maxLines: 10,
    });
    expect(lines).toEqual([
      "preview spec.yaml: 1/5 done · 2 running · 1 failed · 0 cached · 1:05",
      "  github.com/acme/api  step 1",
      "  github.com/acme/mono (packages/a)  starting",
    ]);
    // Past the room it has, the view counts the running workspaces it does not list.
    expect(
      renderProgress(progress, {
        title: "t",
        action: "preview",
        elapsedMs: 0,
        columns: 30,
        maxLines: 2,
      }),
    ).toEqual(["t: 1/5 done · 2 running · 1 …", "  … and 2 more"]);
  });

  it("says branches are being written only for apply: a preview writes none", () => {
    const progress = new RunProgress();
    progress.apply({ type: "run_started", workspaces: 1 });
    progress.apply({
      type: "workspace_finished",
      workspace: api,
      status: "completed",
      error: null,
    });
    const view = (action: "preview" | "apply") =>
      renderProgress(progress, { title: action, action, elapsedMs: 0, columns: 100, maxLines: 10 });
    expect(view("preview")).toEqual([
      "preview: 1/1 done · 0 running · 0 failed · 0 cached · 0:00",
      "  finishing the preview…",
    ]);
    expect(view("apply")).toEqual([
      "apply: 1/1 done · 0 running · 0 failed · 0 cached · 0:00",
      "  writing branches…",
    ]);
  });

  it("counts a step that started and failed as run, and one that failed before starting as not", () => {
    const progress = new RunProgress();
    progress.apply({ type: "run_started", workspaces: 2 });
    progress.apply({
      type: "step_started",
      workspace: api,
      step_index: 0,
      runtime: "local",
      image: null,
    });
    progress.apply({
      type: "step_finished",
      workspace: api,
      step_index: 0,
      outcome: "failed",
      exit_code: 3,
      duration_ms: 5,
    });
    // A step whose template did not render failed without starting.
    progress.apply({
      type: "step_finished",
      workspace: web,
      step_index: 0,
      outcome: "failed",
      exit_code: null,
      duration_ms: 1,
    });
    expect(progress.summary("failed")).toMatchObject({ steps_run: 1 });
  });

  it("names --skip-errors, the flag, where the server's error names the API's skip_errors", () => {
    const finished = (
      error: string | null,
      code: "workspaces_failed" | null,
      failed: number,
    ): Extract<BatchRunEvent, { type: "run_finished" }> => ({
      type: "run_finished",
      status: error === null ? "completed" : "failed",
      error,
      error_code: code,
      summary: { workspaces: 3, changesets: 1, steps_run: 3, steps_cached: 0, failed },
    });
    const api =
      "2 workspaces failed; see each workspace's error, retry them, or run with skip_errors to keep the others' changesets";
    expect(runErrorText(finished(api, "workspaces_failed", 2), "preview")).toBe(
      "2 workspaces failed; see their errors above, fix and run again, or run with --skip-errors to keep the other workspaces' changesets",
    );
    expect(runErrorText(finished(api, "workspaces_failed", 1), "apply")).toBe(
      "1 workspace failed; see its error above, fix and run again, or run with --skip-errors to keep the other workspaces' changesets and apply them",
    );
    expect(runErrorText(finished("publishing stopped", null, 0), "apply")).toBe(
      "publishing stopped",
    );
    expect(runErrorText(finished(null, null, 0), "apply")).toBeNull();
    expect(runErrorText(null, "apply")).toBeNull();
  });

  it("formats elapsed time as m:ss or h:mm:ss", () => {
    expect(formatElapsed(0)).toBe("0:00");
    expect(formatElapsed(59_999)).toBe("0:59");
    expect(formatElapsed(3_723_000)).toBe("1:02:03");
  });

  it("redraws in place, prints failures above the view, then the table and the summary", () => {
    vi.useFakeTimers();
    const stdout = { ...sink(), isTTY: true, columns: 120, rows: 30 };
    const stderr = sink();
    let clock = 0;
    const view = new TerminalView({
      stdout,
      stderr,
      title: "apply spec.yaml",
      action: "apply",
      now: () => clock,
    });
    view.started(run);
    expect(stderr.text()).toBe(
      "warning: repository github.com/acme/old is excluded from this run\n",
    );
    expect(stdout.text()).toBe(
      "\x1b[?25lapply spec.yaml: 0/0 done · 0 running · 0 failed · 0 cached · 0:00\n",
    );
    const [started, ...rest] = stored([
      { type: "run_started", workspaces: 2 },
      { type: "workspace_started", workspace: api },
      {
        type: "workspace_finished",
        workspace: api,
        status: "failed",
        error: "step 0 failed\nboom",
      },
    ]);
    view.event(started!);
    clock = 2_000;
    vi.advanceTimersByTime(100);
    // The one-line view is erased and drawn again.
    expect(stdout.chunks.at(-1)).toBe(
      "\x1b[1F\x1b[Japply spec.yaml: 0/2 done · 0 running · 0 failed · 0 cached · 0:02\n",
    );
    for (const event of rest) view.event(event);
    expect(stderr.chunks.at(-1)).toBe("✗ github.com/acme/api: failed\n  step 0 failed\n  boom\n");
    const stored_: StoredBatchChangeset = {
      ...changeset,
      id: "00000000-0000-4000-8000-000000000003",
      batch_run_id: run.id,
      workspace_id: "00000000-0000-4000-8000-000000000004",
      state: "unpublished",
      applied_commit: "d".repeat(40),
      apply_operation: "created",
      applied_at: "2025-01-01T00:00:00.000Z",
      pushed: false,
      error: null,
      code_host: null,
      external_id: null,
      external_url: null,
      external_state: null,
      review_state: null,
      checks_state: null,
      mergeable: null,
      synced_at: null,
      tracked: false,
      publish_error: null,
      apply_plan: null,
    };
    const before = stdout.chunks.length;
    view.finished({
      summary: {
        workspaces: 2,
        changesets: 1,
        steps_run: 1,
        steps_cached: 0,
        failed: 1,
        status: "failed",
        applied: 1,
        apply_failed: 0,
      },
      error: "1 workspace failed",
      elapsedMs: 3_000,
      changesets: [stored_],
    });
    expect(stdout.chunks.slice(before)).toEqual([
      "\x1b[1F\x1b[J\x1b[?25h",
      "REPOSITORY           PATH  BRANCH       FILES  +  -  APPLIED             TITLE\n",
      "github.com/acme/api  .     batch/hello  1      2  1  created dddddddddd  Say hello\n",
      "Failed: 2 workspaces (1 failed) · 1 changeset · 1 step run, 0 cached · 1 applied in 0:03\n",
    ]);
    expect(stderr.chunks.at(-1)).toBe("error: 1 workspace failed\n");
    // Stopped: no more redraws.
    const after = stdout.chunks.length;
    vi.advanceTimersByTime(5_000);
    expect(stdout.chunks.length).toBe(after);
  });
});

describe("the terminal view of a paced, budgeted run", () => {
  it("shows the run's spend under its progress, and says which pull requests the rollout opens later", () => {
    vi.useFakeTimers();
    const stdout = { ...sink(), isTTY: true, columns: 120, rows: 30 };
    const stderr = sink();
    const view = new TerminalView({
      stdout,
      stderr,
      title: "apply spec.yaml",
      action: "apply",
      now: () => 0,
    });
    view.started(run);
    view.spend("model spend: 1.3M tokens of 2M tokens");
    vi.advanceTimersByTime(100);
    expect(stdout.chunks.at(-1)).toBe(
      "\x1b[1F\x1b[Japply spec.yaml: 0/0 done · 0 running · 0 failed · 0 cached · 0:00\n  model spend: 1.3M tokens of 2M tokens\n",
    );
    for (const event of stored([
      {
        type: "changeset_scheduled",
        repository: "github.com/acme/api",
        branch: "batch/hello",
        at: "2030-06-03T11:00:00.000Z",
        waiting_for: "hourly_limit",
      },
      {
        type: "changeset_scheduled",
        repository: "github.com/acme/web",
        branch: "batch/hello",
        at: null,
        waiting_for: "canary",
      },
    ])) {
      view.event(event);
    }
    const before = stdout.chunks.length;
    view.finished({
      summary: {
        workspaces: 2,
        changesets: 2,
        steps_run: 2,
        steps_cached: 0,
        failed: 0,
        status: "completed",
        applied: 2,
        apply_failed: 0,
      },
      error: null,
      elapsedMs: 1_000,
    });
    expect(stdout.chunks.slice(before)).toEqual([
      "\x1b[2F\x1b[J\x1b[?25h",
      "model spend: 1.3M tokens of 2M tokens\n",
      `2 pull requests wait for the batch change's paced rollout; "deckhand batch rollout ${run.name}" says when each goes out\n`,
      "Done: 2 workspaces (0 failed) · 2 changesets · 2 steps run, 0 cached · 2 applied in 0:01\n",
    ]);
    vi.useRealTimers();
  });
});

describe("changesetTable and summaryText", () => {
  it("list a preview's changesets without an APPLIED column", () => {
    const preview = {
      ...changeset,
      path: "packages/a",
      id: "x",
      batch_run_id: "r",
      workspace_id: "w",
      state: "unpublished" as const,
      applied_commit: null,
      apply_operation: null,
      applied_at: null,
      pushed: false,
      error: null,
      code_host: null,
      external_id: null,
      external_url: null,
      external_state: null,
      review_state: null,
      checks_state: null,
      mergeable: null,
      synced_at: null,
      tracked: false,
      publish_error: null,
      apply_plan: null,
    };
    expect(changesetTable([preview], "preview")).toEqual([
      "REPOSITORY           PATH        BRANCH       FILES  +  -  TITLE",
      "github.com/acme/api  packages/a  batch/hello  1      2  1  Say hello",
    ]);
    expect(
      summaryText(
        {
          workspaces: 1,
          changesets: 1,
          steps_run: 0,
          steps_cached: 1,
          failed: 0,
          status: "completed",
        },
        61_000,
      ),
    ).toBe("Done: 1 workspace (0 failed) · 1 changeset · 0 steps run, 1 cached in 1:01");
  });
});
