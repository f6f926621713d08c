// The tracked changesets of batch changes as publishing, tracking and bulk operations read and
// record them: a changeset with its workspace, batch change, spec and run options; the code host
// connection its repository belongs to; its history; and a failure to publish it.

import type { CodeHostConnection } from "@deckhand/code-hosts";
import {
  batchRuns,
  batchSpecs,
  type ChangesetExternalState,
  type ChangesetStatus,
  changesetEvents,
  changesets,
  type DbHandle,
  type Transaction,
  workspaces,
} from "@deckhand/db";
import type { BatchRunOptions } from "@deckhand/wire";
import { type and, asc, eq } from "drizzle-orm";
import { appendRunEvents } from "../batch-run-events.ts";
import { BatchesError } from "../batches-error.ts";
import { StoredRunOptionsSchema, StoredWorkspaceDefinitionSchema } from "../stored-run.ts";
import type { CodeHostAccess } from "./code-host-access.ts";

type ChangesetRow = typeof changesets.$inferSelect;
type WorkspaceRow = typeof workspaces.$inferSelect;

export interface LoadedChangeset {
  row: ChangesetRow;
  workspace: WorkspaceRow;
  batchChange: string;
  specSource: string;
  specFile: string | null;
  specDirectory: string | null;
  runOptions: BatchRunOptions;
}

/** What a changeset's state on its host means for its status. */
export function statusOf(state: ChangesetExternalState): ChangesetStatus {
  return state === "deleted" ? "closed" : state;
}

export class ChangesetRecords {
  readonly database: DbHandle;
  readonly access: CodeHostAccess;

  constructor(database: DbHandle, access: CodeHostAccess) {
    this.database = database;
    this.access = access;
  }

  get #db() {
    return this.database.db;
  }

  async load(where: ReturnType<typeof and>): Promise<LoadedChangeset[]> {
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

  /** The code host connection a changeset's repository belongs to, and its path there. */
  connectionOf(loaded: LoadedChangeset): { connection: CodeHostConnection; repository: string } {
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

  /** Records a change of a changeset in its history (what the burndown is drawn from). */
  async history(
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

  /** Records why a changeset could not be published (or closed), in its row, history and run log. */
  async recordFailure(item: LoadedChangeset, message: string): Promise<void> {
    await this.#db.transaction(async (transaction) => {
      await transaction
        .update(changesets)
        .set({ publishError: message, updatedAt: new Date() })
        .where(eq(changesets.id, item.row.id));
      await this.history(transaction, item, "publish_failed", null, { error: message });
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
}
