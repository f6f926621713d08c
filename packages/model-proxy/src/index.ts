export {
  BUDGET_EXCEEDED_STATUS,
  budgetRefusalBody,
} from "./budgets/budget-refusal.ts";
export {
  type BudgetRefusal,
  type BudgetScope,
  type BudgetScopeSource,
  ModelBudgets,
  type ModelBudgetsFile,
  ModelBudgetsFileSchema,
  type ModelBudgetsOptions,
} from "./budgets/model-budgets.ts";
export {
  addSpend,
  describeAmount,
  emptySpend,
  type ModelPricesFile,
  ModelPricesFileSchema,
  PriceTable,
  reachedPart,
  tightest,
} from "./budgets/spend.ts";
export { DbSpendLedger, type SpendLedger, type SpendSelector } from "./budgets/spend-ledger.ts";
export { DbModelTokenStore } from "./db-model-token-store.ts";
export { DbUsageRecorder, type ModelUsageRow } from "./db-usage-recorder.ts";
export type { DirectEdge } from "./direct-handler.ts";
export type { LogFields, ModelProxyLogger } from "./logger.ts";
export {
  createModelProxy,
  createModelProxyRoutes,
  type ModelProxyOptions,
  type ModelProxyRoutes,
} from "./model-proxy.ts";
export { ModelProxyError, type ModelProxyErrorCodeName } from "./model-proxy-error.ts";
export {
  batchJobModelProviderAccess,
  type LeasedModelProxy,
  leaseModelProvider,
  leaseModelProxy,
  type ModelProviderLease,
  type ModelProxyLeaseOptions,
  type ModelProxyLeaseToken,
} from "./model-proxy-lease.ts";
export {
  InMemoryModelTokenStore,
  type MintedModelToken,
  type MintModelTokenOptions,
  type ModelTokenRecord,
  type ModelTokenStore,
  mintModelToken,
  revokeModelToken,
  type TokenRefusal,
  type TokenVerification,
  verifyModelToken,
} from "./model-token.ts";
export type { RateLimitOptions } from "./rate-limit.ts";
export type { ProxyEnvironment } from "./request-authentication.ts";
export type { BudgetCheck } from "./request-budget.ts";
export { describeUpstreams, type UpstreamConfig } from "./upstreams.ts";
export {
  InMemoryUsageRecorder,
  jobUsageReport,
  type ModelUsageEntry,
  type SessionUsageJob,
  type StoredModelUsage,
  sessionUsageReport,
  type UsageRecorder,
  usageTotals,
} from "./usage.ts";
