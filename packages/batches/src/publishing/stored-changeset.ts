// A changeset row as the API shows it: what the run built, what applying it did, and where its
// pull request stands.
import type { changesets } from "@deckhand/db";
import type { StoredBatchChangeset } from "@deckhand/wire";
import { z } from "zod";

type ChangesetRow = typeof changesets.$inferSelect;

const CommitAuthorSchema = z.object({ name: z.string(), email: z.string() }).nullable();
const PublishedSchema = z.union([z.boolean(), z.literal("draft"), z.null()]);
const StatsSchema = z.object({
  files: z.int().min(0),
  insertions: z.int().min(0),
  deletions: z.int().min(0),
});
const ReviewSchema = z.enum(["approved", "changes_requested", "pending"]).nullable();
const ChecksSchema = z.enum(["failing", "none", "passing", "pending"]).nullable();
const MergeableSchema = z.enum(["conflicting", "mergeable", "unknown"]).nullable();

/** A timestamp column as the API writes it. */
export function iso(date: Date | null): string | null {
  return date === null ? null : date.toISOString();
}

export function toStoredChangeset(row: ChangesetRow): StoredBatchChangeset {
  return {
    id: row.id,
    batch_run_id: row.batchRunId,
    workspace_id: row.workspaceId,
    repository: row.repository,
    base_branch: row.baseBranch,
    base_revision: row.baseRevision,
    path: row.path,
    branch: row.branch,
    title: row.title,
    body: row.body,
    commit_message: row.commitMessage,
    commit_author: CommitAuthorSchema.parse(row.commitAuthor ?? null),
    published: PublishedSchema.parse(row.published ?? null),
    diff: row.diff,
    stats: StatsSchema.parse(row.stats),
    state: row.status,
    applied_commit: row.appliedCommit,
    apply_operation: row.applyOperation,
    applied_at: iso(row.appliedAt),
    pushed: row.pushed,
    error: row.error,
    code_host: row.codeHost,
    external_id: row.externalId,
    external_url: row.externalUrl,
    external_state: row.externalState,
    review_state: ReviewSchema.parse(row.reviewState),
    checks_state: ChecksSchema.parse(row.checksState),
    mergeable: MergeableSchema.parse(row.mergeable),
    synced_at: iso(row.syncedAt),
    tracked: row.tracked,
    publish_error: row.publishError,
    // Planned by apply-plan.ts where a list asks for it.
    apply_plan: null,
  };
}
