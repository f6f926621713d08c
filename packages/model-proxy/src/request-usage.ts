import type { ModelUsageOutcome } from "@deckhand/wire";
import { describeError, type ModelProxyLogger } from "./logger.ts";
import type { ModelTokenRecord } from "./model-token.ts";
import type { UpstreamRoute } from "./proxy-upstreams.ts";
import { UsageAccumulator, type UsageRecorder } from "./usage.ts";

export interface RequestUsageOptions {
  recorder: UsageRecorder;
  logger: ModelProxyLogger;
  now: () => number;
  /** When the proxy received the request. */
  started: number;
  record: ModelTokenRecord;
  route: UpstreamRoute;
  requestBytes: number;
  /** Runs once, as the request ends, before its usage is logged and recorded. */
  onEnd: () => void;
}

/**
 * The usage of one forwarded request, attributed to its token's job: the token counts read from
 * the answer as it streams by (`counts`), then one log line and one recorded entry as it ends,
 * however it ends.
 */
export class RequestUsage {
  readonly counts = new UsageAccumulator();
  readonly #options: RequestUsageOptions;
  #recorded = false;

  constructor(options: RequestUsageOptions) {
    this.#options = options;
  }

  async finish(status: number, outcome: ModelUsageOutcome, responseBytes: number): Promise<void> {
    if (this.#recorded) return;
    this.#recorded = true;
    const { record, route, logger } = this.#options;
    this.#options.onEnd();
    const usage = this.counts.counts;
    const entry = {
      jobId: record.jobId,
      agentType: route.agentType,
      upstream: route.upstreamName,
      upstreamKind: route.upstream.kind,
      endpoint: route.endpoint,
      ...(usage.model === undefined ? {} : { model: usage.model }),
      ...(usage.inputTokens === undefined ? {} : { inputTokens: usage.inputTokens }),
      ...(usage.outputTokens === undefined ? {} : { outputTokens: usage.outputTokens }),
      ...(usage.totalTokens === undefined ? {} : { totalTokens: usage.totalTokens }),
      requestBytes: this.#options.requestBytes,
      responseBytes,
      status,
      outcome,
    };
    const fields = {
      ...entry,
      tokenId: record.id,
      durationMs: this.#options.now() - this.#options.started,
    };
    if (outcome === "completed" && status < 400) logger.info("model-provider request", fields);
    else logger.warn("model-provider request did not complete", fields);
    try {
      await this.#options.recorder.record(entry);
    } catch (error) {
      logger.error("recording model usage failed", { error: describeError(error) });
    }
  }
}
