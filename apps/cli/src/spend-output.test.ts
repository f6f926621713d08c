import type { BatchRunSpend, BudgetStatus } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { runSpendLine } from "./spend-output.ts";

const spent = (tokens: number, requests = 1) => ({
  tokens,
  input_tokens: tokens,
  output_tokens: 0,
  cost: null,
  unpriced_tokens: 0,
  requests,
});

function status(tokens: number, limit: BudgetStatus["limit"], reached = false): BudgetStatus {
  return { scope: "run", id: "r", spent: spent(tokens), limit, reached };
}

function report(run: BudgetStatus, overrides: Partial<BatchRunSpend> = {}): BatchRunSpend {
  return {
    batch_run_id: "r",
    run,
    workspaces: [],
    day: { ...status(0, null), scope: "day" },
    currency: null,
    ...overrides,
  };
}

describe("a run's spend line", () => {
  it("says nothing before anything is spent without a budget", () => {
    expect(runSpendLine(report({ ...status(0, null), spent: spent(0, 0) }))).toBeNull();
  });

  it("shows spend against the run's budget, and which workspaces reached theirs", () => {
    expect(runSpendLine(report(status(1_250_000, { tokens: 2_000_000 })))).toBe(
      "model spend: 1.3M tokens of 2M tokens",
    );
    expect(
      runSpendLine(
        report(status(2_100_000, { tokens: 2_000_000 }, true), {
          workspaces: [
            {
              workspace_id: "w",
              repository: "github.com/acme/api",
              path: "",
              budget: status(10, { tokens: 5 }, true),
            },
          ],
          day: { ...status(5_000_000, { tokens: 50_000_000 }), scope: "day" },
        }),
      ),
    ).toBe(
      "model spend: 2.1M tokens of 2M tokens — budget reached · 1 workspace at their budget · server today: 5M tokens of 50M tokens",
    );
  });

  it("adds cost in the price table's currency", () => {
    expect(
      runSpendLine(
        report(
          { ...status(100, { cost: 5 }), spent: { ...spent(100), cost: 1.5 } },
          {
            currency: "USD",
          },
        ),
      ),
    ).toBe("model spend: 100 tokens, 1.50 USD of 5.00 USD");
  });
});
