// Paced rollouts: an apply of a batch change whose spec sets `rollout:` (or on a server with
// `batchChanges.rolloutWindows`) schedules its new pull requests instead of opening them all at
// once. A durable queue task per batch change publishes what is due, then queues itself again
// for the next one, so a restarted server goes on with the same schedule; tracking goes on
// beside it. The plan (rollout-plan.ts) says when each waiting pull request goes out.
import { type DbHandle, type Executor, enqueue, type TaskRegistry } from "@deckhand/db";
import { errorMessage } from "@deckhand/errors";
import type {
  BatchChangeRollout,
  BatchRunEvent,
  RolloutSettings,
  RolloutWindow,
} from "@deckhand/wire";
import { z } from "zod";
import {
  type CanaryState,
  type PlannedPublication,
  planRollout,
  type RolloutPlan,
} from "./rollout-plan.ts";
import {
  claimPublication,
  type RolloutSnapshot,
  readRolloutSnapshot,
  releasePublication,
  type ScheduledItem,
  schedulePublications,
  settingsOfRun,
  unsettledCanaries,
} from "./rollout-store.ts";
import { RolloutWindowSet } from "./rollout-windows.ts";

/** The queue task that publishes a batch change's due pull requests and queues the next turn. */
export const CHANGESET_ROLLOUT_TASK = "changeset_rollout";
/** How often a rollout waiting on canaries or the concurrent limit looks again, by default. */
export const DEFAULT_ROLLOUT_RECHECK_MS = 60_000;
/** How long a rollout waits after a code host refused (rate limit, outage) before trying again. */
const HOST_REFUSED_RETRY_MS = 5 * 60_000;

const RolloutPayloadSchema = z.object({ batch_change: z.string().min(1) });

/** What publishing one changeset came to. */
export type PublishOutcome =
  | { ok: true }
  /** The host refuses (rate limit, outage, token): stop this turn and try again later. */
  | { ok: false; hostRefused: true; error: string }
  /** This changeset cannot be published (its error is recorded on it); go on with the others. */
  | { ok: false; hostRefused: false; error: string };

export interface ChangesetRolloutOptions {
  database: DbHandle;
  /** The clock (ms since the epoch); tests set it. */
  now: () => number;
  /** The server's `batchChanges.rolloutWindows`; null when none are configured. */
  serverWindows: () => readonly RolloutWindow[] | null;
  /** Opens one scheduled changeset's pull request (the publisher's own publishing). */
  publish: (changesetId: string) => Promise<PublishOutcome>;
  /** Reads changesets' state from their hosts (the canaries' checks) before planning. */
  refresh: (changesetIds: readonly string[]) => Promise<void>;
  /** How often a rollout waiting on canaries or open pull requests looks again. */
  recheckMs?: number;
}

/** The schedule and the task that works through it; the publisher owns one. */
export class ChangesetRollout {
  readonly #options: ChangesetRolloutOptions;

  constructor(options: ChangesetRolloutOptions) {
    this.#options = options;
  }

  get #db() {
    return this.#options.database.db;
  }

  get #recheckMs(): number {
    return this.#options.recheckMs ?? DEFAULT_ROLLOUT_RECHECK_MS;
  }

  /** Whether an apply run's publications are paced: its spec's `rollout:`, or server windows. */
  async pacingOf(runId: string): Promise<RolloutSettings | null> {
    const settings = await settingsOfRun(this.#db, runId);
    if (settings !== null) return settings;
    return this.#options.serverWindows() !== null ? {} : null;
  }

  /**
   * Schedules an apply run's new pull requests (in the order given) and queues a rollout turn
   * now; returns the run-log events saying when each is expected to go out.
   */
  async schedule(input: {
    batchChange: string;
    runId: string;
    settings: RolloutSettings;
    items: readonly (ScheduledItem & { repository: string; branch: string })[];
  }): Promise<BatchRunEvent[]> {
    if (input.items.length === 0) {
      await this.supersede(input.batchChange, input.runId);
      return [];
    }
    await this.#db.transaction(async (transaction) => {
      await schedulePublications(transaction, {
        batchChange: input.batchChange,
        runId: input.runId,
        items: input.items,
        canaryCount: input.settings.canary?.count ?? 0,
      });
      await this.#queueTurn(transaction, input.batchChange, this.#options.now());
    });
    const { plan } = await this.#plan(input.batchChange);
    const byId = new Map(plan.items.map((item) => [item.id, item]));
    return input.items.flatMap((item) => {
      const planned = byId.get(item.changesetId);
      if (planned === undefined) return [];
      return [
        {
          type: "changeset_scheduled" as const,
          repository: item.repository,
          branch: item.branch,
          at: planned.at === null ? null : new Date(planned.at).toISOString(),
          waiting_for: planned.waitingFor,
        },
      ];
    });
  }

  /** Cancels what earlier applies of the batch change still had waiting (a newer one's run). */
  async supersede(batchChange: string, runId: string): Promise<void> {
    await schedulePublications(this.#db, { batchChange, runId, items: [], canaryCount: 0 });
  }

  /**
   * One turn of a batch change's rollout: refreshes the canaries' checks, publishes what the
   * plan says is due now (each claimed first), and queues the next turn.
   */
  async turn(batchChange: string, signal?: AbortSignal): Promise<void> {
    const before = await readRolloutSnapshot(this.#db, batchChange, this.#options.now());
    if (before.pending.length === 0) return;
    if (before.runId !== null && before.settings?.canary !== undefined) {
      const unsettled = await unsettledCanaries(this.#db, before.runId);
      if (unsettled.length > 0) await this.#options.refresh(unsettled);
    }
    let { plan, snapshot } = await this.#plan(batchChange);
    let retryAt: number | null = null;
    for (const item of plan.items.slice(0, plan.dueNow)) {
      if (signal?.aborted) break;
      const now = this.#options.now();
      if (!(await claimPublication(this.#db, item.id, now))) continue;
      let outcome: PublishOutcome;
      try {
        outcome = await this.#options.publish(item.id);
      } catch (error) {
        outcome = { ok: false, hostRefused: false, error: errorMessage(error) };
      }
      if (outcome.ok) continue;
      await releasePublication(this.#db, item.id, {
        state: outcome.hostRefused ? "scheduled" : "failed",
        error: outcome.error,
      });
      if (outcome.hostRefused) {
        retryAt = now + HOST_REFUSED_RETRY_MS;
        break;
      }
    }
    ({ plan, snapshot } = await this.#plan(batchChange));
    if (snapshot.pending.length === 0) return;
    const next = retryAt ?? plan.nextAt ?? this.#recheckSlot();
    await this.#queueTurn(this.#db, batchChange, Math.max(next, this.#options.now()));
  }

  /** The batch change's rollout for the API: its pace and every waiting pull request's time. */
  async status(batchChange: string): Promise<BatchChangeRollout> {
    const { plan, snapshot, canary } = await this.#plan(batchChange);
    const serverWindows = this.#options.serverWindows();
    const byId = new Map(snapshot.pending.map((row) => [row.changesetId, row]));
    const halted = plan.items.find((item) => item.waitingFor === "canary_failed");
    const state: BatchChangeRollout["state"] =
      plan.items.length === 0
        ? "idle"
        : halted !== undefined
          ? "halted"
          : plan.dueNow > 0 || snapshot.pending.some((row) => row.claimed)
            ? "publishing"
            : "waiting";
    return {
      name: batchChange,
      paced: snapshot.settings !== null || serverWindows !== null,
      settings: {
        spec: snapshot.settings,
        server_windows: serverWindows === null ? null : [...serverWindows],
      },
      state,
      reason: halted?.detail ?? (state === "waiting" ? (plan.items[0]?.detail ?? null) : null),
      next_at: plan.nextAt === null ? null : new Date(plan.nextAt).toISOString(),
      open: snapshot.open,
      published_last_hour: snapshot.publishedAt.length,
      canary:
        canary === null
          ? null
          : {
              count: canary.count,
              published: canary.published,
              passed: canary.passed,
              failing: [...canary.failing],
            },
      pending: plan.items.map((item: PlannedPublication) => {
        const row = byId.get(item.id)!;
        return {
          changeset_id: item.id,
          repository: row.repository,
          branch: row.branch,
          draft: row.draft,
          canary: row.canary,
          at: item.at === null ? null : new Date(item.at).toISOString(),
          waiting_for: item.waitingFor,
          detail: row.error === null ? item.detail : `${item.detail} (last attempt: ${row.error})`,
        };
      }),
    };
  }

  /** Registers the rollout task on a worker's registry. */
  register(tasks: TaskRegistry): void {
    tasks.register(CHANGESET_ROLLOUT_TASK, {
      schema: RolloutPayloadSchema,
      handle: async (payload, context) => this.turn(payload.batch_change, context.signal),
    });
  }

  async #plan(
    batchChange: string,
  ): Promise<{ plan: RolloutPlan; snapshot: RolloutSnapshot; canary: CanaryState | null }> {
    const now = this.#options.now();
    const snapshot = await readRolloutSnapshot(this.#db, batchChange, now);
    const serverWindows = this.#options.serverWindows();
    const settings = snapshot.settings ?? {};
    const canary = canaryState(snapshot, settings);
    const plan = planRollout({
      now,
      settings,
      serverWindows: serverWindows === null ? null : new RolloutWindowSet(serverWindows),
      specWindows: settings.windows === undefined ? null : new RolloutWindowSet(settings.windows),
      publishedAt: snapshot.publishedAt,
      lastServerPublication: snapshot.lastServerPublication,
      // Claimed publications are going out right now: they count as open already.
      open: snapshot.open + snapshot.pending.filter((row) => row.claimed).length,
      canary,
      pending: snapshot.pending
        .filter((row) => !row.claimed)
        .map((row) => ({ id: row.changesetId, canary: row.canary })),
    });
    return { plan, snapshot, canary };
  }

  /** The next recheck on a grid, so turns of one rollout that meet queue one task, not two. */
  #recheckSlot(): number {
    const interval = this.#recheckMs;
    return (Math.floor(this.#options.now() / interval) + 1) * interval;
  }

  async #queueTurn(executor: Executor, batchChange: string, at: number): Promise<void> {
    await enqueue(executor, {
      type: CHANGESET_ROLLOUT_TASK,
      payload: { batch_change: batchChange },
      idempotencyKey: `changeset-rollout:${batchChange}:${at}`,
      runAt: new Date(at),
      maxAttempts: 3,
    });
  }
}

/** The canaries of the schedule: how many, how many went out, passed, or failed. */
function canaryState(snapshot: RolloutSnapshot, settings: RolloutSettings): CanaryState | null {
  if (settings.canary === undefined || snapshot.canaries.length === 0) return null;
  let published = 0;
  let passed = 0;
  const failing: string[] = [];
  for (const canary of snapshot.canaries) {
    const name = `${canary.repository}@${canary.branch}`;
    if (canary.state === "failed") {
      failing.push(name);
      continue;
    }
    if (canary.state !== "published") continue;
    published += 1;
    if (canary.externalState === "merged" || canary.checksState === "passing") passed += 1;
    else if (
      canary.checksState === "failing" ||
      canary.externalState === "closed" ||
      canary.externalState === "deleted"
    ) {
      failing.push(name);
    }
  }
  return { count: snapshot.canaries.length, published, passed, failing };
}
