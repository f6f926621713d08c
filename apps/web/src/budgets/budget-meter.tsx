import type { BudgetStatus } from "@deckhand/wire";
import { budgetFraction, formatLimit, formatSpend } from "./spend-format.ts";

/** One scope's spend against its budget: a meter and the words for it. */
export function BudgetMeter({
  label,
  status,
  currency,
}: {
  label: string;
  status: BudgetStatus;
  currency: string | null;
}) {
  const fraction = budgetFraction(status);
  const words = `${formatSpend(status.spent, currency)} of ${formatLimit(status.limit, currency)}`;
  return (
    <div className="budget-meter" data-scope={status.scope} data-reached={status.reached}>
      <span className="budget-label">{label}</span>
      {fraction !== null && (
        <meter
          min={0}
          max={1}
          low={0.75}
          high={0.9}
          optimum={0}
          value={fraction}
          aria-label={`${label}: ${words}`}
        >
          {Math.round(fraction * 100)}%
        </meter>
      )}
      <span data-field="spend">{words}</span>
      {status.reached && (
        <span className="badge" data-status="failed">
          budget reached
        </span>
      )}
    </div>
  );
}
