import type { ModelProxyLogger } from "./logger.ts";
import type { ModelTokenRecord } from "./model-token.ts";
import { DEFAULT_RATE_LIMIT, type RateLimitOptions, TokenBucketLimiter } from "./rate-limit.ts";

/** The per-token request limit: a token bucket per scoped token, or none at all. */
export class RequestRateLimit {
  readonly #limiter: TokenBucketLimiter | undefined;
  readonly #now: () => number;

  constructor(options: RateLimitOptions | false | undefined, now: () => number) {
    this.#limiter =
      options === false ? undefined : new TokenBucketLimiter(options ?? DEFAULT_RATE_LIMIT);
    this.#now = now;
  }

  /** A 429 saying when to retry when the token sent too many requests; null to go on. */
  refusal(agentType: string, record: ModelTokenRecord, logger: ModelProxyLogger): Response | null {
    if (!this.#limiter) return null;
    const decision = this.#limiter.take(record.id, this.#now());
    if (decision.allowed) return null;
    logger.warn("model-provider request rate limited", {
      agentType,
      jobId: record.jobId,
      tokenId: record.id,
    });
    return Response.json(
      {
        error: {
          code: "rate_limited",
          message: `too many model requests for this token; retry after ${decision.retryAfterSeconds} s`,
        },
      },
      { status: 429, headers: { "Retry-After": String(decision.retryAfterSeconds) } },
    );
  }
}
