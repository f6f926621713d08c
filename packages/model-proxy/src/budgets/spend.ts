// Spend in tokens and, with a price table, in money: the price table config.json gives
// (`modelPrices`), sums of usage, and whether a limit is reached.
import type { Spend, SpendLimit } from "@deckhand/wire";
import { z } from "zod";

const PRICE_BASIS = 1_000_000;

/** One model's prices per million tokens. */
const ModelPriceSchema = z.strictObject({
  input: z.number().min(0).max(1e6),
  output: z.number().min(0).max(1e6),
});

/**
 * `modelPrices` in config.json: the currency and each model's prices per million input and
 * output tokens. A key ending in `*` prices every model starting with what precedes it (the
 * longest such prefix wins over a shorter one; an exact name over both; `*` alone prices every
 * model the others do not).
 */
export const ModelPricesFileSchema = z.strictObject({
  currency: z.string().min(1).max(10).optional(),
  models: z.record(z.string().min(1).max(200), ModelPriceSchema),
});
export type ModelPricesFile = z.infer<typeof ModelPricesFileSchema>;

/** Prices by model name, as config.json gives them; empty when none are configured. */
export class PriceTable {
  static readonly none = new PriceTable(undefined);
  readonly currency: string | null;
  readonly #exact = new Map<string, z.infer<typeof ModelPriceSchema>>();
  readonly #prefixes: [string, z.infer<typeof ModelPriceSchema>][] = [];

  constructor(file: ModelPricesFile | undefined) {
    this.currency = file === undefined ? null : (file.currency ?? "USD");
    for (const [model, price] of Object.entries(file?.models ?? {})) {
      if (model.endsWith("*")) this.#prefixes.push([model.slice(0, -1), price]);
      else this.#exact.set(model, price);
    }
    this.#prefixes.sort((left, right) => right[0].length - left[0].length);
  }

  get configured(): boolean {
    return this.currency !== null;
  }

  /** The models (and patterns) the table prices. */
  models(): string[] {
    return [...this.#exact.keys(), ...this.#prefixes.map(([prefix]) => `${prefix}*`)].sort();
  }

  /** What tokens of a model cost; undefined when the table has no price for it. */
  costOf(model: string | null, inputTokens: number, outputTokens: number): number | undefined {
    const name = model ?? "";
    const price =
      this.#exact.get(name) ?? this.#prefixes.find(([prefix]) => name.startsWith(prefix))?.[1];
    if (price === undefined) return undefined;
    return (inputTokens * price.input + outputTokens * price.output) / PRICE_BASIS;
  }
}

/** Nothing spent. */
export function emptySpend(prices: PriceTable): Spend {
  return {
    tokens: 0,
    input_tokens: 0,
    output_tokens: 0,
    cost: prices.configured ? 0 : null,
    unpriced_tokens: 0,
    requests: 0,
  };
}

/** Usage summed per model, as the ledger reads it. */
export interface ModelTotals {
  model: string | null;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  requests: number;
}

/** Adds one model's usage to a spend, priced by the table. */
export function addModelTotals(spend: Spend, totals: ModelTotals, prices: PriceTable): Spend {
  const cost = prices.costOf(totals.model, totals.inputTokens, totals.outputTokens);
  return {
    tokens: spend.tokens + totals.totalTokens,
    input_tokens: spend.input_tokens + totals.inputTokens,
    output_tokens: spend.output_tokens + totals.outputTokens,
    cost: spend.cost === null ? null : spend.cost + (cost ?? 0),
    unpriced_tokens:
      spend.unpriced_tokens + (cost === undefined && prices.configured ? totals.totalTokens : 0),
    requests: spend.requests + totals.requests,
  };
}

/** Two spends together (of one price table). */
export function addSpend(left: Spend, right: Spend): Spend {
  return {
    tokens: left.tokens + right.tokens,
    input_tokens: left.input_tokens + right.input_tokens,
    output_tokens: left.output_tokens + right.output_tokens,
    cost: left.cost === null || right.cost === null ? null : left.cost + right.cost,
    unpriced_tokens: left.unpriced_tokens + right.unpriced_tokens,
    requests: left.requests + right.requests,
  };
}

/** A limit that limits something, or null. */
export function limitOrNull(limit: SpendLimit | null | undefined): SpendLimit | null {
  if (limit === null || limit === undefined) return null;
  return limit.tokens === undefined && limit.cost === undefined ? null : limit;
}

/** The tighter of two limits, field by field. */
export function tightest(...limits: (SpendLimit | null | undefined)[]): SpendLimit | null {
  const result: SpendLimit = {};
  for (const limit of limits) {
    if (limit?.tokens !== undefined)
      result.tokens = Math.min(result.tokens ?? Infinity, limit.tokens);
    if (limit?.cost !== undefined) result.cost = Math.min(result.cost ?? Infinity, limit.cost);
  }
  return limitOrNull(result);
}

/** Which part of a limit a spend has reached, if any. */
export function reachedPart(spent: Spend, limit: SpendLimit | null): "tokens" | "cost" | null {
  if (limit === null) return null;
  if (limit.tokens !== undefined && spent.tokens >= limit.tokens) return "tokens";
  if (limit.cost !== undefined && spent.cost !== null && spent.cost >= limit.cost) return "cost";
  return null;
}

const integer = new Intl.NumberFormat("en-US");

/** `2,000,000 tokens` or `5.00 USD`. */
export function describeAmount(
  part: "tokens" | "cost",
  amount: number,
  currency: string | null,
): string {
  return part === "tokens"
    ? `${integer.format(amount)} tokens`
    : `${amount.toFixed(2)} ${currency ?? ""}`.trim();
}
