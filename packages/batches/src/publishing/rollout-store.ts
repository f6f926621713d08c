// The rollout's durable state in `changeset_publications`: what a paced apply scheduled, in
// order, with its canaries; when each pull request went out; and a claim per publication, so
// two rollout turns running at once never open the same pull request twice or outrun the pace.
import {
  batchRuns,
  batchSpecs,
  changesetPublications,
  changesets,
  type Database,
  type Executor,
} from "@deckhand/db";
import { type RolloutSettings, RolloutSettingsSchema } from "@deckhand/wire";
import { and, asc, desc, eq, gt, inArray, lt, max, ne, sql } from "drizzle-orm";

/** A claim older than this was left by a turn that died mid-way; the publication is retried. */
export const STALE_CLAIM_MS = 10 * 60_000;
const HOUR = 3_600_000;

export interface ScheduledItem {
  changesetId: string;
  draft: boolean;
}

/**
 * Schedules an apply run's new pull requests, replacing what an earlier apply of the batch change
 * still had waiting (the newer run's changesets supersede them). The first `canaryCount` are the
 * schedule's canaries.
 */
export async function schedulePublications(
  executor: Executor,
  input: {
    batchChange: string;
    runId: string;
    items: readonly ScheduledItem[];
    canaryCount: number;
  },
): Promise<void> {
  await executor
    .update(changesetPublications)
    .set({ state: "cancelled", updatedAt: new Date() })
    .where(
      and(
        eq(changesetPublications.batchChange, input.batchChange),
        eq(changesetPublications.state, "scheduled"),
        ne(changesetPublications.batchRunId, input.runId),
      ),
    );
  if (input.items.length === 0) return;
  await executor
    .insert(changesetPublications)
    .values(
      input.items.map((item, position) => ({
        changesetId: item.changesetId,
        batchChange: input.batchChange,
        batchRunId: input.runId,
        position,
        canary: position < input.canaryCount,
        draft: item.draft,
      })),
    )
    // A resumed apply schedules the same changesets again: what was decided stays.
    .onConflictDoNothing({ target: changesetPublications.changesetId });
}

/** Records that a changeset's pull request was opened at `at` (whether scheduled or not). */
export async function recordPublication(
  executor: Executor,
  input: { changesetId: string; batchChange: string; runId: string; at: Date },
): Promise<void> {
  await executor
    .insert(changesetPublications)
    .values({
      changesetId: input.changesetId,
      batchChange: input.batchChange,
      batchRunId: input.runId,
      state: "published",
      publishedAt: input.at,
    })
    .onConflictDoUpdate({
      target: changesetPublications.changesetId,
      set: { state: "published", publishedAt: input.at, error: null, updatedAt: new Date() },
    });
}

/**
 * Claims a scheduled publication for this turn (compare-and-set), or one whose claim went stale.
 * False when another turn holds it or it is no longer scheduled.
 */
export async function claimPublication(
  db: Database,
  changesetId: string,
  now: number,
): Promise<boolean> {
  const [claimed] = await db
    .update(changesetPublications)
    .set({ state: "publishing", updatedAt: new Date(now) })
    .where(
      and(
        eq(changesetPublications.changesetId, changesetId),
        sql`(${changesetPublications.state} = 'scheduled' or (${changesetPublications.state} = 'publishing' and ${changesetPublications.updatedAt} < ${new Date(now - STALE_CLAIM_MS)}))`,
      ),
    )
    .returning({ id: changesetPublications.changesetId });
  return claimed !== undefined;
}

/** Ends a claim that did not publish: back to the schedule, or failed for good with why. */
export async function releasePublication(
  db: Database,
  changesetId: string,
  outcome: { state: "scheduled" | "failed"; error: string },
): Promise<void> {
  await db
    .update(changesetPublications)
    .set({ state: outcome.state, error: outcome.error, updatedAt: new Date() })
    .where(
      and(
        eq(changesetPublications.changesetId, changesetId),
        eq(changesetPublications.state, "publishing"),
      ),
    );
}

export interface PendingRow {
  changesetId: string;
  repository: string;
  branch: string;
  draft: boolean;
  canary: boolean;
  claimed: boolean;
  error: string | null;
}

export interface CanaryRow {
  repository: string;
  branch: string;
  state: string;
  externalState: string | null;
  checksState: string | null;
}

/** Everything a rollout plan reads of the database, as of `now`. */
export interface RolloutSnapshot {
  /** The apply run whose schedule this is; null when nothing was ever scheduled. */
  runId: string | null;
  settings: RolloutSettings | null;
  pending: PendingRow[];
  /** This batch change's publications in the hour before `now`. */
  publishedAt: number[];
  lastServerPublication: number | null;
  open: number;
  canaries: CanaryRow[];
}

/** The batch change's rollout as the database holds it. */
export async function readRolloutSnapshot(
  db: Database,
  batchChange: string,
  now: number,
): Promise<RolloutSnapshot> {
  const pending = await db
    .select({ publication: changesetPublications, changeset: changesets })
    .from(changesetPublications)
    .innerJoin(changesets, eq(changesets.id, changesetPublications.changesetId))
    .where(
      and(
        eq(changesetPublications.batchChange, batchChange),
        inArray(changesetPublications.state, ["scheduled", "publishing"]),
      ),
    )
    .orderBy(asc(changesetPublications.position));
  const runId = pending[0]?.publication.batchRunId ?? (await newestScheduleRun(db, batchChange));
  const recent = await db
    .select({ at: changesetPublications.publishedAt })
    .from(changesetPublications)
    .where(
      and(
        eq(changesetPublications.batchChange, batchChange),
        gt(changesetPublications.publishedAt, new Date(now - HOUR)),
      ),
    );
  const [server] = await db
    .select({ at: max(changesetPublications.publishedAt) })
    .from(changesetPublications)
    .where(lt(changesetPublications.publishedAt, new Date(now + 1)));
  const [open] = await db
    .select({ count: sql<number>`count(*)::int` })
    .from(changesets)
    .innerJoin(batchRuns, eq(batchRuns.id, changesets.batchRunId))
    .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
    .where(
      and(
        eq(batchSpecs.name, batchChange),
        eq(changesets.tracked, true),
        inArray(changesets.externalState, ["open", "draft"]),
      ),
    );
  return {
    runId,
    settings: runId === null ? null : await settingsOfRun(db, runId),
    pending: pending.map(({ publication, changeset }) => ({
      changesetId: publication.changesetId,
      repository: changeset.repository,
      branch: changeset.branch,
      draft: publication.draft,
      canary: publication.canary,
      claimed: publication.state === "publishing",
      error: publication.error,
    })),
    publishedAt: recent.flatMap(({ at }) => (at === null ? [] : [at.getTime()])),
    lastServerPublication: server?.at ? new Date(server.at).getTime() : null,
    open: Number(open?.count ?? 0),
    canaries: runId === null ? [] : await canariesOf(db, runId),
  };
}

async function newestScheduleRun(db: Database, batchChange: string): Promise<string | null> {
  const [row] = await db
    .select({ runId: changesetPublications.batchRunId })
    .from(changesetPublications)
    .where(
      and(
        eq(changesetPublications.batchChange, batchChange),
        ne(changesetPublications.state, "cancelled"),
      ),
    )
    .orderBy(desc(changesetPublications.createdAt))
    .limit(1);
  return row?.runId ?? null;
}

async function canariesOf(db: Database, runId: string): Promise<CanaryRow[]> {
  const rows = await db
    .select({ publication: changesetPublications, changeset: changesets })
    .from(changesetPublications)
    .innerJoin(changesets, eq(changesets.id, changesetPublications.changesetId))
    .where(and(eq(changesetPublications.batchRunId, runId), eq(changesetPublications.canary, true)))
    .orderBy(asc(changesetPublications.position));
  return rows.map(({ publication, changeset }) => ({
    repository: changeset.repository,
    branch: changeset.branch,
    state: publication.state,
    externalState: changeset.externalState,
    checksState: changeset.checksState,
  }));
}

/** A run's `rollout:` as its stored spec says it; null when it has none. */
export async function settingsOfRun(db: Database, runId: string): Promise<RolloutSettings | null> {
  const [row] = await db
    .select({ spec: batchSpecs.spec })
    .from(batchRuns)
    .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
    .where(eq(batchRuns.id, runId));
  const rollout = (row?.spec as { rollout?: unknown } | undefined)?.rollout;
  if (rollout === undefined) return null;
  const parsed = RolloutSettingsSchema.safeParse(rollout);
  return parsed.success ? parsed.data : null;
}

/** The published canaries whose checks are still to come, for a refresh before planning. */
export async function unsettledCanaries(db: Database, runId: string): Promise<string[]> {
  const rows = await db
    .select({ id: changesets.id })
    .from(changesetPublications)
    .innerJoin(changesets, eq(changesets.id, changesetPublications.changesetId))
    .where(
      and(
        eq(changesetPublications.batchRunId, runId),
        eq(changesetPublications.canary, true),
        eq(changesetPublications.state, "published"),
        inArray(changesets.externalState, ["open", "draft"]),
        sql`coalesce(${changesets.checksState}, 'none') in ('none', 'pending')`,
      ),
    );
  return rows.map((row) => row.id);
}
