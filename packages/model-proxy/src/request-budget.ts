import { budgetRefusalResponse } from "./budgets/budget-refusal.ts";
import type { ModelProxyLogger } from "./logger.ts";
import type { ModelTokenRecord } from "./model-token.ts";
import type { UpstreamRoute } from "./proxy-upstreams.ts";

/** What the proxy asks before forwarding (ModelBudgets answers it): a reason to refuse, or null. */
export interface BudgetCheck {
  check(jobId: string): Promise<{ message: string } | null>;
}

/**
 * The spend budgets a request is held to before it is forwarded: once one that covers the
 * token's job is reached, the request is answered with 402 and the reason, in the error shape of
 * the provider the agent thinks it is talking to. No budgets, no check.
 */
export class RequestBudget {
  readonly #budgets: BudgetCheck | undefined;

  constructor(budgets: BudgetCheck | undefined) {
    this.#budgets = budgets;
  }

  /** The provider-shaped 402 when the job's budget is reached; null to go on. */
  async refusal(
    route: UpstreamRoute,
    record: ModelTokenRecord,
    logger: ModelProxyLogger,
  ): Promise<Response | null> {
    if (this.#budgets === undefined) return null;
    // Listing models and counting tokens cost nothing; every other request is checked.
    if (route.endpoint === "models" || route.endpoint === "count_tokens") return null;
    const refusal = await this.#budgets.check(record.jobId);
    if (refusal === null) return null;
    logger.warn("model-provider request refused: budget reached", {
      agentType: route.agentType,
      jobId: record.jobId,
      tokenId: record.id,
      reason: refusal.message,
    });
    return budgetRefusalResponse(route.upstream.kind, refusal.message);
  }
}
