import type { BudgetStatus } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import {
  budgetFraction,
  formatLimit,
  formatSpend,
  formatTokens,
  inHowLong,
} from "./spend-format.ts";

const spent = {
  tokens: 1_250_000,
  input_tokens: 1_000_000,
  output_tokens: 250_000,
  cost: 3.4,
  unpriced_tokens: 0,
  requests: 12,
};

describe("spend in words", () => {
  it("writes tokens compactly and money in the table's currency", () => {
    expect(formatTokens(2_000_000)).toBe("2M tokens");
    expect(formatTokens(950)).toBe("950 tokens");
    expect(formatSpend(spent, "USD")).toBe("1.3M tokens · 3.40 USD");
    expect(formatSpend({ tokens: 10, cost: null }, null)).toBe("10 tokens");
    expect(formatLimit({ tokens: 2_000_000, cost: 5 }, "EUR")).toBe("2M tokens or 5.00 EUR");
    expect(formatLimit(null, null)).toBe("no budget");
  });

  it("measures a budget by the part nearest its limit", () => {
    const status = (limit: BudgetStatus["limit"]): BudgetStatus => ({
      scope: "run",
      id: "r",
      spent,
      limit,
      reached: false,
    });
    expect(budgetFraction(status({ tokens: 2_500_000 }))).toBe(0.5);
    expect(budgetFraction(status({ tokens: 2_500_000, cost: 4 }))).toBe(0.85);
    expect(budgetFraction(status({ tokens: 1_000 }))).toBe(1);
    expect(budgetFraction(status(null))).toBeNull();
  });

  it("says when something will happen", () => {
    const now = Date.parse("2030-06-03T10:00:00Z");
    expect(inHowLong("2030-06-03T10:00:10Z", now)).toBe("now");
    expect(inHowLong("2030-06-03T10:06:00Z", now)).toBe("in 6 min");
    expect(inHowLong("2030-06-03T13:00:00Z", now)).toBe("in 3 h");
    expect(inHowLong("2030-06-06T10:00:00Z", now)).toBe("in 3 days");
  });
});
