// Model spend in the CLI's words: `model spend: 1.2M tokens of 2M tokens (run budget)`, shown
// live under a run's progress and once more when it ends.
import type { BatchRunSpend, BudgetStatus, Spend, SpendLimit } from "@deckhand/wire";

const compact = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });

function spentText(spent: Pick<Spend, "tokens" | "cost">, currency: string | null): string {
  const tokens = `${compact.format(spent.tokens)} tokens`;
  return spent.cost === null || currency === null
    ? tokens
    : `${tokens}, ${spent.cost.toFixed(2)} ${currency}`;
}

function limitText(limit: SpendLimit, currency: string | null): string {
  return [
    limit.tokens === undefined ? null : `${compact.format(limit.tokens)} tokens`,
    limit.cost === undefined ? null : `${limit.cost.toFixed(2)} ${currency ?? ""}`.trim(),
  ]
    .filter((part): part is string => part !== null)
    .join(" or ");
}

function statusText(status: BudgetStatus, currency: string | null): string {
  const spent = spentText(status.spent, currency);
  if (status.limit === null) return spent;
  return `${spent} of ${limitText(status.limit, currency)}${status.reached ? " — budget reached" : ""}`;
}

/** One line for a run's spend, or null while nothing was spent and no budget is set. */
export function runSpendLine(report: BatchRunSpend): string | null {
  if (report.run.spent.requests === 0 && report.run.limit === null) return null;
  const parts = [`model spend: ${statusText(report.run, report.currency)}`];
  const reached = report.workspaces.filter((workspace) => workspace.budget.reached).length;
  if (reached > 0) {
    parts.push(`${reached} workspace${reached === 1 ? "" : "s"} at their budget`);
  }
  if (report.day.limit !== null)
    parts.push(`server today: ${statusText(report.day, report.currency)}`);
  return parts.join(" · ");
}
