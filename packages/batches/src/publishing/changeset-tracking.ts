// Tracking published changesets: every tracked pull request is read back from its host on a
// schedule (one queue task per time slot, whatever the number of servers) and on demand; a change
// of its state, review, checks or mergeability is kept in its history and streamed on its run's
// log, and checks that start failing or a pull request that stops merging cleanly run the spec's
// `onCIFailure` or `onMergeConflict` hook (changeset-hooks.ts), a limited number of times.
import { type BatchSpec, formatDiagnostic, parseBatchSpec } from "@deckhand/batch-spec";
import { CodeHostError, type PullRequestStatus } from "@deckhand/code-hosts";
import {
  batchSpecs,
  type ChangesetExternalState,
  changesets,
  enqueue,
  type TaskRegistry,
} from "@deckhand/db";
import { errorMessage } from "@deckhand/errors";
import type { BatchRunEvent } from "@deckhand/wire";
import { and, eq, inArray, isNotNull, sql } from "drizzle-orm";
import { z } from "zod";
import { appendRunEvents } from "../batch-run-events.ts";
import { BatchesError } from "../batches-error.ts";
import { type ChangesetHookName, type HookRunner, hookLimit } from "./changeset-hooks.ts";
import { type ChangesetRecords, type LoadedChangeset, statusOf } from "./changeset-records.ts";

/** The queue task that refreshes every tracked changeset, then schedules its next run. */
export const CHANGESET_TRACKING_TASK = "changeset_tracking";
/** How often tracked changesets are read from their hosts by default. */
export const DEFAULT_TRACKING_INTERVAL_MS = 5 * 60_000;

const TrackingPayloadSchema = z.object({ slot: z.int().min(0) });

export interface ChangesetTrackingOptions {
  /** Runs `onCIFailure` and `onMergeConflict` hooks; without it hooks are reported as not run. */
  hooks?: HookRunner | undefined;
  trackingIntervalMs?: number | undefined;
  /** Told about changesets whose refresh failed (the host down, say); tracking goes on. */
  onError?: ((error: unknown, context: { changesetId: string }) => void) | undefined;
}

export class ChangesetTracking {
  readonly #records: ChangesetRecords;
  readonly #options: ChangesetTrackingOptions;

  constructor(records: ChangesetRecords, options: ChangesetTrackingOptions) {
    this.#records = records;
    this.#options = options;
  }

  get #db() {
    return this.#records.database.db;
  }

  /**
   * Reads tracked changesets from their hosts (a batch change's, some by id, or all): state,
   * review, checks, mergeability. A change is stored with its history and streamed on the run's
   * log; checks that start failing, or a pull request that stops being mergeable, run the spec's
   * `onCIFailure` or `onMergeConflict` hook. A pull request that is gone is `deleted`.
   */
  async refresh(
    selection: { batchChange?: string; changesetIds?: readonly string[] } = {},
    signal?: AbortSignal,
  ): Promise<{ refreshed: number; failed: number }> {
    const tracked = await this.#records.load(
      and(
        eq(changesets.tracked, true),
        isNotNull(changesets.externalId),
        inArray(changesets.externalState, ["open", "draft", "closed"]),
        selection.batchChange === undefined
          ? undefined
          : eq(batchSpecs.name, selection.batchChange),
        selection.changesetIds === undefined
          ? undefined
          : inArray(changesets.id, [...selection.changesetIds]),
      ),
    );
    let refreshed = 0;
    let failed = 0;
    for (const item of tracked) {
      if (signal?.aborted) break;
      try {
        await this.refreshOne(item);
        refreshed += 1;
      } catch (error) {
        failed += 1;
        this.#options.onError?.(error, { changesetId: item.row.id });
      }
    }
    return { refreshed, failed };
  }

  /** Reads one changeset's pull request back, records a change, and runs a hook it calls for. */
  async refreshOne(item: LoadedChangeset): Promise<void> {
    const { row } = item;
    const { connection, repository } = this.#records.connectionOf(item);
    const client = this.#records.access.client(connection);
    let status: PullRequestStatus | undefined;
    try {
      status = await client.readStatus(repository, Number(row.externalId));
    } catch (error) {
      if (!(CodeHostError.isInstance(error) && error.code === "not_found")) throw error;
    }
    const next = {
      externalState: (status?.pullRequest.state ?? "deleted") as ChangesetExternalState,
      reviewState: status?.review ?? null,
      checksState: status?.checks ?? null,
      mergeable: status?.mergeable ?? null,
    };
    const changed =
      next.externalState !== row.externalState ||
      next.reviewState !== row.reviewState ||
      next.checksState !== row.checksState ||
      next.mergeable !== row.mergeable;
    await this.#db.transaction(async (transaction) => {
      await transaction
        .update(changesets)
        .set({
          ...next,
          status: statusOf(next.externalState),
          syncedAt: new Date(),
          updatedAt: new Date(),
        })
        .where(eq(changesets.id, row.id));
      if (!changed) return;
      await this.#records.history(transaction, item, "status", next.externalState, {
        review: next.reviewState,
        checks: next.checksState,
        mergeable: next.mergeable,
        head: status?.pullRequest.headSha ?? null,
      });
      await appendRunEvents(transaction, row.batchRunId, [
        {
          type: "changeset_status",
          repository: row.repository,
          branch: row.branch,
          state: next.externalState,
          review: next.reviewState,
          checks: next.checksState,
          mergeable: next.mergeable,
        },
      ]);
    });
    if (status === undefined) return;
    const live = next.externalState === "open" || next.externalState === "draft";
    if (!live) return;
    const hook: ChangesetHookName | undefined =
      next.checksState === "failing"
        ? "onCIFailure"
        : next.mergeable === "conflicting"
          ? "onMergeConflict"
          : undefined;
    if (hook !== undefined) {
      const [current] = await this.#db.select().from(changesets).where(eq(changesets.id, row.id));
      if (current !== undefined) await this.#runHook({ ...item, row: current }, hook, status);
    }
  }

  #spec(item: LoadedChangeset): BatchSpec {
    const parsed = parseBatchSpec(item.specSource, { file: item.specFile ?? "spec.yaml" });
    if (parsed.spec === undefined) {
      throw new BatchesError(
        "invalid_spec",
        `the stored spec of batch change ${item.batchChange} no longer validates:\n${parsed.diagnostics.map(formatDiagnostic).join("\n")}`,
      );
    }
    return parsed.spec;
  }

  /**
   * Runs a hook for a changeset unless it ran its allowed attempts for the branch's current
   * head; a hook whose run changes nothing, or fails, counts as an attempt too.
   */
  async #runHook(
    item: LoadedChangeset,
    hook: ChangesetHookName,
    status: PullRequestStatus,
  ): Promise<void> {
    const spec = this.#spec(item);
    const steps = spec.changesetHooks?.[hook]?.steps;
    if (steps === undefined || steps.length === 0) return;
    const attempts = z.record(z.string(), z.int()).parse(item.row.hookAttempts ?? {});
    const done = attempts[hook] ?? 0;
    const limit = hookLimit(steps);
    if (done >= limit) return;
    const attempt = done + 1;
    const runner = this.#options.hooks;
    // Claimed by compare-and-set: a refresh on demand and the tracking task seeing the same
    // failure at once run the hook once.
    const [claimed] = await this.#db
      .update(changesets)
      .set({
        hookAttempts: sql`coalesce(${changesets.hookAttempts}, '{}'::jsonb) || jsonb_build_object(${hook}::text, ${attempt}::int)`,
        updatedAt: new Date(),
      })
      .where(
        and(
          eq(changesets.id, item.row.id),
          sql`coalesce((${changesets.hookAttempts} ->> ${hook}::text)::int, 0) = ${done}`,
        ),
      )
      .returning({ id: changesets.id });
    if (claimed === undefined) return;
    let event: Extract<BatchRunEvent, { type: "changeset_hook" }>;
    let pushedCommit: string | null = null;
    try {
      if (runner === undefined) {
        throw new BatchesError("hook_failed", `${hook} cannot run here: no hook runner is set up`);
      }
      const { connection, repository } = this.#records.connectionOf(item);
      const outcome = await runner.run({
        hook,
        spec,
        steps,
        changeset: item.row,
        workspace: item.workspace,
        specDirectory: item.specDirectory,
        connection,
        repositoryOnHost: repository,
        headSha: status.pullRequest.headSha ?? null,
        attempt,
        runtime: item.runOptions.runtime ?? "auto",
      });
      pushedCommit = outcome.commit;
      event = {
        type: "changeset_hook",
        repository: item.row.repository,
        branch: item.row.branch,
        hook,
        attempt,
        status: outcome.commit === null ? "unchanged" : "pushed",
        commit: outcome.commit,
        error: null,
      };
    } catch (error) {
      event = {
        type: "changeset_hook",
        repository: item.row.repository,
        branch: item.row.branch,
        hook,
        attempt,
        status: attempt >= limit ? "exhausted" : "failed",
        commit: null,
        error: errorMessage(error),
      };
    }
    await this.#db.transaction(async (transaction) => {
      await transaction
        .update(changesets)
        .set({
          publishError:
            event.error === null ? null : `${hook} (attempt ${attempt}) failed: ${event.error}`,
          // The hook's commit is the branch's tip now; the next apply keeps it as a commit on
          // top of Deckhand's own.
          ...(pushedCommit !== null ? { appliedCommit: pushedCommit } : {}),
          updatedAt: new Date(),
        })
        .where(eq(changesets.id, item.row.id));
      await this.#records.history(transaction, item, `hook_${event.status}`, null, {
        hook,
        attempt,
        commit: event.commit,
        error: event.error,
      });
      await appendRunEvents(transaction, item.row.batchRunId, [event]);
    });
  }

  /** Registers the tracking task on a worker's registry. */
  register(tasks: TaskRegistry): void {
    tasks.register(CHANGESET_TRACKING_TASK, {
      schema: TrackingPayloadSchema,
      handle: async (payload, context) => {
        try {
          await this.refresh({}, context.signal);
        } finally {
          await this.scheduleTracking(payload.slot + 1);
        }
      },
    });
  }

  /**
   * Queues the tracking task for a time slot (the next one from now by default): one task per
   * slot whatever the number of servers, each scheduling the next when it ends.
   */
  async scheduleTracking(slot?: number): Promise<void> {
    const interval = this.#options.trackingIntervalMs ?? DEFAULT_TRACKING_INTERVAL_MS;
    const next = Math.max(slot ?? 0, Math.floor(Date.now() / interval) + 1);
    await enqueue(this.#db, {
      type: CHANGESET_TRACKING_TASK,
      payload: { slot: next },
      idempotencyKey: `changeset-tracking:${interval}:${next}`,
      runAt: new Date(next * interval),
      maxAttempts: 1,
    });
  }
}
