// Publishing, tracking and operating on the pull requests of a batch change. A batch change is
// every run of one spec name; per repository and branch, the newest published changeset is the
// one it tracks. Publishing makes each applied changeset's pull request say what the changeset
// says (created once, then updated in place), closes the ones a newer run no longer produces,
// and stops, saying where, when a host keeps refusing; tracking reads every tracked pull request
// back on a schedule and on demand, keeps the history, and runs the spec's changeset hooks.
import { type BatchSpec, formatDiagnostic, parseBatchSpec } from "@deckhand/batch-spec";
import {
  type CodeHostClient,
  type CodeHostConnection,
  CodeHostError,
  connectionName,
  type PullRequestState,
  type PullRequestStatus,
  publishPullRequest,
} from "@deckhand/code-hosts";
import {
  batchRuns,
  batchSpecs,
  type ChangesetExternalState,
  type ChangesetStatus,
  changesetEvents,
  changesets,
  type DbHandle,
  enqueue,
  type TaskRegistry,
  type Transaction,
  workspaces,
} from "@deckhand/db";
import { errorMessage } from "@deckhand/errors";
import { DbSpendLedger, PriceTable, type SpendLedger } from "@deckhand/model-proxy";
import type {
  BatchChange,
  BatchChangeBurndownPoint,
  BatchChangeRollout,
  BatchChangeSpend,
  BatchChangeStats,
  BatchRunEvent,
  BatchRunOptions,
  BulkChangesetOperationRequest,
  BulkChangesetOperationResult,
  ChangesetEvent,
  RolloutWindow,
} from "@deckhand/wire";
import { and, asc, desc, eq, inArray, isNotNull, ne, sql } from "drizzle-orm";
import { z } from "zod";
import { appendRunEvents } from "../batch-run-events.ts";
import { BatchesError } from "../batches-error.ts";
import { batchChangeSpend } from "../budgets/batch-change-spend.ts";
import { StoredRunOptionsSchema, StoredWorkspaceDefinitionSchema } from "../stored-run.ts";
import { type ChangesetHookName, type HookRunner, hookLimit } from "./changeset-hooks.ts";
import { ChangesetRollout, type PublishOutcome } from "./changeset-rollout.ts";
import type { CodeHostAccess } from "./code-host-access.ts";
import { publishBlocker } from "./publish-blocker.ts";
import { recordPublication } from "./rollout-store.ts";
import { toStoredChangeset } from "./stored-changeset.ts";

/** The queue task that refreshes every tracked changeset, then schedules its next run. */
export const CHANGESET_TRACKING_TASK = "changeset_tracking";
/** How often tracked changesets are read from their hosts by default. */
export const DEFAULT_TRACKING_INTERVAL_MS = 5 * 60_000;

const TrackingPayloadSchema = z.object({ slot: z.int().min(0) });

type ChangesetRow = typeof changesets.$inferSelect;
type WorkspaceRow = typeof workspaces.$inferSelect;

interface LoadedChangeset {
  row: ChangesetRow;
  workspace: WorkspaceRow;
  batchChange: string;
  specSource: string;
  specFile: string | null;
  specDirectory: string | null;
  runOptions: BatchRunOptions;
}

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

export interface PublishRunResult {
  published: number;
  failed: number;
  closed: number;
  /** Set when publishing stopped early (a host kept refusing): what was left, and why. */
  stopped: string | null;
  /** New pull requests a paced rollout opens later (see `rollout`). */
  scheduled: number;
}

const PUBLISHABLE = new Set<unknown>([true, "draft"]);

function statusOf(state: ChangesetExternalState): ChangesetStatus {
  return state === "deleted" ? "closed" : state;
}

/** Whether an error means the host (not this changeset) is the problem: stop, resume later. */
function hostRefuses(error: unknown): boolean {
  return (
    CodeHostError.isInstance(error) &&
    (error.code === "rate_limited" ||
      error.code === "host_unavailable" ||
      error.code === "unauthorized" ||
      error.code === "token_missing")
  );
}

export class ChangesetPublisher {
  readonly #options: ChangesetPublisherOptions;
  readonly #rollout: ChangesetRollout;
  readonly #now: () => number;

  constructor(options: ChangesetPublisherOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#rollout = new ChangesetRollout({
      database: options.database,
      now: this.#now,
      serverWindows: options.rolloutWindows ?? (() => null),
      publish: (changesetId) => this.#publishScheduled(changesetId),
      refresh: async (changesetIds) => {
        await this.refresh({ changesetIds });
      },
      ...(options.rolloutRecheckMs !== undefined ? { recheckMs: options.rolloutRecheckMs } : {}),
    });
  }

  get #db() {
    return this.#options.database.db;
  }

  get access(): CodeHostAccess {
    return this.#options.access;
  }

  async #load(where: ReturnType<typeof and>): Promise<LoadedChangeset[]> {
    const rows = await this.#db
      .select({ row: changesets, workspace: workspaces, spec: batchSpecs, run: batchRuns })
      .from(changesets)
      .innerJoin(workspaces, eq(workspaces.id, changesets.workspaceId))
      .innerJoin(batchRuns, eq(batchRuns.id, changesets.batchRunId))
      .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
      .where(where)
      .orderBy(asc(workspaces.position), asc(changesets.createdAt));
    return rows.map(({ row, workspace, spec, run }) => ({
      row,
      workspace,
      batchChange: spec.name,
      specSource: spec.source,
      specFile: spec.file,
      specDirectory: spec.specDirectory,
      runOptions: StoredRunOptionsSchema.parse(run.options),
    }));
  }

  #connectionOf(loaded: LoadedChangeset): { connection: CodeHostConnection; repository: string } {
    const definition = StoredWorkspaceDefinitionSchema.parse(loaded.workspace.definition);
    const found = this.access.resolve(definition.repository.url);
    if (found === undefined) {
      throw new BatchesError(
        "publish_failed",
        `repository ${loaded.row.repository} (${definition.repository.url ?? "a directory code host"}) matches no code host connection; add one to codeHostConnections in config.json to publish it`,
      );
    }
    return found;
  }

  /**
   * Publishes the applied changesets of an apply run whose `published` is true or "draft", and
   * closes the tracked changesets of the same batch change that the run no longer produces.
   * Changesets published by an earlier delivery of the job are skipped, so a resumed apply goes
   * on where it stopped. A host that keeps refusing (rate limit, outage, token) stops publishing
   * there; the result says which changesets were left.
   */
  async publishRun(runId: string, signal?: AbortSignal): Promise<PublishRunResult> {
    const [run] = await this.#db.select().from(batchRuns).where(eq(batchRuns.id, runId));
    if (run === undefined) throw new BatchesError("not_found", `no batch run ${runId}`);
    const options = StoredRunOptionsSchema.parse(run.options);
    const loaded = await this.#load(and(eq(changesets.batchRunId, runId)));
    const result: PublishRunResult = {
      published: 0,
      failed: 0,
      closed: 0,
      stopped: null,
      scheduled: 0,
    };
    const left: string[] = [];
    // A paced rollout opens new pull requests later; updates of open ones still go out now.
    const paced = await this.#schedulePaced(runId, loaded);
    result.scheduled = paced.size;
    for (const item of loaded) {
      const { row } = item;
      if (!PUBLISHABLE.has(row.published) || row.appliedAt === null || !row.pushed) continue;
      if (row.externalId !== null || paced.has(row.id)) continue;
      if (result.stopped !== null) {
        left.push(`${row.repository}@${row.branch}`);
        continue;
      }
      if (signal?.aborted) {
        throw new BatchesError("interrupted", `publishing run ${runId} was interrupted`);
      }
      try {
        await this.#publishOne(item, options.publish_rate, row.published === "draft");
        result.published += 1;
      } catch (error) {
        if (signal?.aborted) throw error;
        const message = errorMessage(error);
        result.failed += 1;
        await this.#recordFailure(item, message);
        if (hostRefuses(error)) {
          result.stopped = `publishing stopped at ${row.repository}@${row.branch}: ${message}`;
        }
      }
    }
    if (result.stopped !== null) {
      // Named up to a point: a rollout of thousands says how many more.
      const named = left.slice(0, 20).join(", ");
      const more = left.length > 20 ? ` and ${left.length - 20} more` : "";
      result.stopped += left.length
        ? `; not yet published: ${named}${more}; apply the run again to resume there`
        : "; apply the run again to resume there";
      return result;
    }
    result.closed = await this.#closeDropped(
      runId,
      loaded,
      options.delete_branches === true,
      options.publish_rate,
    );
    return result;
  }

  /**
   * With a paced rollout, schedules the run's changesets that would open a new pull request
   * (those of a branch the batch change has no open pull request for) and returns their ids.
   */
  async #schedulePaced(runId: string, loaded: readonly LoadedChangeset[]): Promise<Set<string>> {
    const settings = await this.#rollout.pacingOf(runId);
    const name = loaded[0]?.batchChange ?? (await this.#batchChangeOfRun(runId));
    if (name === undefined) return new Set();
    if (settings === null) {
      // This run's changesets go out now; what an earlier paced apply still had waiting is
      // superseded by them.
      await this.#rollout.supersede(name, runId);
      return new Set();
    }
    const open = await this.#load(
      and(
        eq(batchSpecs.name, name),
        eq(changesets.tracked, true),
        inArray(changesets.externalState, ["open", "draft"]),
      ),
    );
    const openBranches = new Set(open.map(({ row }) => `${row.repository}\u0000${row.branch}`));
    const fresh = loaded.filter(
      ({ row }) =>
        PUBLISHABLE.has(row.published) &&
        row.appliedAt !== null &&
        row.pushed &&
        row.externalId === null &&
        !openBranches.has(`${row.repository}\u0000${row.branch}`),
    );
    const events = await this.#rollout.schedule({
      batchChange: name,
      runId,
      settings,
      items: fresh.map(({ row }) => ({
        changesetId: row.id,
        draft: row.published === "draft",
        repository: row.repository,
        branch: row.branch,
      })),
    });
    await this.#db.transaction((transaction) => appendRunEvents(transaction, runId, events));
    return new Set(fresh.map(({ row }) => row.id));
  }

  /** Opens a scheduled changeset's pull request for the rollout. */
  async #publishScheduled(changesetId: string): Promise<PublishOutcome> {
    const [item] = await this.#load(eq(changesets.id, changesetId));
    if (item === undefined) {
      return { ok: false, hostRefused: false, error: `changeset ${changesetId} is gone` };
    }
    if (item.row.externalId !== null) return { ok: true };
    try {
      await this.#publishOne(item, item.runOptions.publish_rate, item.row.published === "draft");
      return { ok: true };
    } catch (error) {
      const message = errorMessage(error);
      await this.#recordFailure(item, message);
      return { ok: false, hostRefused: hostRefuses(error), error: message };
    }
  }

  /** A batch change's rollout: its pace, and when each waiting pull request goes out. */
  async rollout(name: string): Promise<BatchChangeRollout> {
    await this.getBatchChange(name);
    return this.#rollout.status(name);
  }

  async #publishOne(
    item: LoadedChangeset,
    perMinute: number | undefined,
    draft: boolean,
  ): Promise<void> {
    const { row } = item;
    const { connection, repository } = this.#connectionOf(item);
    const client = this.access.client(connection, perMinute);
    const published = await publishPullRequest(client, {
      repository,
      head: row.branch,
      base: row.baseBranch,
      title: row.title,
      body: row.body,
      draft: draft && client.capabilities.drafts,
    });
    const pullRequest = published.pullRequest;
    await this.#db.transaction(async (transaction) => {
      // The newest published changeset of a branch is the one the batch change tracks.
      await this.#retireOthers(transaction, item);
      await transaction
        .update(changesets)
        .set({
          codeHost: connectionName(connection),
          externalId: String(pullRequest.number),
          externalUrl: pullRequest.url,
          externalState: pullRequest.state,
          status: statusOf(pullRequest.state),
          tracked: true,
          syncedAt: new Date(),
          publishError: null,
          hookAttempts: {},
          updatedAt: new Date(),
        })
        .where(eq(changesets.id, row.id));
      // Opened pull requests count against the hourly limit and the windows' pace.
      if (published.action === "created") {
        await recordPublication(transaction, {
          changesetId: row.id,
          batchChange: item.batchChange,
          runId: row.batchRunId,
          at: new Date(this.#now()),
        });
      }
      await this.#history(
        transaction,
        item,
        `pull_request_${published.action}`,
        pullRequest.state,
        {
          url: pullRequest.url,
          number: pullRequest.number,
        },
      );
      await appendRunEvents(transaction, row.batchRunId, [
        {
          type: "changeset_published",
          repository: row.repository,
          branch: row.branch,
          url: pullRequest.url,
          action: published.action,
          state: pullRequest.state,
        },
      ]);
    });
  }

  /** Earlier changesets of the same batch change, repository and branch stop being tracked. */
  async #retireOthers(transaction: Transaction, item: LoadedChangeset): Promise<void> {
    await transaction
      .update(changesets)
      .set({ tracked: false, updatedAt: new Date() })
      .where(
        and(
          eq(changesets.repository, item.row.repository),
          eq(changesets.branch, item.row.branch),
          ne(changesets.id, item.row.id),
          eq(changesets.tracked, true),
          sql`${changesets.batchRunId} in (select ${batchRuns.id} from ${batchRuns} join ${batchSpecs} on ${batchSpecs.id} = ${batchRuns.batchSpecId} where ${batchSpecs.name} = ${item.batchChange})`,
        ),
      );
  }

  async #history(
    transaction: Transaction,
    item: LoadedChangeset,
    type: string,
    externalState: string | null,
    payload: Record<string, unknown>,
  ): Promise<void> {
    await transaction.insert(changesetEvents).values({
      changesetId: item.row.id,
      batchChange: item.batchChange,
      repository: item.row.repository,
      branch: item.row.branch,
      type,
      externalState,
      payload,
    });
  }

  async #recordFailure(item: LoadedChangeset, message: string): Promise<void> {
    await this.#db.transaction(async (transaction) => {
      await transaction
        .update(changesets)
        .set({ publishError: message, updatedAt: new Date() })
        .where(eq(changesets.id, item.row.id));
      await this.#history(transaction, item, "publish_failed", null, { error: message });
      await appendRunEvents(transaction, item.row.batchRunId, [
        {
          type: "changeset_publish_failed",
          repository: item.row.repository,
          branch: item.row.branch,
          error: message,
        },
      ]);
    });
  }

  /** Closes tracked, open changesets of the batch change that this run does not produce. */
  async #closeDropped(
    runId: string,
    produced: readonly LoadedChangeset[],
    deleteBranches: boolean,
    perMinute: number | undefined,
  ): Promise<number> {
    const name = produced[0]?.batchChange ?? (await this.#batchChangeOfRun(runId));
    if (name === undefined) return 0;
    const keep = new Set(produced.map(({ row }) => `${row.repository}\u0000${row.branch}`));
    const tracked = await this.#load(
      and(
        eq(batchSpecs.name, name),
        eq(changesets.tracked, true),
        ne(changesets.batchRunId, runId),
        inArray(changesets.externalState, ["open", "draft"]),
      ),
    );
    let closed = 0;
    for (const item of tracked) {
      if (keep.has(`${item.row.repository}\u0000${item.row.branch}`)) continue;
      try {
        const { connection, repository } = this.#connectionOf(item);
        const client = this.access.client(connection, perMinute);
        const pullRequest = await client.closePullRequest(repository, Number(item.row.externalId));
        if (deleteBranches) await client.deleteBranch(repository, item.row.branch);
        closed += 1;
        await this.#db.transaction(async (transaction) => {
          await transaction
            .update(changesets)
            .set({
              externalState: "closed",
              status: "closed",
              syncedAt: new Date(),
              updatedAt: new Date(),
            })
            .where(eq(changesets.id, item.row.id));
          await this.#history(transaction, item, "closed_not_produced", "closed", {
            branch_deleted: deleteBranches,
            closed_by_run: runId,
          });
          await appendRunEvents(transaction, runId, [
            {
              type: "changeset_closed",
              repository: item.row.repository,
              branch: item.row.branch,
              url: pullRequest.url,
              branch_deleted: deleteBranches,
            },
          ]);
        });
      } catch (error) {
        await this.#recordFailure(item, `closing: ${errorMessage(error)}`);
      }
    }
    return closed;
  }

  async #batchChangeOfRun(runId: string): Promise<string | undefined> {
    const [found] = await this.#db
      .select({ name: batchSpecs.name })
      .from(batchRuns)
      .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
      .where(eq(batchRuns.id, runId));
    return found?.name;
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
    const tracked = await this.#load(
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
        await this.#refreshOne(item);
        refreshed += 1;
      } catch (error) {
        failed += 1;
        this.#options.onError?.(error, { changesetId: item.row.id });
      }
    }
    return { refreshed, failed };
  }

  async #refreshOne(item: LoadedChangeset): Promise<void> {
    const { row } = item;
    const { connection, repository } = this.#connectionOf(item);
    const client = this.access.client(connection);
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
      await this.#history(transaction, item, "status", next.externalState, {
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
      const { connection, repository } = this.#connectionOf(item);
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
      await this.#history(transaction, item, `hook_${event.status}`, null, {
        hook,
        attempt,
        commit: event.commit,
        error: event.error,
      });
      await appendRunEvents(transaction, item.row.batchRunId, [event]);
    });
  }

  /** A batch change: its tracked changesets, counts per state and the burndown. */
  async getBatchChange(name: string): Promise<BatchChange> {
    const [newest] = await this.#db
      .select({ id: batchRuns.id })
      .from(batchRuns)
      .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
      .where(eq(batchSpecs.name, name))
      .orderBy(desc(batchRuns.createdAt))
      .limit(1);
    if (newest === undefined) {
      throw new BatchesError("not_found", `no batch run has the spec name ${JSON.stringify(name)}`);
    }
    const change = await this.#batchChange(name);
    return { ...change, spend: change.spend! };
  }

  /** A batch change's counts and burndown, for lists (its changesets are left out). */
  async summary(name: string): Promise<Pick<BatchChange, "stats" | "burndown">> {
    const { stats, burndown } = await this.#batchChange(name, false);
    return { stats, burndown };
  }

  async #batchChange(
    name: string,
    withSpend = true,
  ): Promise<Omit<BatchChange, "spend"> & { spend?: BatchChangeSpend }> {
    const tracked = await this.#load(and(eq(batchSpecs.name, name), eq(changesets.tracked, true)));
    const trackedKeys = new Set(tracked.map(({ row }) => `${row.repository}\u0000${row.branch}`));
    // The newest apply run's changesets that are not published (yet) count as unpublished.
    const [newestApply] = await this.#db
      .select({ id: batchRuns.id })
      .from(batchRuns)
      .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
      .where(and(eq(batchSpecs.name, name), eq(batchRuns.action, "apply")))
      .orderBy(desc(batchRuns.createdAt))
      .limit(1);
    const unpublished =
      newestApply === undefined
        ? []
        : (await this.#load(eq(changesets.batchRunId, newestApply.id))).filter(
            ({ row }) => !trackedKeys.has(`${row.repository}\u0000${row.branch}`),
          );
    const stats: BatchChangeStats = {
      total: tracked.length + unpublished.length,
      unpublished: unpublished.length,
      draft: 0,
      open: 0,
      merged: 0,
      closed: 0,
      deleted: 0,
      checks_failing: 0,
      conflicting: 0,
      approved: 0,
    };
    for (const { row } of tracked) {
      const state = row.externalState ?? "open";
      stats[state] += 1;
      if (state === "open" || state === "draft") {
        if (row.checksState === "failing") stats.checks_failing += 1;
        if (row.mergeable === "conflicting") stats.conflicting += 1;
        if (row.reviewState === "approved") stats.approved += 1;
      }
    }
    const shown = [...tracked, ...unpublished];
    return {
      name,
      stats,
      burndown: await this.#burndown(name),
      changesets: shown.map(({ row }) => toStoredChangeset(row)),
      ...(withSpend
        ? {
            spend: await batchChangeSpend(
              this.#db,
              this.#options.ledger ?? new DbSpendLedger(this.#db, () => PriceTable.none),
              {
                name,
                changesets: shown.map(({ row }) => row),
                merged: stats.merged,
              },
            ),
          }
        : {}),
    };
  }

  /** One point per recorded state change: how many pull requests were in each state then. */
  async #burndown(name: string): Promise<BatchChangeBurndownPoint[]> {
    const events = await this.#db
      .select()
      .from(changesetEvents)
      .where(and(eq(changesetEvents.batchChange, name), isNotNull(changesetEvents.externalState)))
      .orderBy(asc(changesetEvents.id));
    const states = new Map<string, string>();
    const points: BatchChangeBurndownPoint[] = [];
    for (const event of events) {
      states.set(`${event.repository}\u0000${event.branch}`, event.externalState!);
      const point: BatchChangeBurndownPoint = {
        at: event.createdAt.toISOString(),
        draft: 0,
        open: 0,
        merged: 0,
        closed: 0,
        deleted: 0,
      };
      for (const state of states.values()) {
        if (state in point && state !== "at") point[state as PullRequestState | "deleted"] += 1;
      }
      // Changes within one instant are one point.
      if (points.at(-1)?.at === point.at) points[points.length - 1] = point;
      else points.push(point);
    }
    return points;
  }

  async listEvents(changesetId: string): Promise<ChangesetEvent[]> {
    const [row] = await this.#db
      .select({ id: changesets.id })
      .from(changesets)
      .where(eq(changesets.id, changesetId));
    if (row === undefined) throw new BatchesError("not_found", `no changeset ${changesetId}`);
    const events = await this.#db
      .select()
      .from(changesetEvents)
      .where(eq(changesetEvents.changesetId, changesetId))
      .orderBy(asc(changesetEvents.id));
    return events.map((event) => ({
      id: event.id,
      changeset_id: event.changesetId,
      type: event.type,
      external_state: event.externalState,
      payload: z.record(z.string(), z.unknown()).parse(event.payload),
      created_at: event.createdAt.toISOString(),
    }));
  }

  /**
   * One operation on selected changesets of a batch change, each on its own: a changeset that
   * fails reports why and the others go on. `publish` publishes an applied changeset whatever
   * its spec said; `close`, `comment` and `merge` act on its pull request; `retry` runs its
   * workspace job again.
   */
  async bulk(
    name: string,
    request: BulkChangesetOperationRequest,
  ): Promise<BulkChangesetOperationResult> {
    const selected = await this.#load(
      and(eq(batchSpecs.name, name), inArray(changesets.id, request.changeset_ids)),
    );
    const byId = new Map(selected.map((item) => [item.row.id, item]));
    const results: BulkChangesetOperationResult["results"] = [];
    for (const id of request.changeset_ids) {
      const item = byId.get(id);
      if (item === undefined) {
        results.push({ changeset_id: id, ok: false, error: `no changeset ${id} in ${name}` });
        continue;
      }
      try {
        await this.#operate(item, request);
        results.push({ changeset_id: id, ok: true, error: null });
      } catch (error) {
        results.push({ changeset_id: id, ok: false, error: errorMessage(error) });
      }
    }
    return { results };
  }

  async #operate(item: LoadedChangeset, request: BulkChangesetOperationRequest): Promise<void> {
    const { row } = item;
    if (request.operation === "retry") {
      if (this.#options.retryWorkspace === undefined) {
        throw new BatchesError("conflict", "retrying workspaces is not available here");
      }
      // Running a workspace again replaces its changesets: never one a pull request tracks.
      if (row.externalId !== null) {
        throw new BatchesError(
          "conflict",
          `changeset ${row.repository}@${row.branch} is published; apply the spec again to change it`,
        );
      }
      await this.#options.retryWorkspace(row.workspaceId);
      return;
    }
    if (request.operation === "publish") {
      const definition = StoredWorkspaceDefinitionSchema.parse(item.workspace.definition);
      const blocker = publishBlocker({
        repository: row.repository,
        branch: row.branch,
        applied: row.appliedAt !== null,
        pushed: row.pushed,
        definition,
        pushRefused: item.runOptions.push === false,
        connected: this.access.resolve(definition.repository.url) !== undefined,
      });
      if (blocker !== null) throw new BatchesError("conflict", blocker);
      await this.#publishOne(item, undefined, request.draft === true);
      return;
    }
    if (row.externalId === null) {
      throw new BatchesError(
        "conflict",
        `changeset ${row.repository}@${row.branch} is not published; publish it first`,
      );
    }
    const { connection, repository } = this.#connectionOf(item);
    const client: CodeHostClient = this.access.client(connection);
    const number = Number(row.externalId);
    if (request.operation === "comment") {
      await client.comment(repository, number, request.body);
      await this.#db.transaction((transaction) =>
        this.#history(transaction, item, "commented", null, {}),
      );
      return;
    }
    if (request.operation === "close") {
      await client.closePullRequest(repository, number);
    } else {
      if (!client.capabilities.merge) {
        throw new BatchesError("conflict", `${connectionName(connection)} cannot merge here`);
      }
      await client.merge(repository, number, request.method ? { method: request.method } : {});
    }
    await this.#refreshOne(item);
  }

  /** Registers the tracking and rollout tasks on a worker's registry. */
  register(tasks: TaskRegistry): void {
    this.#rollout.register(tasks);
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
