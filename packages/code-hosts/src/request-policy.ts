// One rate limiter and retry policy per code host connection, under every client. Publishing a
// thousand changesets must neither trip a host's abuse limits nor stop half-way, so each request
// waits for the host's own word (Retry-After, X-RateLimit-*, GitLab's RateLimit-*), mutations
// are spaced at the connection's publication rate, and 5xx answers are retried with backoff.
import { errorMessage } from "@deckhand/errors";
import { CodeHostError } from "./code-host-error.ts";
import { DEFAULT_PUBLISH_RATE } from "./connection.ts";
import { isResponse } from "./host-failure.ts";

/** Time as the policy sees it; tests pass one that records waits instead of sleeping. */
export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolveSleep, rejectSleep) => {
      if (signal?.aborted) {
        rejectSleep(signal.reason);
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        rejectSleep(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolveSleep();
      }, ms);
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};

/** Why a request waited before it was sent again. */
export type RequestWaitReason = "rate_limited" | "server_error" | "network_error";

/** Reported before each wait, so a caller can say where a long rollout stands. */
export interface RequestWaitEvent {
  reason: RequestWaitReason;
  method: string;
  /** The request's path (no query, no host), e.g. `/repos/acme/api/pulls`. */
  path: string;
  /** The status answered, when there was an answer. */
  status: number | undefined;
  /** The attempt that failed, from 1. */
  attempt: number;
  waitMs: number;
}

export interface RequestPolicyOptions {
  /** The connection's name, for messages. */
  name?: string;
  /** Mutating requests per minute, spaced evenly; 30 by default. */
  publishRate?: { perMinute: number };
  /** Attempts per request, the first included; 5 by default. */
  maxAttempts?: number;
  /** The first backoff after a 5xx or a lost connection; doubled each time, with jitter. */
  baseDelayMs?: number;
  /** The longest backoff after a 5xx or a lost connection. */
  maxDelayMs?: number;
  /**
   * The wait after a rate-limit answer that says nothing of when to come back (GitHub asks for
   * at least a minute after a secondary limit without Retry-After); doubled each time.
   */
  rateLimitFallbackMs?: number;
  /** The longest wait a rate limit may ask for; beyond it the request fails with `rate_limited`. */
  maxWaitMs?: number;
  /** Requests in flight at once to this host. GitHub asks clients not to run many at once. */
  maxConcurrent?: number;
  clock?: Clock;
  /** A number in [0, 1) for jitter; Math.random by default. */
  random?: () => number;
  onWait?: (event: RequestWaitEvent) => void;
  /** Stops waiting (and the requests waiting) when aborted. */
  signal?: AbortSignal;
}

/** What the policy needs to know of a request; the send function does the rest. */
export interface PolicyRequest {
  method: string;
  url: string;
}

const MUTATING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** A 5xx that a retry may fix; 501 (not implemented) will not change. */
const RETRYABLE_STATUS = new Set([500, 502, 503, 504]);

/** Header values that are epoch seconds rather than seconds from now. */
const EPOCH_SECONDS_FLOOR = 1_000_000_000;

/**
 * When a rate limit lifts, from the answer's headers: `Retry-After` (seconds or an HTTP date),
 * else `X-RateLimit-Reset` (GitHub, epoch seconds) or `RateLimit-Reset` (GitLab: epoch
 * seconds; the IETF draft: seconds from now). Undefined when the answer does not say.
 */
export function rateLimitResetAt(headers: Headers, now: number): number | undefined {
  const retryAfter = headers.get("retry-after");
  if (retryAfter !== null && retryAfter.trim() !== "") {
    const seconds = Number(retryAfter);
    if (Number.isFinite(seconds)) return now + Math.max(0, seconds) * 1000;
    const date = Date.parse(retryAfter);
    if (Number.isFinite(date)) return Math.max(now, date);
  }
  const reset = headers.get("x-ratelimit-reset") ?? headers.get("ratelimit-reset");
  if (reset !== null && reset.trim() !== "") {
    const value = Number(reset);
    if (Number.isFinite(value)) {
      return value >= EPOCH_SECONDS_FLOOR ? Math.max(now, value * 1000) : now + value * 1000;
    }
  }
  return undefined;
}

function remainingIsZero(headers: Headers): boolean {
  const remaining = headers.get("x-ratelimit-remaining") ?? headers.get("ratelimit-remaining");
  return remaining !== null && Number(remaining) === 0;
}

/**
 * Whether an answer is a rate limit: any 429; a 403 that says so (GitHub answers its primary
 * and secondary limits with 403 and either Retry-After, X-RateLimit-Remaining: 0 or a message
 * naming the limit).
 */
async function isRateLimitAnswer(response: Response): Promise<boolean> {
  if (response.status === 429) return true;
  if (response.status !== 403) return false;
  if (response.headers.has("retry-after") || remainingIsZero(response.headers)) return true;
  const text = await response
    .clone()
    .text()
    .catch(() => "");
  return /rate limit/i.test(text);
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}

/** Counts requests in flight and queues the rest. */
class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
  }

  async acquire(): Promise<() => void> {
    if (this.active >= this.limit) {
      await new Promise<void>((resolveTurn) => this.waiting.push(resolveTurn));
    } else {
      this.active += 1;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter, so the count stays as it is.
      if (next) next();
      else this.active -= 1;
    };
  }
}

/**
 * The rate limiter and retry policy of one connection. Every request of every client of the
 * connection goes through `send`: it waits while the host has said to wait, spaces mutations at
 * the publication rate, bounds the requests in flight, and retries rate limits (after the wait
 * the host names), 5xx answers and lost connections (with exponential backoff and jitter) up to
 * `maxAttempts`. A POST is not repeated after a 5xx or a lost connection, since the host may
 * have acted on it; a rate-limit answer is repeated, since the host did not.
 */
export class RequestPolicy {
  private readonly name: string;
  private readonly mutationIntervalMs: number;
  private readonly maxAttempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly rateLimitFallbackMs: number;
  private readonly maxWaitMs: number;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly onWait: ((event: RequestWaitEvent) => void) | undefined;
  private readonly signal: AbortSignal | undefined;
  private readonly inFlight: Semaphore;
  /** Mutations are sent one at a time. */
  private readonly mutations = new Semaphore(1);
  /** No request is sent before this time: the host said to wait. */
  private pausedUntil = 0;
  /** The time the next mutation may be sent. */
  private nextMutationAt = 0;

  constructor(options: RequestPolicyOptions = {}) {
    this.name = options.name ?? "the code host";
    const perMinute = options.publishRate?.perMinute ?? DEFAULT_PUBLISH_RATE.perMinute;
    this.mutationIntervalMs = 60_000 / perMinute;
    this.maxAttempts = Math.max(1, options.maxAttempts ?? 5);
    this.baseDelayMs = options.baseDelayMs ?? 1_000;
    this.maxDelayMs = options.maxDelayMs ?? 60_000;
    this.rateLimitFallbackMs = options.rateLimitFallbackMs ?? 60_000;
    this.maxWaitMs = options.maxWaitMs ?? 15 * 60_000;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.onWait = options.onWait;
    this.signal = options.signal;
    this.inFlight = new Semaphore(Math.max(1, options.maxConcurrent ?? 4));
  }

  /** Sends a request under the policy; `send` makes one attempt and may be called again. */
  async send(request: PolicyRequest, send: () => Promise<Response>): Promise<Response> {
    const method = request.method.toUpperCase();
    for (let attempt = 1; ; attempt += 1) {
      await this.waitWhilePaused();
      const response = await this.attempt(MUTATING.has(method), send).catch(
        (error: unknown) => error,
      );
      if (!isResponse(response)) {
        const error = response;
        if (this.signal?.aborted) throw error;
        if (CodeHostError.isInstance(error)) throw error;
        if (method === "POST" || attempt >= this.maxAttempts) {
          throw new CodeHostError(
            "host_unavailable",
            `${method} ${pathOf(request.url)} on ${this.name} failed: ${errorMessage(error)}`,
            { connection: this.name },
            { cause: error },
          );
        }
        await this.wait(
          "network_error",
          method,
          request.url,
          undefined,
          attempt,
          this.backoff(attempt),
        );
        continue;
      }
      const now = this.clock.now();
      if (await isRateLimitAnswer(response)) {
        const resetAt = rateLimitResetAt(response.headers, now);
        const waitMs =
          resetAt !== undefined
            ? resetAt - now
            : Math.min(this.maxWaitMs, this.rateLimitFallbackMs * 2 ** (attempt - 1));
        const retryAt = now + waitMs;
        this.pausedUntil = Math.max(this.pausedUntil, retryAt);
        if (attempt >= this.maxAttempts || waitMs > this.maxWaitMs) {
          await response.body?.cancel().catch(() => {});
          throw new CodeHostError(
            "rate_limited",
            `${this.name} is rate limiting ${method} ${pathOf(request.url)} until ${new Date(retryAt).toISOString()} (after ${attempt} attempt${attempt === 1 ? "" : "s"}); try again then`,
            { connection: this.name, status: response.status, retryAt },
          );
        }
        await response.body?.cancel().catch(() => {});
        await this.wait("rate_limited", method, request.url, response.status, attempt, waitMs);
        continue;
      }
      if (
        RETRYABLE_STATUS.has(response.status) &&
        method !== "POST" &&
        attempt < this.maxAttempts
      ) {
        const resetAt = rateLimitResetAt(response.headers, now);
        const waitMs = resetAt !== undefined ? resetAt - now : this.backoff(attempt);
        await response.body?.cancel().catch(() => {});
        await this.wait("server_error", method, request.url, response.status, attempt, waitMs);
        continue;
      }
      // The last request of the window went through: the next one waits for the reset instead
      // of being refused.
      if (remainingIsZero(response.headers)) {
        const resetAt = rateLimitResetAt(response.headers, now);
        if (resetAt !== undefined && resetAt - now <= this.maxWaitMs) {
          this.pausedUntil = Math.max(this.pausedUntil, resetAt);
        }
      }
      return response;
    }
  }

  /**
   * One attempt. Mutations go one at a time, each sent at least the publication interval after
   * the one before (GitHub asks for mutations in series, a second apart): the spacing is between
   * sends, however long the host takes to answer. Reads only count against `maxConcurrent`.
   */
  private async attempt(mutating: boolean, send: () => Promise<Response>): Promise<Response> {
    const releaseMutation = mutating ? await this.mutations.acquire() : undefined;
    try {
      if (mutating) await this.waitForMutationSlot();
      const release = await this.inFlight.acquire();
      try {
        return await send();
      } finally {
        release();
      }
    } finally {
      releaseMutation?.();
    }
  }

  /** Exponential backoff with jitter: half the step fixed, half random, so clients spread out. */
  private backoff(attempt: number): number {
    const step = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (attempt - 1));
    return step / 2 + (this.random() * step) / 2;
  }

  private async wait(
    reason: RequestWaitReason,
    method: string,
    url: string,
    status: number | undefined,
    attempt: number,
    waitMs: number,
  ): Promise<void> {
    this.onWait?.({ reason, method, path: pathOf(url), status, attempt, waitMs });
    if (waitMs > 0) await this.clock.sleep(waitMs, this.signal);
  }

  private async waitWhilePaused(): Promise<void> {
    // A loop: another request may push the pause further while this one sleeps.
    for (;;) {
      const waitMs = this.pausedUntil - this.clock.now();
      if (waitMs <= 0) return;
      await this.clock.sleep(waitMs, this.signal);
    }
  }

  /** Called holding the mutation lock, so the interval runs from the previous send itself. */
  private async waitForMutationSlot(): Promise<void> {
    const waitMs = this.nextMutationAt - this.clock.now();
    if (waitMs > 0) await this.clock.sleep(waitMs, this.signal);
    // From when this one is sent, not when it was due: a timer that fired late must not let
    // the next mutation follow closer than the interval.
    this.nextMutationAt = this.clock.now() + this.mutationIntervalMs;
  }
}
