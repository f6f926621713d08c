// Publishing, tracking and operating on the pull requests of a batch change, behind one object
// the run service and the API routes hold. A batch change is every run of one spec name; per
// repository and branch, the newest published changeset is the one it tracks. Each job is its
// own module: publishing a run's changesets, now or paced by a rollout
// (pull-request-publishing.ts, changeset-rollout.ts), tracking them and running their hooks
// (changeset-tracking.ts), bulk operations (changeset-operations.ts) and what the API reads
// (batch-change-read-model.ts), over the changesets' records (changeset-records.ts).
import type { DbHandle, TaskRegistry } from "@deckhand/db";
import type { SpendLedger } from "@deckhand/model-proxy";
import type {
  BatchChange,
  BatchChangeRollout,
  BulkChangesetOperationRequest,
  BulkChangesetOperationResult,
  ChangesetEvent,
  RolloutWindow,
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
  /**
   * The server's `batchChanges.rolloutWindows` (config.json), read at each use: with windows,
   * every batch change's pull requests go out only inside them, at their pace. Null or absent:
   * none.
   */
  rolloutWindows?: () => readonly RolloutWindow[] | null;
  /** How often a rollout waiting on canaries or open pull requests looks again (1 minute). */
  rolloutRecheckMs?: number;
  /** The clock publications are timed by (ms since the epoch); tests set it. */
  now?: () => number;
  /** Where the batch change's model spend is read; its tokens, unpriced, by default. */
  ledger?: SpendLedger;
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
    this.#publishing = new PullRequestPublishing(records, {
      now: options.now ?? Date.now,
      rolloutWindows: options.rolloutWindows ?? (() => null),
      rolloutRecheckMs: options.rolloutRecheckMs,
      refresh: async (changesetIds) => {
        await this.refresh({ changesetIds });
      },
    });
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
    this.#reads = new BatchChangeReadModel(records, options.ledger);
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

  /** A batch change: its tracked changesets, counts per state, the burndown and its spend. */
  getBatchChange(name: string): Promise<BatchChange> {
    return this.#reads.getBatchChange(name);
  }

  /** A batch change's rollout: its pace, and when each waiting pull request goes out. */
  async rollout(name: string): Promise<BatchChangeRollout> {
    await this.getBatchChange(name);
    return this.#publishing.rollout(name);
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

  /** Registers the tracking and rollout tasks on a worker's registry. */
  register(tasks: TaskRegistry): void {
    this.#publishing.register(tasks);
    this.#tracking.register(tasks);
  }

  /** Queues the tracking task for a time slot (the next one from now by default). */
  scheduleTracking(slot?: number): Promise<void> {
    return this.#tracking.scheduleTracking(slot);
  }
}
