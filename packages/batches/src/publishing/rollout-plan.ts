// When each waiting pull request of a paced rollout goes out: a pure plan from the rollout's
// settings, its windows, what was published lately, what is open, and the canaries' checks.
// The rollout task publishes what is due now and sleeps until the next one; the API shows the
// whole plan. Nothing here reads a clock or a database.
import type { RolloutSettings, RolloutWait } from "@deckhand/wire";
import { describeWindow, type RolloutWindowSet, WindowTimeline } from "./rollout-windows.ts";

const HOUR = 3_600_000;
/** How far ahead windows are searched: past a week, a weekly window has opened or never will. */
export const PLAN_HORIZON_MS = 8 * 24 * HOUR;

export interface RolloutPlanInput {
  now: number;
  settings: RolloutSettings;
  /** The server's `batchChanges.rolloutWindows`; null when none are configured. */
  serverWindows: RolloutWindowSet | null;
  /** The spec's `rollout.windows`; null when it has none. */
  specWindows: RolloutWindowSet | null;
  /** When this batch change's pull requests were opened, at least those of the last hour. */
  publishedAt: readonly number[];
  /** The newest publication of any batch change (the server windows' pace is the server's). */
  lastServerPublication: number | null;
  /** The batch change's pull requests open now. */
  open: number;
  canary: CanaryState | null;
  /** The waiting changesets, in the order they go out. */
  pending: readonly { id: string; canary: boolean }[];
}

/** Where the schedule's canaries stand. */
export interface CanaryState {
  count: number;
  published: number;
  /** Published canaries whose checks passed (or that merged). */
  passed: number;
  /** Canaries whose checks failed (or that closed unmerged), as `repository@branch`. */
  failing: readonly string[];
}

export interface PlannedPublication {
  id: string;
  /** When it goes out; null when it waits on something without a known time. */
  at: number | null;
  waitingFor: RolloutWait;
  detail: string;
}

export interface RolloutPlan {
  items: PlannedPublication[];
  /** How many of the first items are due now. */
  dueNow: number;
  /** When the rollout should look again: the next item's time; null when only a change helps. */
  nextAt: number | null;
}

/** The plan: each waiting changeset with when it goes out and what it waits for. */
export function planRollout(input: RolloutPlanInput): RolloutPlan {
  const sets = [input.serverWindows, input.specWindows].filter(
    (set): set is RolloutWindowSet => set !== null,
  );
  const timeline =
    sets.length === 0 ? null : new WindowTimeline(sets, input.now, input.now + PLAN_HORIZON_MS);
  const simulation = new Simulation(input, timeline);
  const items: PlannedPublication[] = [];
  for (const item of input.pending) items.push({ id: item.id, ...simulation.next(item.canary) });
  const dueNow = items.findIndex((item) => item.at === null || item.at > input.now);
  const firstWaiting = items[dueNow === -1 ? items.length : dueNow];
  return {
    items,
    dueNow: dueNow === -1 ? items.length : dueNow,
    nextAt: firstWaiting?.at ?? null,
  };
}

type Decision = Omit<PlannedPublication, "id">;

/** Publications as they would go out, one after the other. */
class Simulation {
  readonly #input: RolloutPlanInput;
  readonly #timeline: WindowTimeline | null;
  readonly #published: number[];
  #lastBatchChange: number | null;
  #lastServer: number | null;
  #open: number;
  #canariesPublished: number;
  /** Once one item cannot be placed, none after it can: the order is kept. */
  #blocked: Decision | null = null;
  #previous: Decision | null = null;

  constructor(input: RolloutPlanInput, timeline: WindowTimeline | null) {
    this.#input = input;
    this.#timeline = timeline;
    this.#published = [...input.publishedAt].sort((left, right) => left - right);
    this.#lastBatchChange = this.#published.at(-1) ?? null;
    this.#lastServer = input.lastServerPublication;
    this.#open = input.open;
    this.#canariesPublished = input.canary?.published ?? 0;
  }

  next(isCanary: boolean): Decision {
    if (this.#blocked !== null) return this.#blocked;
    const held = this.#held(isCanary);
    if (held !== null) {
      this.#blocked = held;
      return held;
    }
    const placed = this.#place();
    if (placed.at === null) {
      this.#blocked = placed;
      return placed;
    }
    this.#published.push(placed.at);
    this.#lastBatchChange = placed.at;
    this.#lastServer = Math.max(this.#lastServer ?? placed.at, placed.at);
    this.#open += 1;
    if (isCanary) this.#canariesPublished += 1;
    this.#previous = placed;
    return placed;
  }

  /** What keeps an item back whatever the time: the canaries, or the concurrent limit. */
  #held(isCanary: boolean): Decision | null {
    const canary = this.#input.canary;
    if (canary !== null && !isCanary) {
      if (canary.failing.length > 0) {
        return {
          at: null,
          waitingFor: "canary_failed",
          detail: `the rollout is halted: the checks of canary ${canary.failing.join(", ")} failed; fix them and apply the spec again, or publish the rest yourself`,
        };
      }
      if (this.#canariesPublished < canary.count || canary.passed < canary.count) {
        return {
          at: null,
          waitingFor: "canary",
          detail: `waiting for the checks of the ${canary.count} canary pull request${canary.count === 1 ? "" : "s"} to pass (${canary.passed} passed so far)`,
        };
      }
    }
    const limit = this.#input.settings.concurrentLimit;
    if (limit !== undefined && this.#open >= limit) {
      return {
        at: null,
        waitingFor: "concurrent_limit",
        detail: `${limit} pull request${limit === 1 ? " is" : "s are"} open, the concurrent limit; the next goes out when one merges or closes`,
      };
    }
    return null;
  }

  /** The earliest time the hourly limit, the windows and their pace all allow. */
  #place(): Decision {
    const now = this.#input.now;
    let at = Math.max(now, this.#lastBatchChangeFloor());
    // Behind an item that waits, this one waits at least as long, for the same reason.
    let reason: RolloutWait = at > now ? (this.#previous?.waitingFor ?? "pace") : "pace";
    let detail = at > now ? (this.#previous?.detail ?? "due now") : "due now";
    for (let round = 0; round < 64; round += 1) {
      const hourly = this.#hourlyFloor(at);
      if (hourly > at) {
        at = hourly;
        reason = "hourly_limit";
        detail = `the hourly limit of ${this.#input.settings.hourlyLimit} is used up until then`;
      }
      if (this.#timeline === null) break;
      const open = this.#timeline.nextOpen(at);
      if (open === null) {
        return {
          at: null,
          waitingFor: "no_window",
          detail: "no rollout window allows publishing within the next week",
        };
      }
      if (open > at) {
        at = open;
        reason = "window";
        const segment = this.#timeline.at(open)!;
        detail = `a rollout window opens then (${segment.windows.map(describeWindow).join("; ")})`;
        continue;
      }
      const paced = this.#paceFloor(at);
      if (paced > at) {
        at = paced;
        reason = "pace";
        detail = `the rollout window's pace (${this.#timeline.at(at)?.windows.map(describeWindow).join("; ") ?? "no window"})`;
        continue;
      }
      if (this.#hourlyFloor(at) <= at) break;
    }
    return { at, waitingFor: at <= now ? "pace" : reason, detail: at <= now ? "due now" : detail };
  }

  /** Items keep their order: none goes out before the one ahead of it. */
  #lastBatchChangeFloor(): number {
    return this.#lastBatchChange !== null && this.#lastBatchChange > this.#input.now
      ? this.#lastBatchChange
      : this.#input.now;
  }

  /** The first instant at or after `at` with fewer than the hourly limit in the hour before. */
  #hourlyFloor(at: number): number {
    const limit = this.#input.settings.hourlyLimit;
    if (limit === undefined) return at;
    const inHour = this.#published.filter((time) => time > at - HOUR && time <= at);
    if (inHour.length < limit) return at;
    // The oldest of the last `limit` publications must leave the hour.
    return inHour[inHour.length - limit]! + HOUR;
  }

  /**
   * The windows' spacing after the previous publication, as the windows in force at `at` set
   * it: the server's windows pace every batch change together, a spec's windows its own.
   */
  #paceFloor(at: number): number {
    const floors = [0];
    const server = this.#input.serverWindows?.activeAt(at)?.intervalMs ?? 0;
    const spec = this.#input.specWindows?.activeAt(at)?.intervalMs ?? 0;
    if (Number.isFinite(server) && server > 0 && this.#lastServer !== null) {
      floors.push(this.#lastServer + server);
    }
    if (Number.isFinite(spec) && spec > 0 && this.#lastBatchChange !== null) {
      floors.push(this.#lastBatchChange + spec);
    }
    return Math.max(...floors);
  }
}
