// A workspace job's progress, written a step boundary at a time. Each write of the run's log is a
// transaction of its own (the run's lock, the events, the NOTIFY, the step rows) and wakes every
// follower of the run to read it; told as they happened, a job of three steps wrote eleven. The
// events that only close something (`workspace_started`, a step's `step_runtime_fallback`, its
// `step_finished`) wait for the next event that opens something: the next step's
// `step_started` (or output), which goes at once with them in one transaction while its process
// starts, or the job's end, whose transaction (finishWorkspace) writes them before
// `workspace_finished`. The log's content and order are the same; what waits is told at most
// HELD_PROGRESS_MS late.
import type { BatchRunEvent } from "@deckhand/wire";
import type { JobProgress } from "./workspace-job-store.ts";

/**
 * How long a closing event waits for the next step boundary at most: a checkout or a step's
 * preparation that takes longer (a large clone, a model lease) does not hold the log back.
 */
export const HELD_PROGRESS_MS = 500;

/** Events that may wait for the next one that opens a step, or for the job's end. */
const HELD_TYPES: ReadonlySet<BatchRunEvent["type"]> = new Set([
  "workspace_started",
  "step_runtime_fallback",
  "step_finished",
]);

export class StepBoundaryProgress {
  readonly #writer: JobProgress;
  readonly #heldMs: number;
  #held: BatchRunEvent[] = [];
  #timer: ReturnType<typeof setTimeout> | null = null;

  constructor(writer: JobProgress, heldMs = HELD_PROGRESS_MS) {
    this.#writer = writer;
    this.#heldMs = heldMs;
  }

  /** Tells one event: held when it only closes something, else written with what was held. */
  tell(event: BatchRunEvent): void {
    this.#held.push(event);
    if (!HELD_TYPES.has(event.type)) {
      this.release();
      return;
    }
    this.#timer ??= setTimeout(() => this.release(), this.#heldMs);
  }

  /** Hands every held event to the writer (which group-commits them), in order. */
  release(): void {
    this.#stopTimer();
    if (this.#held.length === 0) return;
    void this.#writer.append(...this.#held.splice(0)).catch(() => {});
  }

  /** The held events, for the transaction that writes the job's end. */
  take(): BatchRunEvent[] {
    this.#stopTimer();
    return this.#held.splice(0);
  }

  /** Writes taken events after all, when the job's end was not written (its claim was lost). */
  giveBack(events: readonly BatchRunEvent[]): void {
    this.#held.unshift(...events);
    this.release();
  }

  #stopTimer(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }
}
