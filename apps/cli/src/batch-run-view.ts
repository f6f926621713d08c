// Where a run's events go while it runs: JSON lines, or a progress view redrawn in place on a
// terminal followed by a table of changesets.
import type { BatchRun, StoredBatchChangeset, StoredBatchRunEvent } from "@deckhand/wire";
import {
  changesetTable,
  eventLine,
  fitLine,
  jsonLine,
  RunProgress,
  type RunSummary,
  renderProgress,
  runLine,
  summaryLine,
  summaryText,
  workspaceLabel,
} from "./batch-run-output.ts";

export interface ViewOutput {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
  rows?: number;
}

export interface RunResult {
  summary: RunSummary;
  /** Why the run failed as a whole (run_finished's error); null otherwise. */
  error: string | null;
  elapsedMs: number;
  /** The stored changesets, for the table; only the terminal view asks for them. */
  changesets?: readonly StoredBatchChangeset[];
}

export interface RunView {
  /** Whether `finished` wants the stored changesets. */
  readonly wantsChangesets: boolean;
  /** Whether `spend` shows anything: the run's spend is read only for a view that does. */
  readonly wantsSpend: boolean;
  started(run: BatchRun): void;
  event(event: StoredBatchRunEvent): void;
  /** Something for the person at the terminal (cancelling, say). */
  note(text: string): void;
  /** The run's model spend in a line (spend-output.ts), shown under its progress; null: none. */
  spend(line: string | null): void;
  finished(result: RunResult): void;
  /** Stops redrawing and gives the terminal its cursor back; safe to call twice. */
  stop(): void;
}

/** One JSON object a line on stdout; notes go to stderr. */
export class JsonLinesView implements RunView {
  readonly wantsChangesets = false;
  readonly wantsSpend = false;
  readonly #stdout: ViewOutput;
  readonly #stderr: ViewOutput;

  constructor(stdout: ViewOutput, stderr: ViewOutput) {
    this.#stdout = stdout;
    this.#stderr = stderr;
  }

  started(run: BatchRun): void {
    this.#stdout.write(jsonLine(runLine(run)));
    for (const message of run.warnings) this.#stdout.write(jsonLine({ type: "warning", message }));
  }

  event(event: StoredBatchRunEvent): void {
    this.#stdout.write(jsonLine(eventLine(event.event)));
  }

  note(text: string): void {
    this.#stderr.write(`${text}\n`);
  }

  /** JSON readers ask the API for spend (`GET /api/batch-runs/:id/spend`). */
  spend(): void {}

  finished(result: RunResult): void {
    this.#stdout.write(jsonLine(summaryLine(result.summary)));
  }

  stop(): void {}
}

const HIDE_CURSOR = "\x1b[?25l";
const SHOW_CURSOR = "\x1b[?25h";
/** Back to the first line of a view `n` lines tall, then clear to the end of the screen. */
const erase = (lines: number) => (lines > 0 ? `\x1b[${lines}F\x1b[J` : "");

export interface TerminalViewOptions {
  stdout: ViewOutput;
  stderr: ViewOutput;
  /** `preview spec.yaml`: the view's first words. */
  title: string;
  action: "preview" | "apply";
  /** Say when a step runs on this machine instead of in its image (not asked for with --runtime local). */
  noteRuntimeFallback?: boolean;
  now?: () => number;
  /** How often the clock in the view moves; 1 s by default. */
  tickMs?: number;
}

/** The live view on a terminal, redrawn in place; failures are printed above it as they come. */
export class TerminalView implements RunView {
  readonly wantsChangesets = true;
  readonly wantsSpend = true;
  readonly #options: TerminalViewOptions;
  readonly #now: () => number;
  readonly #progress = new RunProgress();
  readonly #startedAt: number;
  readonly #fallbackNoted = new Set<number>();
  #drawnLines = 0;
  #spendLine: string | null = null;
  /** Pull requests the batch change's paced rollout opens later, and the batch change. */
  #scheduled = 0;
  #batchChange = "";
  #timer: NodeJS.Timeout | null = null;
  #pending: NodeJS.Timeout | null = null;
  #stopped = false;
  readonly #restoreCursor = () => this.#options.stdout.write(SHOW_CURSOR);

  constructor(options: TerminalViewOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#startedAt = this.#now();
  }

  get #columns(): number {
    return this.#options.stdout.columns || 80;
  }

  started(run: BatchRun): void {
    this.#batchChange = run.name;
    for (const message of run.warnings) this.#options.stderr.write(`warning: ${message}\n`);
    this.#options.stdout.write(HIDE_CURSOR);
    // An exit that skips stop() (a third Ctrl-C) must not leave the terminal without a cursor.
    process.once("exit", this.#restoreCursor);
    this.#timer = setInterval(() => this.#draw(), this.#options.tickMs ?? 1_000);
    this.#draw();
  }

  event(stored: StoredBatchRunEvent): void {
    const event = stored.event;
    this.#progress.apply(event);
    if (event.type === "changeset_scheduled") this.#scheduled += 1;
    // Cancelled workspaces are counted, not listed: a cancel (Ctrl-C, --fail-fast) says why.
    if (
      event.type === "workspace_finished" &&
      (event.status === "failed" || event.status === "timed_out")
    ) {
      const first = (event.error ?? event.status).split("\n").slice(0, 12).join("\n  ");
      this.#above(`✗ ${workspaceLabel(event.workspace)}: ${event.status}\n  ${first}`);
    } else if (event.type === "changeset_apply_failed") {
      this.#above(`✗ ${workspaceLabel(event.workspace)} ${event.branch}: ${event.error}`);
    } else if (
      event.type === "step_runtime_fallback" &&
      this.#options.noteRuntimeFallback !== false &&
      !this.#fallbackNoted.has(event.step_index)
    ) {
      this.#fallbackNoted.add(event.step_index);
      this.#above(
        `note: step ${event.step_index} runs on this machine, not in ${event.image}: ${event.reason}`,
      );
    }
    this.#schedule();
  }

  note(text: string): void {
    this.#above(text);
  }

  spend(line: string | null): void {
    this.#spendLine = line;
    this.#schedule();
  }

  finished(result: RunResult): void {
    this.stop();
    const out = this.#options.stdout;
    if (this.#spendLine !== null) out.write(`${fitLine(this.#spendLine, this.#columns)}\n`);
    const changesets = result.changesets ?? [];
    if (changesets.length > 0) {
      for (const line of changesetTable(changesets, this.#options.action)) {
        out.write(`${fitLine(line, this.#columns)}\n`);
      }
      for (const changeset of changesets) {
        if (changeset.error !== null) {
          this.#options.stderr.write(
            `✗ ${workspaceLabel(changeset)} ${changeset.branch}: ${changeset.error}\n`,
          );
        }
      }
    }
    if (result.error !== null) this.#options.stderr.write(`error: ${result.error}\n`);
    if (this.#scheduled > 0) {
      out.write(
        `${this.#scheduled} pull request${this.#scheduled === 1 ? " waits" : "s wait"} for the batch change's paced rollout; "deckhand batch rollout ${this.#batchChange}" says when each goes out\n`,
      );
    }
    out.write(`${summaryText(result.summary, result.elapsedMs)}\n`);
  }

  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    if (this.#pending !== null) clearTimeout(this.#pending);
    process.off("exit", this.#restoreCursor);
    this.#options.stdout.write(`${erase(this.#drawnLines)}${SHOW_CURSOR}`);
    this.#drawnLines = 0;
  }

  /** Prints `text` where the view was, then the view again below it. */
  #above(text: string): void {
    if (this.#stopped) {
      this.#options.stderr.write(`${text}\n`);
      return;
    }
    this.#options.stdout.write(erase(this.#drawnLines));
    this.#drawnLines = 0;
    this.#options.stderr.write(`${text}\n`);
    this.#draw();
  }

  /** Redraws soon, at most ten times a second however many events arrive. */
  #schedule(): void {
    if (this.#pending !== null || this.#stopped) return;
    this.#pending = setTimeout(() => {
      this.#pending = null;
      this.#draw();
    }, 100);
  }

  #draw(): void {
    if (this.#stopped) return;
    const lines = renderProgress(this.#progress, {
      title: this.#options.title,
      action: this.#options.action,
      elapsedMs: this.#now() - this.#startedAt,
      columns: this.#columns,
      maxLines: Math.max(3, Math.min(20, (this.#options.stdout.rows || 24) - 4)),
    });
    if (this.#spendLine !== null)
      lines.splice(1, 0, fitLine(`  ${this.#spendLine}`, this.#columns));
    this.#options.stdout.write(
      `${erase(this.#drawnLines)}${lines.map((line) => `${line}\n`).join("")}`,
    );
    this.#drawnLines = lines.length;
  }
}
