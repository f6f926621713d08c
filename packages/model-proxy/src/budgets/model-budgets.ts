// Model spend budgets: which scopes a job's requests count against (its own job, its batch run,
// its session, the server's day), their limits (config.json's `modelBudgets`, tightened by what
// a run or spec sets), and whether one is reached. The proxy asks before forwarding each request;
// usage arrives when an answer ends, so a budget can be overshot by the answers in flight when it
// is reached (docs/operations/budgets-and-rollouts.md says by how much).
import {
  type BudgetScopeKind,
  type BudgetStatus,
  type Spend,
  type SpendLimit,
  SpendLimitSchema,
} from "@deckhand/wire";
import { z } from "zod";
import { describeAmount, reachedPart, tightest } from "./spend.ts";
import type { SpendLedger, SpendSelector } from "./spend-ledger.ts";

/** `modelBudgets` in config.json: the limits for every job, run, session and (UTC) day. */
export const ModelBudgetsFileSchema = z.strictObject({
  job: SpendLimitSchema.optional(),
  run: SpendLimitSchema.optional(),
  session: SpendLimitSchema.optional(),
  day: SpendLimitSchema.optional(),
});
export type ModelBudgetsFile = z.infer<typeof ModelBudgetsFileSchema>;

/** One scope a job's spend counts against. */
export interface BudgetScope {
  kind: BudgetScopeKind;
  id: string;
  /** Names the scope in refusals: `run 1a2b3c4d`, `workspace github.com/acme/api`. */
  label: string;
  /** The scope's own limit (a run's budget option, a spec's); config.json's is added to it. */
  limit: SpendLimit | null;
  selector: SpendSelector;
  /** What to do once it is reached, for the refusal's message. */
  advice: string;
}

/** Knows the scopes of some kind of job (batch workspaces, agent sessions). */
export interface BudgetScopeSource {
  /** The job's scopes besides the day; null when the job is not one this source knows. */
  scopesOf(jobId: string): Promise<BudgetScope[] | null>;
  /**
   * The kinds of a job's scopes when none of them can carry a limit of its own (only
   * config.json's apply to them), so a check skips reading them while config.json sets none;
   * null when the job is not one this source knows or its scopes may have limits of their own.
   */
  limitlessKinds?(jobId: string): readonly BudgetScopeKind[] | null;
}

/** A reached budget, and the message the agent is refused with. */
export interface BudgetRefusal {
  scope: BudgetScope;
  message: string;
}

export interface ModelBudgetsOptions {
  ledger: SpendLedger;
  /** config.json's `modelBudgets`, read at each use. */
  limits: () => ModelBudgetsFile;
  sources?: readonly BudgetScopeSource[];
  /** The clock the day is read from; tests set it. */
  now?: () => number;
}

const DAY = 24 * 3_600_000;

export class ModelBudgets {
  readonly ledger: SpendLedger;
  readonly #options: ModelBudgetsOptions;
  readonly #sources: BudgetScopeSource[];
  readonly #now: () => number;

  constructor(options: ModelBudgetsOptions) {
    this.ledger = options.ledger;
    this.#options = options;
    this.#sources = [...(options.sources ?? [])];
    this.#now = options.now ?? Date.now;
  }

  /** Adds the scopes of another kind of job (the batch engine adds its own). */
  addSource(source: BudgetScopeSource): void {
    this.#sources.push(source);
  }

  /** config.json's limits, each null where unset. */
  limits(): Record<"job" | "run" | "session" | "day", SpendLimit | null> {
    const file = this.#options.limits();
    return {
      job: tightest(file.job),
      run: tightest(file.run),
      session: tightest(file.session),
      day: tightest(file.day),
    };
  }

  /** A scope with config.json's limit for its kind added: the tighter of both applies. */
  withServerLimit(scope: BudgetScope): BudgetScope {
    return { ...scope, limit: tightest(scope.limit, this.limits()[scope.kind]) };
  }

  /** The whole server's spend today (UTC). */
  dayScope(): BudgetScope {
    const start = Math.floor(this.#now() / DAY) * DAY;
    const day = new Date(start).toISOString().slice(0, 10);
    return this.withServerLimit({
      kind: "day",
      id: day,
      label: `the whole server on ${day} (UTC)`,
      limit: null,
      selector: { since: new Date(start) },
      advice: "the daily budget (modelBudgets.day in config.json) starts again at midnight UTC",
    });
  }

  /** Every scope a job's requests count against, with their limits, the day last. */
  async scopesOf(jobId: string): Promise<BudgetScope[]> {
    let scopes: BudgetScope[] | null = null;
    for (const source of this.#sources) {
      scopes = await source.scopesOf(jobId);
      if (scopes !== null) break;
    }
    const own = scopes ?? [
      {
        kind: "job" as const,
        id: jobId,
        label: `job ${jobId}`,
        limit: null,
        selector: { jobIds: [jobId] },
        advice: "raise modelBudgets.job in config.json",
      },
    ];
    return [...own.map((scope) => this.withServerLimit(scope)), this.dayScope()];
  }

  /** The first of a job's budgets that is reached, or null: the proxy's question. */
  async check(jobId: string): Promise<BudgetRefusal | null> {
    if (this.#noLimitApplies(jobId)) return null;
    for (const scope of await this.scopesOf(jobId)) {
      const refusal = await this.reached(scope);
      if (refusal !== null) return refusal;
    }
    return null;
  }

  /**
   * Whether no budget can apply to a job's requests, known without reading its scopes: its
   * source says they carry no limits of their own, and config.json sets none for their kinds,
   * for a job (the scope of a job its source no longer finds) or for the day.
   */
  #noLimitApplies(jobId: string): boolean {
    const limits = this.limits();
    if (limits.day !== null || limits.job !== null) return false;
    for (const source of this.#sources) {
      const kinds = source.limitlessKinds?.(jobId);
      if (kinds !== null && kinds !== undefined)
        return kinds.every((kind) => limits[kind] === null);
    }
    return false;
  }

  /** Whether a scope's budget is reached, with the message saying so. */
  async reached(scope: BudgetScope): Promise<BudgetRefusal | null> {
    if (scope.limit === null) return null;
    const spent = await this.ledger.spent(scope.selector);
    const part = reachedPart(spent, scope.limit);
    if (part === null) return null;
    return { scope, message: this.message(scope, part, spent) };
  }

  /** `budget of 2,000,000 tokens for run 1a2b3c4d reached (2,003,112 tokens spent); ...`. */
  message(scope: BudgetScope, part: "tokens" | "cost", spent: Spend): string {
    const currency = this.ledger.prices.currency;
    const limit = part === "tokens" ? scope.limit!.tokens! : scope.limit!.cost!;
    const used = part === "tokens" ? spent.tokens : spent.cost!;
    return `budget of ${describeAmount(part, limit, currency)} for ${scope.label} reached (${describeAmount(part, used, currency)} spent); ${scope.advice}`;
  }

  /** A scope's spend against its limit, for the API. */
  async status(scope: BudgetScope, spent?: Spend): Promise<BudgetStatus> {
    const used = spent ?? (await this.ledger.spent(scope.selector));
    return {
      scope: scope.kind,
      id: scope.id,
      spent: used,
      limit: scope.limit,
      reached: reachedPart(used, scope.limit) !== null,
    };
  }
}
