/** A token bucket: `burst` requests at once, refilled at `perSecond`. */
export interface RateLimitOptions {
  burst: number;
  perSecond: number;
}

export const DEFAULT_RATE_LIMIT: RateLimitOptions = { burst: 60, perSecond: 2 };

interface Bucket {
  tokens: number;
  updatedAt: number;
}

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** Per-key token buckets. Buckets that have refilled completely are dropped to bound memory. */
export class TokenBucketLimiter {
  readonly #options: RateLimitOptions;
  readonly #buckets = new Map<string, Bucket>();
  #takesSinceSweep = 0;

  constructor(options: RateLimitOptions) {
    if (!(options.burst >= 1) || !(options.perSecond > 0)) {
      throw new RangeError("rate limit needs burst >= 1 and perSecond > 0");
    }
    this.#options = options;
  }

  take(key: string, now: number): RateDecision {
    const { burst, perSecond } = this.#options;
    const bucket = this.#buckets.get(key) ?? { tokens: burst, updatedAt: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.updatedAt) / 1000) * perSecond);
    bucket.updatedAt = now;
    this.#buckets.set(key, bucket);
    this.#sweep(now);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true };
    }
    return { allowed: false, retryAfterSeconds: Math.ceil((1 - bucket.tokens) / perSecond) };
  }

  #sweep(now: number): void {
    this.#takesSinceSweep += 1;
    if (this.#takesSinceSweep < 1000) return;
    this.#takesSinceSweep = 0;
    const { burst, perSecond } = this.#options;
    for (const [key, bucket] of this.#buckets) {
      if (bucket.tokens + ((now - bucket.updatedAt) / 1000) * perSecond >= burst) {
        this.#buckets.delete(key);
      }
    }
  }
}
