// The apply job (queue task `batch_apply`): writes each changeset of a finished run as its
// branch, keeping what a person added to a branch since Deckhand last applied it (the last apply
// of that repository and branch, in any run), then publishes them (publishing/) and ends the
// run. Changesets already applied or published by an earlier delivery of the job are skipped,
// so an apply that failed part-way is resumed by applying the run again.
import { batchRuns, changesets, type TaskContext, workspaces } from "@deckhand/db";
import { errorMessage } from "@deckhand/errors";
import type { BatchRunEvent, BatchRunOptions } from "@deckhand/wire";
import { and, asc, desc, eq, sql } from "drizzle-orm";
import { type AppliedChangeset, applyChangeset } from "./apply-changeset.ts";
import { appendRunEvents } from "./batch-run-events.ts";
import { BatchesError } from "./batches-error.ts";
import type { ChangesetPublisher, PublishRunResult } from "./publishing/changeset-publisher.ts";
import { toStoredChangeset } from "./publishing/stored-changeset.ts";
import type { RepositorySource } from "./repository-source.ts";
import { type RunStore, rowRef, type WorkspaceRow } from "./run-store.ts";
import {
  StoredRunOptionsSchema as StoredOptions,
  StoredWorkspaceDefinitionSchema,
} from "./stored-run.ts";

type ChangesetRow = typeof changesets.$inferSelect;

/**
 * Repositories whose changesets are applied at once, at most: each apply is a dozen short git
 * processes and a push, mostly waiting, so a few side by side finish sooner; a run's
 * `parallelism` lowers it.
 */
const APPLY_PARALLELISM = 4;

/** How one changeset's apply went, to be stored. */
type ApplyOutcome = { row: ChangesetRow; workspace: WorkspaceRow } & (
  | { applied: AppliedChangeset; appliedAt: Date }
  | { error: string }
);

export interface ApplyJobOptions {
  store: RunStore;
  repositories: RepositorySource;
  /** Publishes the applied changesets; without it they are only written as branches. */
  publishing: ChangesetPublisher | undefined;
}

export class ApplyJob {
  readonly #options: ApplyJobOptions;

  constructor(options: ApplyJobOptions) {
    this.#options = options;
  }

  get #db() {
    return this.#options.store.database.db;
  }

  async run(runId: string, context: TaskContext): Promise<void> {
    const [run] = await this.#db.select().from(batchRuns).where(eq(batchRuns.id, runId));
    if (run === undefined || run.status !== "running" || run.action !== "apply") return;
    const options = StoredOptions.parse(run.options);
    const rows = await this.#db
      .select({ changeset: changesets, workspace: workspaces })
      .from(changesets)
      .innerJoin(workspaces, eq(workspaces.id, changesets.workspaceId))
      .where(eq(changesets.batchRunId, runId))
      .orderBy(asc(workspaces.position), asc(changesets.createdAt));
    const pending = rows.filter(({ changeset }) => changeset.appliedAt === null);
    // Changesets are stored in the order of their workspaces, whichever finishes first.
    const recorder = new InOrderRecorder<ApplyOutcome>((outcomes) => this.#record(runId, outcomes));
    // What this delivery created, by repository and branch: stored only once the changesets
    // before it are, so a later changeset of the same branch asks here first.
    const created = new Map<string, string>();
    const parallelism = Math.min(options.parallelism ?? APPLY_PARALLELISM, APPLY_PARALLELISM);
    const work = forEachRepository(
      pending,
      parallelism,
      async ({ changeset, workspace }, index) => {
        if (context.signal.aborted)
          throw new BatchesError("interrupted", `applying run ${runId} was interrupted`);
        const key = `${changeset.repository}\0${changeset.branch}`;
        const outcome = await this.#applyOne(changeset, workspace, options, {
          earlier: created.get(key),
          signal: context.signal,
        });
        if ("applied" in outcome) created.set(key, outcome.applied.createdCommit);
        await recorder.add(index, outcome);
      },
    );
    // Interrupted or not, what was applied is stored.
    await work.finally(() => recorder.flush());
    // Pull requests for the applied changesets (publishing/), resumable as applying is.
    const published = await this.#options.publishing?.publishRun(runId, context.signal);
    await this.#finish(runId, published);
  }

  /**
   * Writes one changeset as its branch and says how, or why it could not be; throws only when
   * the job was interrupted.
   */
  async #applyOne(
    row: ChangesetRow,
    workspace: WorkspaceRow,
    options: BatchRunOptions,
    { earlier, signal }: { earlier: string | undefined; signal: AbortSignal },
  ): Promise<ApplyOutcome> {
    const { repositories } = this.#options;
    const definition = StoredWorkspaceDefinitionSchema.parse(workspace.definition);
    try {
      const previous = earlier ?? (await this.#previousCommit(row));
      const path = await repositories.locate(definition.repository, row.baseRevision, signal);
      const remoteEnvironment =
        definition.repository.url === null
          ? undefined
          : repositories.gitEnvironment(definition.repository.url);
      const applied = await applyChangeset({
        repository: { ...definition.repository, url: definition.repository.url ?? undefined, path },
        changeset: toStoredChangeset(row),
        previousCommit: previous,
        onConflict: options.on_conflict ?? "rebase",
        ...(options.push !== undefined ? { push: options.push } : {}),
        ...(remoteEnvironment ? { remoteEnvironment } : {}),
        signal,
      });
      return { row, workspace, applied, appliedAt: new Date() };
    } catch (error) {
      if (signal.aborted) throw error;
      return { row, workspace, error: errorMessage(error) };
    }
  }

  /** Deckhand's commit of the last apply of the changeset's repository and branch, any run. */
  async #previousCommit(row: ChangesetRow): Promise<string | null> {
    const [previous] = await this.#db
      .select({ createdCommit: changesets.createdCommit })
      .from(changesets)
      .where(
        and(
          eq(changesets.repository, row.repository),
          eq(changesets.branch, row.branch),
          sql`${changesets.createdCommit} is not null`,
          sql`${changesets.id} <> ${row.id}`,
        ),
      )
      .orderBy(desc(changesets.appliedAt))
      .limit(1);
    return previous?.createdCommit ?? null;
  }

  /** Stores applies in one transaction, their events in the order given. */
  async #record(runId: string, outcomes: readonly ApplyOutcome[]): Promise<void> {
    await this.#db.transaction(async (transaction) => {
      const events: BatchRunEvent[] = [];
      for (const outcome of outcomes) {
        const { row, workspace } = outcome;
        const ref = rowRef(workspace);
        if ("applied" in outcome) {
          const { applied } = outcome;
          await transaction
            .update(changesets)
            .set({
              appliedCommit: applied.commit,
              createdCommit: applied.createdCommit,
              applyOperation: applied.operation,
              appliedAt: outcome.appliedAt,
              pushed: applied.pushed,
              error: null,
              updatedAt: new Date(),
            })
            .where(eq(changesets.id, row.id));
          events.push({
            type: "changeset_applied",
            workspace: ref,
            branch: row.branch,
            commit: applied.commit,
            operation: applied.operation,
            pushed: applied.pushed,
            kept_commits: applied.keptCommits,
          });
        } else {
          await transaction
            .update(changesets)
            .set({ error: outcome.error, updatedAt: new Date() })
            .where(eq(changesets.id, row.id));
          events.push({
            type: "changeset_apply_failed",
            workspace: ref,
            branch: row.branch,
            error: outcome.error,
          });
        }
      }
      await appendRunEvents(transaction, runId, events);
    });
  }

  /** Ends the run: failed when a changeset could not be applied or published, with why. */
  async #finish(runId: string, published: PublishRunResult | undefined): Promise<void> {
    await this.#db.transaction(async (transaction) => {
      const [failed] = await transaction
        .select({ count: sql<number>`count(*)::int` })
        .from(changesets)
        .where(and(eq(changesets.batchRunId, runId), sql`${changesets.appliedAt} is null`));
      const failures = Number(failed?.count ?? 0);
      const publishFailures = published?.failed ?? 0;
      const status = failures + publishFailures > 0 ? "failed" : "completed";
      const problems = [
        ...(failures > 0
          ? [
              `${failures} changeset${failures === 1 ? "" : "s"} could not be applied; each changeset's error says why`,
            ]
          : []),
        ...(published?.stopped ? [published.stopped] : []),
        ...(publishFailures > 0 && !published?.stopped
          ? [
              `${publishFailures} changeset${publishFailures === 1 ? "" : "s"} could not be published; each changeset's publish_error says why; apply the run again to retry`,
            ]
          : []),
      ];
      const error = problems.length > 0 ? problems.join("; ") : null;
      const [updated] = await transaction
        .update(batchRuns)
        .set({ status, error, finishedAt: new Date() })
        .where(and(eq(batchRuns.id, runId), eq(batchRuns.status, "running")))
        .returning({ id: batchRuns.id });
      if (updated !== undefined) {
        await this.#options.store.appendFinished(transaction, runId, status, error);
      }
    });
  }
}

/**
 * Runs `work` over `items`, those of one repository one after another (they share its refs and
 * its origin) and at most `limit` repositories at once; `index` is the item's place in `items`.
 * The first failure stops what has not started; it is thrown once the rest has settled.
 */
async function forEachRepository<Item extends { changeset: ChangesetRow }>(
  items: readonly Item[],
  limit: number,
  work: (item: Item, index: number) => Promise<void>,
): Promise<void> {
  const groups = new Map<string, number[]>();
  items.forEach((item, index) => {
    const group = groups.get(item.changeset.repository);
    if (group === undefined) groups.set(item.changeset.repository, [index]);
    else group.push(index);
  });
  const queue = [...groups.values()];
  let failure: { error: unknown } | undefined;
  async function lane(): Promise<void> {
    for (let group = queue.shift(); group !== undefined; group = queue.shift()) {
      for (const index of group) {
        if (failure !== undefined) return;
        try {
          await work(items[index]!, index);
        } catch (error) {
          failure ??= { error };
        }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, queue.length)) }, lane));
  if (failure !== undefined) throw failure.error;
}

/**
 * Hands results to `write` in the order of their indexes, each run of consecutive ready ones
 * at once, one write at a time; `flush` writes what is left, skipping the gaps.
 */
class InOrderRecorder<Result> {
  readonly #write: (results: Result[]) => Promise<void>;
  readonly #ready = new Map<number, Result>();
  #next = 0;
  #writing: Promise<void> = Promise.resolve();

  constructor(write: (results: Result[]) => Promise<void>) {
    this.#write = write;
  }

  add(index: number, result: Result): Promise<void> {
    this.#ready.set(index, result);
    const batch: Result[] = [];
    for (let next = this.#ready.get(this.#next); next !== undefined; ) {
      batch.push(next);
      this.#ready.delete(this.#next);
      this.#next += 1;
      next = this.#ready.get(this.#next);
    }
    return this.#enqueue(batch);
  }

  flush(): Promise<void> {
    const rest = [...this.#ready.entries()]
      .sort(([left], [right]) => left - right)
      .map(([, result]) => result);
    this.#ready.clear();
    return this.#enqueue(rest);
  }

  #enqueue(batch: Result[]): Promise<void> {
    if (batch.length === 0) return this.#writing;
    this.#writing = this.#writing.then(() => this.#write(batch));
    return this.#writing;
  }
}
