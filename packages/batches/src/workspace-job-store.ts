// What a workspace job needs from where runs are kept: its stored job, its claim and the claim's
// state, its progress log, and its end written once under the claim. The database-URL executor
// and the server's own worker reach the database for it (RunStore); `deckhand executor
// --server-url` reaches the server's executor API (http-workspace-job-store.ts). The job runs the
// same over either.
import type { BatchRunEvent, BatchRunOptions } from "@deckhand/wire";
import type { RunRow, SpecRow, WorkspaceClaim, WorkspaceEnd, WorkspaceRow } from "./run-store.ts";

/** What a job reads of its workspace's row. */
export type JobWorkspaceRow = Pick<
  WorkspaceRow,
  "id" | "batchRunId" | "repository" | "branch" | "revision" | "path" | "definition"
>;

/** A workspace's job as stored: what its attempt reads of the workspace, its run and its spec. */
export interface StoredJob {
  row: JobWorkspaceRow;
  run: Pick<RunRow, "id" | "options">;
  spec: Pick<SpecRow, "source" | "file" | "specDirectory">;
}

/** A job's progress log: events appended as they happen, flushed before its end is written. */
export interface JobProgress {
  /** Events appended in one call are written together. */
  append(...events: BatchRunEvent[]): Promise<void>;
  flush(): Promise<void>;
}

export interface WorkspaceJobStore {
  /** The job; null when the workspace is gone or ended (jobs run at least once). */
  job(workspaceId: string): Promise<StoredJob | null>;
  /** Claims the workspace for one attempt of `executor`; null when it ended meanwhile. */
  claim(row: JobWorkspaceRow, executor: string): Promise<WorkspaceClaim | null>;
  /**
   * Starts a claimed workspace's steps: its run is running from now on, and a previous attempt's
   * step rows make way for this attempt's.
   */
  start(row: JobWorkspaceRow): Promise<void>;
  /** Whether the claim still holds, and whether the workspace still runs (not cancelled). */
  claimState(
    workspaceId: string,
    claim: WorkspaceClaim,
  ): Promise<{ holds: boolean; running: boolean }>;
  /** Gives an interrupted attempt's workspace back: nobody runs it until its task comes again. */
  release(workspaceId: string, claim: WorkspaceClaim): Promise<void>;
  /** Where the attempt's progress goes. */
  progress(runId: string, workspaceId: string): JobProgress;
  /**
   * Writes the workspace's end once, while the claim holds (and the run's end when it was the
   * last); true when it was written.
   */
  finishWorkspace(
    row: JobWorkspaceRow,
    run: Pick<RunRow, "id">,
    options: BatchRunOptions,
    claim: WorkspaceClaim,
    end: WorkspaceEnd,
  ): Promise<boolean>;
}
