import { describe, expect, it } from "vitest";
import { TokenBucketLimiter } from "./rate-limit.ts";

describe("TokenBucketLimiter", () => {
  it("allows a burst, then refuses with the seconds until the next request fits", () => {
    const limiter = new TokenBucketLimiter({ burst: 3, perSecond: 0.5 });
    for (let index = 0; index < 3; index += 1) {
      expect(limiter.take("a", 0)).toEqual({ allowed: true });
    }
    expect(limiter.take("a", 0)).toEqual({ allowed: false, retryAfterSeconds: 2 });
    expect(limiter.take("b", 0)).toEqual({ allowed: true });
    expect(limiter.take("a", 2_000)).toEqual({ allowed: true });
    expect(limiter.take("a", 2_000).allowed).toBe(false);
  });

  it("never holds more than the burst however long a key was idle", () => {
    const limiter = new TokenBucketLimiter({ burst: 2, perSecond: 10 });
    limiter.take("a", 0);
    const decisions = [1, 2, 3].map(() => limiter.take("a", 1_000_000).allowed);
    expect(decisions).toEqual([true, true, false]);
  });

  it("rejects a configuration that would allow nothing", () => {
    expect(() => new TokenBucketLimiter({ burst: 0, perSecond: 1 })).toThrow(RangeError);
    expect(() => new TokenBucketLimiter({ burst: 1, perSecond: 0 })).toThrow(RangeError);
  });
});
