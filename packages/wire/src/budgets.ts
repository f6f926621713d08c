// Model spend budgets: the limits the model-provider proxy enforces per job, batch run, session
// and day, and the spend reports the API returns against them. Shared by the server's
// config.json, batch run options, the batch spec's codingAgent steps and the API.
import { z } from "zod";

/**
 * A spend limit: tokens (input and output together, as the providers count them) and, where a
 * price table is configured, cost in that table's currency. Either, both or neither (no limit).
 */
export const SpendLimitSchema = z
  .strictObject({
    /** The most tokens, input and output together. */
    tokens: z.int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
    /** The most cost, in the currency of the server's `modelPrices`; needs a price table. */
    cost: z.number().positive().max(1e12).optional(),
  })
  .meta({
    description:
      "A spend limit: tokens (input and output together) and/or cost in the currency of the server's modelPrices.",
  });
export type SpendLimit = z.infer<typeof SpendLimitSchema>;

/** What a scope spent: its tokens and, with a price table, what they cost. */
export const SpendSchema = z.object({
  tokens: z.int().min(0),
  input_tokens: z.int().min(0),
  output_tokens: z.int().min(0),
  /**
   * What the tokens cost at the configured prices; null when no price table is configured.
   * Tokens of models the table has no price for add nothing (see `unpriced_tokens`).
   */
  cost: z.number().min(0).nullable(),
  /** Tokens of models the price table does not price. */
  unpriced_tokens: z.int().min(0),
  requests: z.int().min(0),
});
export type Spend = z.infer<typeof SpendSchema>;

/** The scopes budgets apply to. */
export const BudgetScopeKindSchema = z.enum(["job", "run", "session", "day"]);
export type BudgetScopeKind = z.infer<typeof BudgetScopeKindSchema>;

/** One scope's spend against its budget. */
export const BudgetStatusSchema = z.object({
  scope: BudgetScopeKindSchema,
  /** The job id, run id, session id, or the day (`2025-06-01`, UTC). */
  id: z.string(),
  spent: SpendSchema,
  /** The budget that applies (the tightest of those configured); null when there is none. */
  limit: SpendLimitSchema.nullable(),
  /** True once a limit is reached: the proxy refuses the scope's further model requests. */
  reached: z.boolean(),
});
export type BudgetStatus = z.infer<typeof BudgetStatusSchema>;

/** `GET /api/batch-runs/:id/spend`: a run's model spend, per workspace, against its budgets. */
export const BatchRunSpendSchema = z.object({
  batch_run_id: z.string(),
  run: BudgetStatusSchema,
  workspaces: z.array(
    z.object({
      workspace_id: z.string(),
      repository: z.string(),
      path: z.string(),
      budget: BudgetStatusSchema,
    }),
  ),
  /** The whole server's spend today against the daily budget. */
  day: BudgetStatusSchema,
  /** The price table's currency; null without one. */
  currency: z.string().nullable(),
});
export type BatchRunSpend = z.infer<typeof BatchRunSpendSchema>;

/** `GET /api/sessions/:id/spend`: a session's model spend against its budget. */
export const SessionSpendSchema = z.object({
  session_id: z.string(),
  session: BudgetStatusSchema,
  day: BudgetStatusSchema,
  currency: z.string().nullable(),
});
export type SessionSpend = z.infer<typeof SessionSpendSchema>;

/** `GET /api/budgets`: the server's budgets and today's spend. */
export const ServerBudgetsSchema = z.object({
  /** The limits config.json sets for every job, run, session and day; null where unset. */
  limits: z.object({
    job: SpendLimitSchema.nullable(),
    run: SpendLimitSchema.nullable(),
    session: SpendLimitSchema.nullable(),
    day: SpendLimitSchema.nullable(),
  }),
  day: BudgetStatusSchema,
  currency: z.string().nullable(),
  /** The models the price table prices. */
  priced_models: z.array(z.string()),
});
export type ServerBudgets = z.infer<typeof ServerBudgetsSchema>;

/** A changeset's share of its batch change's model spend: its workspace job's. */
export const ChangesetSpendSchema = z.object({
  changeset_id: z.string(),
  spent: SpendSchema,
});

/**
 * A batch change's model spend: every workspace job of every run of it, per changeset, and per
 * merged pull request ("cost per merged pull request").
 */
export const BatchChangeSpendSchema = z.object({
  total: SpendSchema,
  merged: z.int().min(0),
  /** `total` divided by the merged pull requests; null while none is merged. */
  per_merged: z
    .object({ tokens: z.number().min(0), cost: z.number().min(0).nullable() })
    .nullable(),
  /** Changesets of one workspace (transformChanges groups) each show the workspace's spend. */
  changesets: z.array(ChangesetSpendSchema),
  currency: z.string().nullable(),
});
export type BatchChangeSpend = z.infer<typeof BatchChangeSpendSchema>;

/**
 * The job ids model usage is recorded under, one spelling for everyone who mints tokens for
 * them and everyone who reads usage back: a batch workspace's job, an agent session's job.
 */
export const UsageJobId = {
  batchWorkspace: (workspaceId: string) => `batch-workspace:${workspaceId}`,
  agentSession: (agentSessionId: string) => `agent-session:${agentSessionId}`,
} as const;

/** What kind of job an id names, and the row it belongs to; null for other jobs (probes). */
export function parseUsageJobId(
  jobId: string,
): { kind: "batch_workspace" | "agent_session"; id: string } | null {
  const match = /^(batch-workspace|agent-session):(.+)$/.exec(jobId);
  if (match === null) return null;
  return {
    kind: match[1] === "batch-workspace" ? "batch_workspace" : "agent_session",
    id: match[2]!,
  };
}
