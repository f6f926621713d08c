import type { BatchChangeSpend } from "@deckhand/wire";
import { formatSpend } from "../budgets/spend-format.ts";

/** What the batch change's agents spent on models, in all and per merged pull request. */
export function BatchChangeSpendSummary({ spend }: { spend: BatchChangeSpend }) {
  if (spend.total.requests === 0) return null;
  return (
    <section aria-labelledby="spend-heading">
      <h2 id="spend-heading">Model spend</h2>
      <dl className="facts">
        <dt>all runs</dt>
        <dd data-field="spend-total">{formatSpend(spend.total, spend.currency)}</dd>
        <dt>per merged pull request</dt>
        <dd data-field="spend-per-merged">
          {spend.per_merged === null
            ? "none merged yet"
            : `${formatSpend({ tokens: Math.round(spend.per_merged.tokens), cost: spend.per_merged.cost }, spend.currency)} (${spend.merged} merged)`}
        </dd>
      </dl>
    </section>
  );
}
