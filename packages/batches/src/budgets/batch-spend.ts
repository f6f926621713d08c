// Model spend of batch runs: the budget scopes of a workspace job (its own budget and its run's),
// whether a run's budget is spent (its workspaces not started yet are then not started), and the
// spend reports of a run and its workspaces.
import { randomUUID } from "node:crypto";
import type { BatchSpec } from "@deckhand/batch-spec";
import { batchRuns, batchSpecs, type DbHandle, workspaces } from "@deckhand/db";
import {
  type BudgetScope,
  type BudgetScopeSource,
  DbSpendLedger,
  emptySpend,
  ModelBudgets,
  type ModelBudgetsFile,
  type ModelPricesFile,
  PriceTable,
  type SpendLedger,
} from "@deckhand/model-proxy";
import {
  type BatchCodingAgentOptions,
  type BatchRunOptions,
  type BatchRunSpend,
  parseUsageJobId,
  type SpendLimit,
  UsageJobId,
} from "@deckhand/wire";
import { asc, eq } from "drizzle-orm";
import { BatchesError } from "../batches-error.ts";
import { knownId } from "../run-store.ts";
import { StoredRunOptionsSchema } from "../stored-run.ts";

/**
 * A workspace's budget: the run's `coding_agent.workspace_budget`, else the sum of the spec's
 * `codingAgent.budget`s (each step's share adds up, whichever step spends it), else config.json's
 * `codingAgent.workspace_budget`; null when none sets one.
 */
export function workspaceBudgetOf(
  spec: Pick<BatchSpec, "steps">,
  options: BatchRunOptions,
  defaults: BatchCodingAgentOptions | undefined,
): SpendLimit | null {
  const fromRun = options.coding_agent?.workspace_budget;
  if (fromRun !== undefined) return fromRun;
  const budgets = (spec.steps ?? []).flatMap((step) =>
    step.codingAgent?.budget === undefined ? [] : [step.codingAgent.budget],
  );
  if (budgets.length > 0) {
    const sum = (pick: (limit: SpendLimit) => number | undefined) => {
      const parts = budgets.map(pick).filter((value): value is number => value !== undefined);
      return parts.length === 0 ? undefined : parts.reduce((total, value) => total + value, 0);
    };
    const tokens = sum((limit) => limit.tokens);
    const cost = sum((limit) => limit.cost);
    return { ...(tokens === undefined ? {} : { tokens }), ...(cost === undefined ? {} : { cost }) };
  }
  return defaults?.workspace_budget ?? null;
}

export interface BatchSpendOptions {
  database: DbHandle;
  budgets: ModelBudgets;
  /** config.json's `codingAgent`, whose `workspace_budget` is the default of every workspace. */
  codingAgent?: BatchCodingAgentOptions;
}

const shortId = (id: string) => id.slice(0, 8);

export class BatchSpend implements BudgetScopeSource {
  readonly #options: BatchSpendOptions;

  constructor(options: BatchSpendOptions) {
    this.#options = options;
  }

  get #db() {
    return this.#options.database.db;
  }

  /** Where spend is read (the budgets' ledger). */
  get ledger(): SpendLedger {
    return this.#options.budgets.ledger;
  }

  /** A batch workspace job's scopes: its own budget and its run's. */
  async scopesOf(jobId: string): Promise<BudgetScope[] | null> {
    const parsed = parseUsageJobId(jobId);
    if (parsed?.kind !== "batch_workspace") return null;
    const [found] = await this.#db
      .select({ workspace: workspaces, run: batchRuns, spec: batchSpecs })
      .from(workspaces)
      .innerJoin(batchRuns, eq(batchRuns.id, workspaces.batchRunId))
      .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
      .where(eq(workspaces.id, parsed.id));
    if (found === undefined) return null;
    const options = StoredRunOptionsSchema.parse(found.run.options);
    return [
      this.#workspaceScope(found.workspace, found.spec.spec as BatchSpec, options),
      await this.runScope(found.run.id, options),
    ];
  }

  /** A run's scope: every workspace job of it, against its `budget` option. */
  async runScope(runId: string, known?: BatchRunOptions): Promise<BudgetScope> {
    knownId(runId, "batch run");
    let options = known;
    if (options === undefined) {
      const [run] = await this.#db.select().from(batchRuns).where(eq(batchRuns.id, runId));
      if (run === undefined) throw new BatchesError("not_found", `no batch run ${runId}`);
      options = StoredRunOptionsSchema.parse(run.options);
    }
    const rows = await this.#db
      .select({ id: workspaces.id })
      .from(workspaces)
      .where(eq(workspaces.batchRunId, runId));
    return this.#runScopeOf(
      runId,
      options,
      rows.map((row) => row.id),
    );
  }

  #runScopeOf(runId: string, options: BatchRunOptions, workspaceIds: readonly string[]) {
    return this.#options.budgets.withServerLimit({
      kind: "run",
      id: runId,
      label: `run ${shortId(runId)}`,
      limit: options.budget ?? null,
      selector: { jobIds: workspaceIds.map((id) => UsageJobId.batchWorkspace(id)) },
      advice:
        "its workspaces not started yet are not started; run the spec again with a larger budget option to go on",
    });
  }

  /** Why a run's workspaces should not start any more (its budget is spent), or null. */
  async runBudgetReached(runId: string): Promise<string | null> {
    const refusal = await this.#options.budgets.reached(await this.runScope(runId));
    return refusal?.message ?? null;
  }

  /**
   * What `runBudgetReached` would answer for a run with these options before any of its
   * workspaces spent anything (the server's limits, or a budget of nothing): why, or null.
   */
  async newRunBudgetReached(options: BatchRunOptions): Promise<string | null> {
    const scope = this.#runScopeOf(randomUUID(), options, []);
    const refusal = await this.#options.budgets.reached(scope);
    return refusal?.message ?? null;
  }

  /** `GET /api/batch-runs/:id/spend`: the run's and each workspace's spend against budgets. */
  async runSpend(runId: string): Promise<BatchRunSpend> {
    knownId(runId, "batch run");
    const [found] = await this.#db
      .select({ run: batchRuns, spec: batchSpecs })
      .from(batchRuns)
      .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
      .where(eq(batchRuns.id, runId));
    if (found === undefined) throw new BatchesError("not_found", `no batch run ${runId}`);
    const options = StoredRunOptionsSchema.parse(found.run.options);
    const budgets = this.#options.budgets;
    const rows = await this.#db
      .select()
      .from(workspaces)
      .where(eq(workspaces.batchRunId, runId))
      .orderBy(asc(workspaces.position));
    const byJob = await budgets.ledger.spentByJob(
      rows.map((row) => UsageJobId.batchWorkspace(row.id)),
    );
    const run = await this.runScope(runId, options);
    return {
      batch_run_id: runId,
      run: await budgets.status(run),
      workspaces: await Promise.all(
        rows.map(async (row) => {
          const scope = this.#workspaceScope(row, found.spec.spec as BatchSpec, options);
          const spent = byJob.get(UsageJobId.batchWorkspace(row.id));
          return {
            workspace_id: row.id,
            repository: row.repository,
            path: row.path,
            budget: await budgets.status(scope, spent ?? emptySpend(budgets.ledger.prices)),
          };
        }),
      ),
      day: await budgets.status(budgets.dayScope()),
      currency: budgets.ledger.prices.currency,
    };
  }

  #workspaceScope(
    row: { id: string; repository: string; path: string },
    spec: BatchSpec,
    options: BatchRunOptions,
  ): BudgetScope {
    const jobId = UsageJobId.batchWorkspace(row.id);
    return this.#options.budgets.withServerLimit({
      kind: "job",
      id: jobId,
      label: `workspace ${row.repository}${row.path === "" ? "" : `/${row.path}`}`,
      limit: workspaceBudgetOf(spec, options, this.#options.codingAgent),
      selector: { jobIds: [jobId] },
      advice:
        "raise codingAgent.budget in the spec (or coding_agent.workspace_budget in the run's options) and run the workspace again",
    });
  }
}

/**
 * The model budgets of a process that runs batch jobs (the server, `deckhand executor`): a
 * ledger over `model_usage` priced with config.json's `modelPrices`, its `modelBudgets`, and the
 * batch engine's scopes. The server adds the sessions' scopes and hands `budgets` to its proxy.
 */
export function createModelSpend(options: {
  database: DbHandle;
  limits: ModelBudgetsFile;
  prices: ModelPricesFile | undefined;
  codingAgent?: BatchCodingAgentOptions;
}): { budgets: ModelBudgets; spend: BatchSpend } {
  const prices = new PriceTable(options.prices);
  const budgets = new ModelBudgets({
    ledger: new DbSpendLedger(options.database.db, () => prices),
    limits: () => options.limits,
  });
  const spend = new BatchSpend({
    database: options.database,
    budgets,
    ...(options.codingAgent ? { codingAgent: options.codingAgent } : {}),
  });
  budgets.addSource(spend);
  return { budgets, spend };
}
