// The executor API's JSON forms (snake_case, @deckhand/wire) of what the engine keeps in its own
// shapes: a claimed job, a workspace's end and its step records, a cached step result. The server
// and `deckhand executor --server-url` both convert through here, so the two sides read each
// other's forms the same way.
import type {
  CompleteExecutorJobRequest,
  ExecutorCachedStep,
  ExecutorJob,
  ExecutorStepRecord,
} from "@deckhand/wire";
import type { WorkspaceEnd } from "./run-store.ts";
import type { CachedStepResult } from "./step-cache.ts";
import type { StoredJob } from "./workspace-job-store.ts";
import type { StepRecord } from "./workspace-run-report.ts";

export function stepRecordToWire(step: StepRecord): ExecutorStepRecord {
  return {
    step_index: step.stepIndex,
    outcome: step.outcome,
    runtime: step.runtime,
    shell: step.shell,
    exit_code: step.exitCode,
    duration_ms: step.durationMs,
    stdout: step.stdout,
    stderr: step.stderr,
    cache_key: step.cacheKey,
  };
}

export function stepRecordFromWire(step: ExecutorStepRecord): StepRecord {
  return {
    stepIndex: step.step_index,
    outcome: step.outcome,
    runtime: step.runtime,
    shell: step.shell,
    exitCode: step.exit_code,
    durationMs: step.duration_ms,
    stdout: step.stdout,
    stderr: step.stderr,
    cacheKey: step.cache_key,
  };
}

/** A workspace's end as the complete call sends it (without the lease). */
export function workspaceEndToWire(end: WorkspaceEnd): Omit<CompleteExecutorJobRequest, "lease"> {
  return {
    status: end.status,
    error: end.error,
    diff: end.diff,
    steps: end.steps.map(stepRecordToWire),
    changesets: [...end.changesets],
    events: [...end.events],
  };
}

export function workspaceEndFromWire(end: Omit<CompleteExecutorJobRequest, "lease">): WorkspaceEnd {
  return {
    status: end.status,
    error: end.error,
    diff: end.diff,
    steps: end.steps.map(stepRecordFromWire),
    changesets: end.changesets,
    events: end.events,
  };
}

export function cachedStepToWire(result: CachedStepResult): ExecutorCachedStep {
  return {
    step_index: result.stepIndex,
    exit_code: result.exitCode,
    diff: result.diff,
    files: result.files.map((file) => ({
      path: file.path,
      ...(file.previousPath !== undefined ? { previous_path: file.previousPath } : {}),
      status: file.status,
      insertions: file.insertions,
      deletions: file.deletions,
    })),
    outputs: result.outputs,
    stdout: result.stdout,
    stderr: result.stderr,
  };
}

export function cachedStepFromWire(result: ExecutorCachedStep): CachedStepResult {
  return {
    stepIndex: result.step_index,
    exitCode: result.exit_code,
    diff: result.diff,
    files: result.files.map((file) => ({
      path: file.path,
      ...(file.previous_path !== undefined ? { previousPath: file.previous_path } : {}),
      status: file.status,
      insertions: file.insertions,
      deletions: file.deletions,
    })),
    outputs: result.outputs,
    stdout: result.stdout,
    stderr: result.stderr,
  };
}

/** The stored job a claim answered, as the workspace job reads it. */
export function storedJobFromWire(job: ExecutorJob): StoredJob {
  return {
    row: {
      id: job.workspace.id,
      batchRunId: job.workspace.batch_run_id,
      repository: job.workspace.repository,
      branch: job.workspace.branch,
      revision: job.workspace.revision,
      path: job.workspace.path,
      definition: job.workspace.definition,
    },
    run: { id: job.run.id, options: job.run.options },
    spec: {
      source: job.spec.source,
      file: job.spec.file,
      specDirectory: job.spec.spec_directory,
    },
  };
}
