// What a workspace run tells: its events as they happen (workspace and step starts and ends) and
// the records of its steps, which the workspace job stores once the run has ended.
import { redactSecrets } from "@deckhand/secrets";
import type {
  BatchRunEvent,
  BatchStepOutcome,
  BatchStepRuntime,
  BatchWorkspaceRef,
  BatchWorkspaceStatus,
} from "@deckhand/wire";
import type { JobModelProviderLease } from "./coding-agent-step.ts";
import type { Workspace } from "./resolve-workspaces.ts";
import type { CachedStepResult } from "./step-cache.ts";

export interface StepRecord {
  /** The step's index in the spec's `steps`. */
  stepIndex: number;
  outcome: BatchStepOutcome;
  runtime: BatchStepRuntime | null;
  /**
   * The shell that ran the script (`/usr/bin/bash`, `/bin/sh` in a container); null when the
   * step did not start.
   */
  shell: string | null;
  exitCode: number | null;
  durationMs: number;
  /** Bounded and redacted; "" for skipped and cached steps. */
  stdout: string;
  stderr: string;
  /** Where its result is cached (diff, outputs); null when it produced none (skipped, failed). */
  cacheKey: string | null;
}

export interface WorkspaceRunResult {
  workspace: BatchWorkspaceRef;
  status: BatchWorkspaceStatus;
  /** What went wrong; null when completed. */
  error: string | null;
  steps: StepRecord[];
  /** The result the changesets are built from: the last step that ran or came from the cache. */
  result: CachedStepResult | null;
}

/** How events name a workspace. */
export function workspaceRef(workspace: Workspace): BatchWorkspaceRef {
  return {
    repository: workspace.repository.name,
    branch: workspace.branch,
    path: workspace.path,
    revision: workspace.revision,
  };
}

/** A step's record before it ran: failed until it succeeds. */
export function unstartedStep(stepIndex: number): StepRecord {
  return {
    stepIndex,
    outcome: "failed",
    runtime: null,
    shell: null,
    exitCode: null,
    durationMs: 0,
    stdout: "",
    stderr: "",
    cacheKey: null,
  };
}

/** The events and step records of one workspace run. */
export class WorkspaceRunReport {
  readonly ref: BatchWorkspaceRef;
  readonly records: StepRecord[] = [];
  readonly #onEvent: ((event: BatchRunEvent) => void) | undefined;
  readonly #jobModel: JobModelProviderLease;

  constructor(
    workspace: Workspace,
    onEvent: ((event: BatchRunEvent) => void) | undefined,
    jobModel: JobModelProviderLease,
  ) {
    this.ref = workspaceRef(workspace);
    this.#onEvent = onEvent;
    this.#jobModel = jobModel;
  }

  emit(event: BatchRunEvent): void {
    this.#onEvent?.(event);
  }

  /** A step about to run, recorded (failed until it succeeds). */
  record(stepIndex: number): StepRecord {
    const record = unstartedStep(stepIndex);
    this.records.push(record);
    return record;
  }

  /** A step answered from the cache or skipped by its `if:`: recorded and reported, not run. */
  notRun(stepIndex: number, outcome: "cached" | "skipped", cacheKey: string | null): void {
    const record: StepRecord = { ...unstartedStep(stepIndex), outcome, cacheKey };
    this.records.push(record);
    this.stepFinished(record);
  }

  stepFinished(record: StepRecord): void {
    this.emit({
      type: "step_finished",
      workspace: this.ref,
      step_index: record.stepIndex,
      outcome: record.outcome,
      exit_code: record.exitCode,
      duration_ms: record.durationMs,
    });
  }

  /**
   * Ends the run: the job's model-provider token is revoked before anyone hears the run ended,
   * and no message may carry it.
   */
  async finish(
    status: BatchWorkspaceStatus,
    error: string | null,
    result: CachedStepResult | null,
  ): Promise<WorkspaceRunResult> {
    await this.#jobModel.release();
    const shown = error === null ? null : redactSecrets(error, this.#jobModel.secrets);
    this.emit({ type: "workspace_finished", workspace: this.ref, status, error: shown });
    return { workspace: this.ref, status, error: shown, steps: this.records, result };
  }
}
