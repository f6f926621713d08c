// The apply job (queue task `batch_apply`): writes each changeset of a finished run as its
// branch, keeping what a person added to a branch since Deckhand last applied it (the last apply
// of that repository and branch, in any run), then publishes them (publishing/) and ends the
// run. Changesets already applied or published by an earlier delivery of the job are skipped,
// so an apply that failed part-way is resumed by applying the run again.
import { batchRuns, changesets, type TaskContext, workspaces } from "@deckhand/db";
import { errorMessage } from "@deckhand/errors";
import type { BatchRunOptions } from "@deckhand/wire";
import { and, asc, desc, eq, sql } from "drizzle-orm";
import { applyChangeset } from "./apply-changeset.ts";
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
    for (const { changeset: row, workspace } of rows) {
      if (context.signal.aborted)
        throw new BatchesError("interrupted", `applying run ${runId} was interrupted`);
      if (row.appliedAt !== null) continue;
      await this.#applyOne(runId, row, workspace, options, context.signal);
    }
    // Pull requests for the applied changesets (publishing/), resumable as applying is.
    const published = await this.#options.publishing?.publishRun(runId, context.signal);
    await this.#finish(runId, published);
  }

  /** Writes one changeset as its branch and records how, or why it could not be. */
  async #applyOne(
    runId: string,
    row: ChangesetRow,
    workspace: WorkspaceRow,
    options: BatchRunOptions,
    signal: AbortSignal,
  ): Promise<void> {
    const { repositories } = this.#options;
    const ref = rowRef(workspace);
    const definition = StoredWorkspaceDefinitionSchema.parse(workspace.definition);
    try {
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
      const path = await repositories.locate(definition.repository, row.baseRevision, signal);
      const remoteEnvironment =
        definition.repository.url === null
          ? undefined
          : repositories.gitEnvironment(definition.repository.url);
      const applied = await applyChangeset({
        repository: { ...definition.repository, url: definition.repository.url ?? undefined, path },
        changeset: toStoredChangeset(row),
        previousCommit: previous?.createdCommit ?? null,
        onConflict: options.on_conflict ?? "rebase",
        ...(options.push !== undefined ? { push: options.push } : {}),
        ...(remoteEnvironment ? { remoteEnvironment } : {}),
        signal,
      });
      await this.#db.transaction(async (transaction) => {
        await transaction
          .update(changesets)
          .set({
            appliedCommit: applied.commit,
            createdCommit: applied.createdCommit,
            applyOperation: applied.operation,
            appliedAt: new Date(),
            pushed: applied.pushed,
            error: null,
            updatedAt: new Date(),
          })
          .where(eq(changesets.id, row.id));
        await appendRunEvents(transaction, runId, [
          {
            type: "changeset_applied",
            workspace: ref,
            branch: row.branch,
            commit: applied.commit,
            operation: applied.operation,
            pushed: applied.pushed,
            kept_commits: applied.keptCommits,
          },
        ]);
      });
    } catch (error) {
      if (signal.aborted) throw error;
      const message = errorMessage(error);
      await this.#db.transaction(async (transaction) => {
        await transaction
          .update(changesets)
          .set({ error: message, updatedAt: new Date() })
          .where(eq(changesets.id, row.id));
        await appendRunEvents(transaction, runId, [
          { type: "changeset_apply_failed", workspace: ref, branch: row.branch, error: message },
        ]);
      });
    }
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
