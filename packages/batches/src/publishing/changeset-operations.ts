// Bulk operations on a batch change's changesets, each on its own (a changeset that fails says
// why and the others go on): publish an applied changeset whatever its spec said, close, comment
// on or merge its pull request, or run its workspace job again.
import { type CodeHostClient, connectionName } from "@deckhand/code-hosts";
import { batchSpecs, changesets } from "@deckhand/db";
import { errorMessage } from "@deckhand/errors";
import type { BulkChangesetOperationRequest, BulkChangesetOperationResult } from "@deckhand/wire";
import { and, eq, inArray } from "drizzle-orm";
import { BatchesError } from "../batches-error.ts";
import { StoredWorkspaceDefinitionSchema } from "../stored-run.ts";
import type { ChangesetRecords, LoadedChangeset } from "./changeset-records.ts";
import type { ChangesetTracking } from "./changeset-tracking.ts";
import { publishBlocker } from "./publish-blocker.ts";
import type { PullRequestPublishing } from "./pull-request-publishing.ts";

export interface ChangesetOperationsOptions {
  records: ChangesetRecords;
  publishing: PullRequestPublishing;
  tracking: ChangesetTracking;
  /** Runs a changeset's workspace job again (`retry`): the run service's `retryWorkspace`. */
  retryWorkspace?: ((workspaceId: string) => Promise<unknown>) | undefined;
}

export class ChangesetOperations {
  readonly #options: ChangesetOperationsOptions;

  constructor(options: ChangesetOperationsOptions) {
    this.#options = options;
  }

  get #records(): ChangesetRecords {
    return this.#options.records;
  }

  get #db() {
    return this.#records.database.db;
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
    const selected = await this.#records.load(
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
        connected: this.#records.access.resolve(definition.repository.url) !== undefined,
      });
      if (blocker !== null) throw new BatchesError("conflict", blocker);
      await this.#options.publishing.publishOne(item, undefined, request.draft === true);
      return;
    }
    if (row.externalId === null) {
      throw new BatchesError(
        "conflict",
        `changeset ${row.repository}@${row.branch} is not published; publish it first`,
      );
    }
    const { connection, repository } = this.#records.connectionOf(item);
    const client: CodeHostClient = this.#records.access.client(connection);
    const number = Number(row.externalId);
    if (request.operation === "comment") {
      await client.comment(repository, number, request.body);
      await this.#db.transaction((transaction) =>
        this.#records.history(transaction, item, "commented", null, {}),
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
    await this.#options.tracking.refreshOne(item);
  }
}
