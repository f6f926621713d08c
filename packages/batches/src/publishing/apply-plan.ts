// What applying a run will do with each of its changesets, said before it is applied: whether
// the branch is created, moved or left as it is, whether it is pushed, and which pull request is
// created, updated or closed. The same inputs the apply job and the publisher decide from (the
// run's push option, the repository's host, `published`, the last applied changeset of the branch
// and the pull request the batch change tracks), read from the database rather than guessed by
// a client.
import {
  batchRuns,
  batchSpecs,
  type ChangesetExternalState,
  changesets,
  type DbHandle,
  workspaces,
} from "@deckhand/db";
import type { ChangesetApplyPlan, StoredBatchChangeset } from "@deckhand/wire";
import { and, asc, desc, eq, inArray, isNotNull, ne } from "drizzle-orm";
import { StoredRunOptionsSchema, StoredWorkspaceDefinitionSchema } from "../stored-run.ts";
import type { CodeHostAccess } from "./code-host-access.ts";
import { toStoredChangeset } from "./stored-changeset.ts";

type ChangesetRow = typeof changesets.$inferSelect;

/** The content of a changeset that, unchanged, leaves its branch as it is. */
interface ChangesetContent {
  diff: string;
  commitMessage: string;
}

export interface ApplyPlanInput {
  changeset: ChangesetContent & { published: unknown };
  /** The apply job pushes the branch (the run's `push`, or the host's default). */
  push: boolean;
  /** A code host connection matches the repository, so a pushed branch can be published. */
  connected: boolean;
  /** The changeset applied last for the same repository and branch, in any run. */
  previous: ChangesetContent | null;
  /** The pull request the batch change tracks for the repository and branch. */
  tracked: { number: string; state: ChangesetExternalState | null } | null;
}

/** The plan for one changeset; see ChangesetApplyPlanSchema. */
export function planApply(input: ApplyPlanInput): ChangesetApplyPlan {
  const { changeset, previous, tracked } = input;
  const branch: ChangesetApplyPlan["branch"] =
    previous === null
      ? "create"
      : previous.diff === changeset.diff && previous.commitMessage === changeset.commitMessage
        ? "none"
        : "update";
  const wanted = changeset.published === true || changeset.published === "draft";
  const publishes = wanted && input.push && input.connected;
  const live = tracked !== null && (tracked.state === "open" || tracked.state === "draft");
  const pullRequest: ChangesetApplyPlan["pull_request"] = !publishes
    ? "none"
    : live
      ? "update"
      : changeset.published === "draft"
        ? "create_draft"
        : "create";
  const parts: string[] = [];
  if (branch !== "none") {
    parts.push(
      input.push
        ? branch === "create"
          ? "push branch"
          : "push branch update"
        : `${branch} local branch`,
    );
  }
  // Said, so that a spec asking for pull requests it will not get is noticed before applying.
  if (wanted && !input.push) parts.push("no pull request: the branch is not pushed");
  else if (wanted && !input.connected) {
    parts.push("no pull request: no code host connection matches the repository");
  }
  if (pullRequest === "create") parts.push("create pull request");
  if (pullRequest === "create_draft") parts.push("create draft pull request");
  // An unchanged branch with its pull request already open: publishing it again changes nothing.
  if (pullRequest === "update" && branch !== "none") {
    parts.push(`update pull request #${tracked!.number}`);
  }
  return {
    branch,
    push: input.push,
    pull_request: pullRequest,
    pull_request_number: pullRequest === "update" ? tracked!.number : null,
    summary: parts.length === 0 ? "no change" : parts.join(", "),
  };
}

const branchKey = (row: { repository: string; branch: string }) =>
  `${row.repository}\u0000${row.branch}`;

/**
 * A run's changesets, each with its apply plan (null once applied), and the open pull requests
 * the batch change tracks that the run does not produce, which applying it closes.
 */
export async function changesetsWithPlans(
  database: DbHandle,
  runId: string,
  access: CodeHostAccess | undefined,
): Promise<{ changesets: StoredBatchChangeset[]; dropped: StoredBatchChangeset[] }> {
  const db = database.db;
  const [run] = await db
    .select({ options: batchRuns.options, name: batchSpecs.name })
    .from(batchRuns)
    .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
    .where(eq(batchRuns.id, runId));
  if (run === undefined) return { changesets: [], dropped: [] };
  const options = StoredRunOptionsSchema.parse(run.options);
  const rows = await db
    .select({ changeset: changesets, workspace: workspaces })
    .from(changesets)
    .innerJoin(workspaces, eq(workspaces.id, changesets.workspaceId))
    .where(eq(changesets.batchRunId, runId))
    .orderBy(asc(workspaces.position), asc(changesets.createdAt));
  const repositories = [...new Set(rows.map(({ changeset }) => changeset.repository))];
  // Newest first: the first row of a branch is the one the apply job builds on.
  const applied =
    repositories.length === 0
      ? []
      : await db
          .select()
          .from(changesets)
          .where(
            and(
              inArray(changesets.repository, repositories),
              isNotNull(changesets.createdCommit),
              ne(changesets.batchRunId, runId),
            ),
          )
          .orderBy(desc(changesets.appliedAt));
  const previousOf = new Map<string, ChangesetRow>();
  for (const row of applied)
    if (!previousOf.has(branchKey(row))) previousOf.set(branchKey(row), row);
  const tracked = await db
    .select({ changeset: changesets })
    .from(changesets)
    .innerJoin(batchRuns, eq(batchRuns.id, changesets.batchRunId))
    .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
    .where(
      and(
        eq(batchSpecs.name, run.name),
        eq(changesets.tracked, true),
        isNotNull(changesets.externalId),
        ne(changesets.batchRunId, runId),
      ),
    );
  const trackedOf = new Map(tracked.map(({ changeset }) => [branchKey(changeset), changeset]));
  const planned = rows.map(({ changeset, workspace }) => {
    const stored = toStoredChangeset(changeset);
    if (changeset.appliedAt !== null) return stored;
    const definition = StoredWorkspaceDefinitionSchema.parse(workspace.definition);
    const previous = previousOf.get(branchKey(changeset)) ?? null;
    const pullRequest = trackedOf.get(branchKey(changeset)) ?? null;
    stored.apply_plan = planApply({
      changeset,
      push: options.push ?? definition.repository.host.type === "git",
      connected: access?.resolve(definition.repository.url) !== undefined,
      previous,
      tracked:
        pullRequest === null
          ? null
          : { number: pullRequest.externalId!, state: pullRequest.externalState },
    });
    return stored;
  });
  const produced = new Set(rows.map(({ changeset }) => branchKey(changeset)));
  const unapplied = rows.some(({ changeset }) => changeset.appliedAt === null) || rows.length === 0;
  const dropped = unapplied
    ? tracked
        .map(({ changeset }) => changeset)
        .filter(
          (changeset) =>
            !produced.has(branchKey(changeset)) &&
            (changeset.externalState === "open" || changeset.externalState === "draft"),
        )
        .map((changeset) => ({
          ...toStoredChangeset(changeset),
          apply_plan: {
            branch: "none" as const,
            push: false,
            pull_request: "close" as const,
            pull_request_number: changeset.externalId,
            summary: `close pull request #${changeset.externalId}`,
          },
        }))
    : [];
  return { changesets: planned, dropped };
}
