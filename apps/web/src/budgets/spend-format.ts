// Spend and budgets in words for the UI: tokens compactly (1.2M), money in the price table's
// currency, and how far a scope is into its budget.
import type { BudgetStatus, Spend, SpendLimit } from "@deckhand/wire";

const compact = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });

/** `1.2M tokens`. */
export function formatTokens(tokens: number): string {
  return `${compact.format(tokens)} tokens`;
}

/** `3.40 USD`; an empty string without a currency (no price table). */
export function formatCost(cost: number | null, currency: string | null): string {
  if (cost === null || currency === null) return "";
  return `${cost.toFixed(2)} ${currency}`;
}

/** `1.2M tokens · 3.40 USD`. */
export function formatSpend(
  spend: Pick<Spend, "tokens" | "cost">,
  currency: string | null,
): string {
  const cost = formatCost(spend.cost, currency);
  return cost === "" ? formatTokens(spend.tokens) : `${formatTokens(spend.tokens)} · ${cost}`;
}

/** `2M tokens`, `5.00 USD`, or both; "no budget" without a limit. */
export function formatLimit(limit: SpendLimit | null, currency: string | null): string {
  if (limit === null) return "no budget";
  const parts = [
    limit.tokens === undefined ? null : formatTokens(limit.tokens),
    limit.cost === undefined ? null : `${limit.cost.toFixed(2)} ${currency ?? ""}`.trim(),
  ].filter((part): part is string => part !== null);
  return parts.join(" or ");
}

/**
 * How much of its budget a scope has spent, 0 to 1 (the part nearest its limit), or null
 * without a limit.
 */
export function budgetFraction(status: BudgetStatus): number | null {
  const { limit, spent } = status;
  if (limit === null) return null;
  const parts: number[] = [];
  if (limit.tokens !== undefined) parts.push(spent.tokens / limit.tokens);
  if (limit.cost !== undefined && spent.cost !== null) parts.push(spent.cost / limit.cost);
  if (parts.length === 0) return null;
  return Math.min(1, Math.max(...parts));
}

/** "now", "in 5 min", "in 3 h", "in 2 days": when something will happen. */
export function inHowLong(iso: string, now: number): string {
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  if (seconds < 30) return "now";
  if (seconds < 3_600) return `in ${Math.round(seconds / 60)} min`;
  if (seconds < 48 * 3_600) return `in ${Math.round(seconds / 3_600)} h`;
  return `in ${Math.round(seconds / 86_400)} days`;
}
