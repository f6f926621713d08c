export { type SseEvent, SseEventFilter, SseParser } from "@deckhand/sse";
export {
  type LogFields,
  type ModelProxyLogger,
  redactingLogger,
  silentLogger,
} from "./logger.ts";
export { createModelProxy, type ModelProxyOptions } from "./model-proxy.ts";
export { ModelProxyError, type ModelProxyErrorCodeName } from "./model-proxy-error.ts";
export {
  hashModelToken,
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
export { DEFAULT_RATE_LIMIT, type RateLimitOptions, TokenBucketLimiter } from "./rate-limit.ts";
export { type UpstreamConfig, UpstreamConfigSchema } from "./upstreams.ts";
export {
  InMemoryUsageRecorder,
  type ModelUsageEntry,
  type TokenCounts,
  UsageAccumulator,
  type UsageRecorder,
} from "./usage.ts";
