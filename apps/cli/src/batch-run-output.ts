// What `deckhand batch preview|apply` prints, as pure functions of the run's events: the JSON
// lines (a stable contract, docs/batch-changes.md) and the terminal's progress view and tables.
import type {
  BatchChangeset,
  BatchRun,
  BatchRunEvent,
  BatchRunSummary,
  BatchWorkspaceRef,
  StoredBatchChangeset,
} from "@deckhand/wire";

type EventOf<Type extends BatchRunEvent["type"]> = Extract<BatchRunEvent, { type: Type }>;

/** One JSON line. */
export function jsonLine(value: Record<string, unknown>): string {
  return `${JSON.stringify(value)}\n`;
}

/** The first line: which run this is. */
export function runLine(run: BatchRun): Record<string, unknown> {
  return { type: "batch_run", id: run.id, name: run.name, action: run.action };
}

/**
 * A run event as its JSON line: the event itself (its `type` and its wire fields), except a
 * `changeset` event, whose changeset is flattened into the line.
 */
export function eventLine(event: BatchRunEvent): Record<string, unknown> {
  if (event.type === "changeset") return { type: "changeset", ...event.changeset };
  return { ...event };
}

/** The last line: the run's numbers, its status and, for apply, how many branches were written. */
export function summaryLine(summary: RunSummary): Record<string, unknown> {
  return { type: "summary", ...summary };
}

export interface RunSummary extends BatchRunSummary {
  /** How the run ended: `completed`, `failed` or `cancelled`. */
  status: string;
  /** Apply only: changesets written as branches, and those that could not be. */
  applied?: number;
  apply_failed?: number;
}

/** A workspace's progress as its events tell it. */
export interface WorkspaceProgress {
  ref: BatchWorkspaceRef;
  state: "running" | "completed" | "failed" | "timed_out" | "cancelled";
  /** The step running now (its index in the spec's steps); null between steps. */
  step: number | null;
  stepsRun: number;
  stepsCached: number;
  error: string | null;
}

function workspaceKey(ref: BatchWorkspaceRef): string {
  return JSON.stringify([ref.repository, ref.branch, ref.path, ref.revision]);
}

/** How a workspace is named to people: its repository, and its path in a monorepo. */
export function workspaceLabel(ref: { repository: string; path: string }): string {
  return ref.path === "" ? ref.repository : `${ref.repository} (${ref.path})`;
}

/** A run's progress folded from its events, for the terminal view and a summary of last resort. */
export class RunProgress {
  total = 0;
  readonly workspaces = new Map<string, WorkspaceProgress>();
  readonly changesets: BatchChangeset[] = [];
  readonly applied: EventOf<"changeset_applied">[] = [];
  readonly applyFailed: EventOf<"changeset_apply_failed">[] = [];
  finished: EventOf<"run_finished"> | null = null;

  #workspace(ref: BatchWorkspaceRef): WorkspaceProgress {
    const key = workspaceKey(ref);
    let found = this.workspaces.get(key);
    if (found === undefined) {
      found = { ref, state: "running", step: null, stepsRun: 0, stepsCached: 0, error: null };
      this.workspaces.set(key, found);
    }
    return found;
  }

  apply(event: BatchRunEvent): void {
    switch (event.type) {
      case "run_started":
        this.total = event.workspaces;
        return;
      case "workspace_started": {
        // A workspace that runs again (its executor died) starts over.
        const workspace = this.#workspace(event.workspace);
        Object.assign(workspace, { state: "running", step: null, stepsRun: 0, stepsCached: 0 });
        return;
      }
      case "step_started":
        this.#workspace(event.workspace).step = event.step_index;
        return;
      case "step_finished": {
        const workspace = this.#workspace(event.workspace);
        // A step that started and failed ran too, as the server counts `steps_run`.
        const started = workspace.step === event.step_index;
        workspace.step = null;
        if (event.outcome === "run" || (event.outcome === "failed" && started)) {
          workspace.stepsRun += 1;
        }
        if (event.outcome === "cached") workspace.stepsCached += 1;
        return;
      }
      case "workspace_finished": {
        const workspace = this.#workspace(event.workspace);
        workspace.state = event.status;
        workspace.step = null;
        workspace.error = event.error;
        return;
      }
      case "changeset":
        this.changesets.push(event.changeset);
        return;
      case "changeset_applied":
        this.applied.push(event);
        return;
      case "changeset_apply_failed":
        this.applyFailed.push(event);
        return;
      case "run_finished":
        this.finished = event;
        return;
      default:
        return;
    }
  }

  /** Workspaces by state: `done` counts every finished one, `cached` those that ran no step. */
  counts(): {
    total: number;
    done: number;
    running: number;
    failed: number;
    cancelled: number;
    cached: number;
  } {
    let done = 0;
    let running = 0;
    let failed = 0;
    let cancelled = 0;
    let cached = 0;
    for (const workspace of this.workspaces.values()) {
      if (workspace.state === "running") {
        running += 1;
        continue;
      }
      done += 1;
      if (workspace.state === "failed" || workspace.state === "timed_out") failed += 1;
      if (workspace.state === "cancelled") cancelled += 1;
      if (workspace.state === "completed" && workspace.stepsRun === 0 && workspace.stepsCached > 0)
        cached += 1;
    }
    return {
      total: Math.max(this.total, this.workspaces.size),
      done,
      running,
      failed,
      cancelled,
      cached,
    };
  }

  /** The summary the events add up to, when the run's own `run_finished` never came. */
  summary(status: string): RunSummary {
    let stepsRun = 0;
    let stepsCached = 0;
    for (const workspace of this.workspaces.values()) {
      stepsRun += workspace.stepsRun;
      stepsCached += workspace.stepsCached;
    }
    const counts = this.counts();
    return {
      workspaces: counts.total,
      changesets: this.changesets.length,
      steps_run: stepsRun,
      steps_cached: stepsCached,
      failed: counts.failed + counts.cancelled,
      status,
    };
  }
}

/** `1:05`, `12:00`, `1:02:03`. */
export function formatElapsed(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1_000));
  const hours = Math.floor(seconds / 3_600);
  const minutes = Math.floor((seconds % 3_600) / 60);
  const rest = String(seconds % 60).padStart(2, "0");
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, "0")}:${rest}` : `${minutes}:${rest}`;
}

/** Cuts a line to the terminal's width, so a redraw's line count stays the lines it wrote. */
export function fitLine(line: string, columns: number): string {
  const width = Math.max(20, columns - 1);
  return line.length <= width ? line : `${line.slice(0, width - 1)}…`;
}

export interface ProgressViewOptions {
  /** Names the run on the first line: `preview spec.yaml`. */
  title: string;
  /** What the run does once its workspaces are done: a preview stores changesets, apply writes branches. */
  action: "preview" | "apply";
  elapsedMs: number;
  columns: number;
  /** How many lines the view may take; running workspaces past that are counted, not listed. */
  maxLines: number;
}

/** The live view: counts and elapsed time, then each running workspace and its current step. */
export function renderProgress(progress: RunProgress, options: ProgressViewOptions): string[] {
  const counts = progress.counts();
  const parts = [
    `${counts.done}/${counts.total} done`,
    `${counts.running} running`,
    `${counts.failed} failed`,
    `${counts.cached} cached`,
  ];
  if (counts.cancelled > 0) parts.push(`${counts.cancelled} cancelled`);
  const lines = [`${options.title}: ${parts.join(" · ")} · ${formatElapsed(options.elapsedMs)}`];
  if (progress.finished === null && counts.total > 0 && counts.done === counts.total) {
    // A preview writes no branch: it only waits for the run to end with its changesets.
    lines.push(options.action === "apply" ? "  writing branches…" : "  finishing the preview…");
  }
  const running = [...progress.workspaces.values()].filter(
    (workspace) => workspace.state === "running",
  );
  const room = Math.max(1, options.maxLines - lines.length);
  const shown = running.length > room ? running.slice(0, room - 1) : running;
  for (const workspace of shown) {
    // Numbered from 0 like `step_index`, the UI's cards and every error ("step 0 failed …").
    const step = workspace.step === null ? "starting" : `step ${workspace.step}`;
    lines.push(`  ${workspaceLabel(workspace.ref)}  ${step}`);
  }
  if (shown.length < running.length) lines.push(`  … and ${running.length - shown.length} more`);
  return lines.map((line) => fitLine(line, options.columns));
}

/** Rows as columns padded to their widest cell, two spaces apart. */
export function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join("  ")
      .trimEnd(),
  );
}

/** What applying a stored changeset did, for the APPLIED column. */
function appliedCell(changeset: StoredBatchChangeset): string {
  if (changeset.apply_operation !== null && changeset.applied_commit !== null) {
    return `${changeset.apply_operation} ${changeset.applied_commit.slice(0, 10)}${changeset.pushed ? " pushed" : ""}`;
  }
  return changeset.error !== null ? "failed" : "-";
}

/** The changesets as a table: where each goes, how big it is, and (apply) what was written. */
export function changesetTable(
  changesets: readonly StoredBatchChangeset[],
  action: "preview" | "apply",
): string[] {
  const header = ["REPOSITORY", "PATH", "BRANCH", "FILES", "+", "-"];
  if (action === "apply") header.push("APPLIED");
  header.push("TITLE");
  const rows = [header];
  for (const changeset of changesets) {
    const row = [
      changeset.repository,
      changeset.path === "" ? "." : changeset.path,
      changeset.branch,
      String(changeset.stats.files),
      String(changeset.stats.insertions),
      String(changeset.stats.deletions),
    ];
    if (action === "apply") row.push(appliedCell(changeset));
    row.push(changeset.title);
    rows.push(row);
  }
  return table(rows);
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/**
 * Why the run failed, as the CLI says it: the server words the failed-workspaces error for the
 * API (`skip_errors`), and the command line's switch is `--skip-errors`. Other errors as given.
 */
export function runErrorText(
  finished: EventOf<"run_finished"> | null,
  action: "preview" | "apply",
): string | null {
  if (finished === null || finished.error === null) return null;
  if (finished.error_code !== "workspaces_failed") return finished.error;
  const failed = finished.summary.failed;
  return `${plural(failed, "workspace")} failed; see ${failed === 1 ? "its error" : "their errors"} above, fix and run again, or run with --skip-errors to keep the other workspaces' changesets${action === "apply" ? " and apply them" : ""}`;
}

/** The closing line on a terminal. */
export function summaryText(summary: RunSummary, elapsedMs: number): string {
  const parts = [
    `${plural(summary.workspaces, "workspace")} (${summary.failed} failed)`,
    plural(summary.changesets, "changeset"),
    `${summary.steps_run} step${summary.steps_run === 1 ? "" : "s"} run, ${summary.steps_cached} cached`,
  ];
  if (summary.applied !== undefined) {
    parts.push(
      `${summary.applied} applied${summary.apply_failed ? `, ${summary.apply_failed} not applied` : ""}`,
    );
  }
  return `${summary.status === "completed" ? "Done" : summary.status === "cancelled" ? "Cancelled" : "Failed"}: ${parts.join(" · ")} in ${formatElapsed(elapsedMs)}`;
}
