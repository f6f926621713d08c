// Publishing, tracking and operating on the pull requests of a batch change, behind one object
// the run service and the API routes hold. A batch change is every run of one spec name; per
// repository and branch, the newest published changeset is the one it tracks. Each job is its
// own module: publishing a run's changesets (pull-request-publishing.ts), tracking them and
// running their hooks (changeset-tracking.ts), bulk operations (changeset-operations.ts) and what
// the API reads (batch-change-read-model.ts), over the changesets' records
// (changeset-records.ts).
import type { DbHandle, TaskRegistry } from "@deckhand/db";
import type {
  BatchChange,
  BulkChangesetOperationRequest,
  BulkChangesetOperationResult,
  ChangesetEvent,
} from "@deckhand/wire";
import { BatchChangeReadModel } from "./batch-change-read-model.ts";
import type { HookRunner } from "./changeset-hooks.ts";
import { ChangesetOperations } from "./changeset-operations.ts";
import { ChangesetRecords } from "./changeset-records.ts";
import { ChangesetTracking } from "./changeset-tracking.ts";
import type { CodeHostAccess } from "./code-host-access.ts";
import { type PublishRunResult, PullRequestPublishing } from "./pull-request-publishing.ts";

export { CHANGESET_TRACKING_TASK, DEFAULT_TRACKING_INTERVAL_MS } from "./changeset-tracking.ts";
export type { PublishRunResult } from "./pull-request-publishing.ts";

export interface ChangesetPublisherOptions {
  database: DbHandle;
  access: CodeHostAccess;
  /** Runs `onCIFailure` and `onMergeConflict` hooks; without it hooks are reported as not run. */
  hooks?: HookRunner;
  /** Runs a changeset's workspace job again (bulk `retry`): the run service's `retryWorkspace`. */
  retryWorkspace?: (workspaceId: string) => Promise<unknown>;
  trackingIntervalMs?: number;
  /** Told about changesets whose refresh failed (the host down, say); tracking goes on. */
  onError?: (error: unknown, context: { changesetId: string }) => void;
}

export class ChangesetPublisher {
  readonly #publishing: PullRequestPublishing;
  readonly #tracking: ChangesetTracking;
  readonly #operations: ChangesetOperations;
  readonly #reads: BatchChangeReadModel;
  readonly access: CodeHostAccess;

  constructor(options: ChangesetPublisherOptions) {
    const records = new ChangesetRecords(options.database, options.access);
    this.access = options.access;
    this.#publishing = new PullRequestPublishing(records);
    this.#tracking = new ChangesetTracking(records, {
      hooks: options.hooks,
      trackingIntervalMs: options.trackingIntervalMs,
      onError: options.onError,
    });
    this.#operations = new ChangesetOperations({
      records,
      publishing: this.#publishing,
      tracking: this.#tracking,
      retryWorkspace: options.retryWorkspace,
    });
    this.#reads = new BatchChangeReadModel(records);
  }

  /**
   * Publishes the applied changesets of an apply run whose `published` is true or "draft", and
   * closes the tracked changesets of the same batch change that the run no longer produces
   * (pull-request-publishing.ts). Resumable: what an earlier delivery published is skipped.
   */
  publishRun(runId: string, signal?: AbortSignal): Promise<PublishRunResult> {
    return this.#publishing.publishRun(runId, signal);
  }

  /** Reads tracked changesets from their hosts, running hooks they call for (changeset-tracking.ts). */
  refresh(
    selection: { batchChange?: string; changesetIds?: readonly string[] } = {},
    signal?: AbortSignal,
  ): Promise<{ refreshed: number; failed: number }> {
    return this.#tracking.refresh(selection, signal);
  }

  /** A batch change: its tracked changesets, counts per state and the burndown. */
  getBatchChange(name: string): Promise<BatchChange> {
    return this.#reads.getBatchChange(name);
  }

  /** A batch change's counts and burndown, for lists (its changesets are left out). */
  summary(name: string): Promise<Pick<BatchChange, "stats" | "burndown">> {
    return this.#reads.summary(name);
  }

  listEvents(changesetId: string): Promise<ChangesetEvent[]> {
    return this.#reads.listEvents(changesetId);
  }

  /** One operation on selected changesets of a batch change (changeset-operations.ts). */
  bulk(
    name: string,
    request: BulkChangesetOperationRequest,
  ): Promise<BulkChangesetOperationResult> {
    return this.#operations.bulk(name, request);
  }

  /** Registers the tracking task on a worker's registry. */
  register(tasks: TaskRegistry): void {
    this.#tracking.register(tasks);
  }

  /** Queues the tracking task for a time slot (the next one from now by default). */
  scheduleTracking(slot?: number): Promise<void> {
    return this.#tracking.scheduleTracking(slot);
  }
}
