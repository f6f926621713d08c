// What the API reads of a batch change (every run of one spec name): its tracked changesets,
// counts per state, the burndown drawn from their recorded state changes, its model spend, and a
// changeset's history.
import type { PullRequestState } from "@deckhand/code-hosts";
import { batchRuns, batchSpecs, changesetEvents, changesets } from "@deckhand/db";
import { DbSpendLedger, PriceTable, type SpendLedger } from "@deckhand/model-proxy";
import type {
  BatchChange,
  BatchChangeBurndownPoint,
  BatchChangeSpend,
  BatchChangeStats,
  ChangesetEvent,
} from "@deckhand/wire";
import { and, asc, desc, eq, isNotNull } from "drizzle-orm";
import { z } from "zod";
import { BatchesError } from "../batches-error.ts";
import { batchChangeSpend } from "../budgets/batch-change-spend.ts";
import type { ChangesetRecords } from "./changeset-records.ts";
import { toStoredChangeset } from "./stored-changeset.ts";

/** A batch change's counts before anything was published. */
export function emptyBatchChangeStats(): BatchChangeStats {
  return {
    total: 0,
    unpublished: 0,
    draft: 0,
    open: 0,
    merged: 0,
    closed: 0,
    deleted: 0,
    checks_failing: 0,
    conflicting: 0,
    approved: 0,
  };
}

export class BatchChangeReadModel {
  readonly #records: ChangesetRecords;
  readonly #ledger: SpendLedger | undefined;

  /** `ledger`: where the batch change's model spend is read; its tokens, unpriced, by default. */
  constructor(records: ChangesetRecords, ledger?: SpendLedger) {
    this.#records = records;
    this.#ledger = ledger;
  }

  get #db() {
    return this.#records.database.db;
  }

  /** A batch change: its tracked changesets, counts per state, the burndown and its spend. */
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
    const tracked = await this.#records.load(
      and(eq(batchSpecs.name, name), eq(changesets.tracked, true)),
    );
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
        : (await this.#records.load(eq(changesets.batchRunId, newestApply.id))).filter(
            ({ row }) => !trackedKeys.has(`${row.repository}\u0000${row.branch}`),
          );
    const stats: BatchChangeStats = {
      ...emptyBatchChangeStats(),
      total: tracked.length + unpublished.length,
      unpublished: unpublished.length,
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
              this.#ledger ?? new DbSpendLedger(this.#db, () => PriceTable.none),
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
}
