// Publishing a run's changesets as pull requests: each applied changeset whose spec says
// `published` gets a pull request that says what the changeset says (created once, then updated in
// place), the tracked pull requests of the batch change that the run no longer produces are
// closed, and publishing stops, saying where, when a host keeps refusing. A paced rollout
// (changeset-rollout.ts) opens the new pull requests later, through the same publishing.
import { CodeHostError, connectionName, publishPullRequest } from "@deckhand/code-hosts";
import {
  batchRuns,
  batchSpecs,
  changesets,
  type TaskRegistry,
  type Transaction,
} from "@deckhand/db";
import { errorMessage } from "@deckhand/errors";
import type { BatchChangeRollout, RolloutWindow } from "@deckhand/wire";
import { and, eq, inArray, ne, sql } from "drizzle-orm";
import { appendRunEvents } from "../batch-run-events.ts";
import { BatchesError } from "../batches-error.ts";
import { StoredRunOptionsSchema } from "../stored-run.ts";
import { type ChangesetRecords, type LoadedChangeset, statusOf } from "./changeset-records.ts";
import { ChangesetRollout, type PublishOutcome } from "./changeset-rollout.ts";
import { recordPublication } from "./rollout-store.ts";

export interface PublishRunResult {
  published: number;
  failed: number;
  closed: number;
  /** Set when publishing stopped early (a host kept refusing): what was left, and why. */
  stopped: string | null;
  /** New pull requests a paced rollout opens later (see `rollout`). */
  scheduled: number;
}

export interface PullRequestPublishingOptions {
  /** The clock publications are timed by (ms since the epoch). */
  now: () => number;
  /** The server's rollout windows, read at each use; null for none. */
  rolloutWindows: () => readonly RolloutWindow[] | null;
  /** How often a rollout waiting on canaries or open pull requests looks again. */
  rolloutRecheckMs?: number | undefined;
  /** Reads changesets' state from their hosts (a rollout's canaries' checks). */
  refresh: (changesetIds: readonly string[]) => Promise<void>;
}

const PUBLISHABLE = new Set<unknown>([true, "draft"]);

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

export class PullRequestPublishing {
  readonly #records: ChangesetRecords;
  readonly #rollout: ChangesetRollout;
  readonly #now: () => number;

  constructor(records: ChangesetRecords, options: PullRequestPublishingOptions) {
    this.#records = records;
    this.#now = options.now;
    this.#rollout = new ChangesetRollout({
      database: records.database,
      now: options.now,
      serverWindows: options.rolloutWindows,
      publish: (changesetId) => this.#publishScheduled(changesetId),
      refresh: options.refresh,
      ...(options.rolloutRecheckMs !== undefined ? { recheckMs: options.rolloutRecheckMs } : {}),
    });
  }

  get #db() {
    return this.#records.database.db;
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
    const loaded = await this.#records.load(and(eq(changesets.batchRunId, runId)));
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
        await this.publishOne(item, options.publish_rate, row.published === "draft");
        result.published += 1;
      } catch (error) {
        if (signal?.aborted) throw error;
        const message = errorMessage(error);
        result.failed += 1;
        await this.#records.recordFailure(item, message);
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
    const open = await this.#records.load(
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
    const [item] = await this.#records.load(eq(changesets.id, changesetId));
    if (item === undefined) {
      return { ok: false, hostRefused: false, error: `changeset ${changesetId} is gone` };
    }
    if (item.row.externalId !== null) return { ok: true };
    try {
      await this.publishOne(item, item.runOptions.publish_rate, item.row.published === "draft");
      return { ok: true };
    } catch (error) {
      const message = errorMessage(error);
      await this.#records.recordFailure(item, message);
      return { ok: false, hostRefused: hostRefuses(error), error: message };
    }
  }

  /** A batch change's rollout: its pace, and when each waiting pull request goes out. */
  rollout(name: string): Promise<BatchChangeRollout> {
    return this.#rollout.status(name);
  }

  /** Registers the rollout's task on a worker's registry. */
  register(tasks: TaskRegistry): void {
    this.#rollout.register(tasks);
  }

  /** Creates or updates one changeset's pull request, and tracks it as the branch's newest. */
  async publishOne(
    item: LoadedChangeset,
    perMinute: number | undefined,
    draft: boolean,
  ): Promise<void> {
    const { row } = item;
    const { connection, repository } = this.#records.connectionOf(item);
    const client = this.#records.access.client(connection, perMinute);
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
      await this.#records.history(
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
    const tracked = await this.#records.load(
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
        const { connection, repository } = this.#records.connectionOf(item);
        const client = this.#records.access.client(connection, perMinute);
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
          await this.#records.history(transaction, item, "closed_not_produced", "closed", {
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
        await this.#records.recordFailure(item, `closing: ${errorMessage(error)}`);
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
}
