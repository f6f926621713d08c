import type {
  ModelEndpoint,
  ModelUpstreamKind,
  ModelUsageOutcome,
  SessionUsageResponse,
  UsageResponse,
  UsageRow,
  UsageTotals,
} from "@deckhand/wire";

/** One forwarded request, attributed to the job its token was minted for. */
export interface ModelUsageEntry {
  jobId: string;
  agentType: string;
  /** The upstream's base URL (never its key). */
  upstream: string;
  upstreamKind: ModelUpstreamKind;
  endpoint: ModelEndpoint;
  model?: string;
  /** Token counts from the provider's own usage report; absent when it sent none. */
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  requestBytes: number;
  responseBytes: number;
  /** The HTTP status the agent received. */
  status: number;
  outcome: ModelUsageOutcome;
}

/** Where usage goes. The server backs it with the `model_usage` table. */
export interface UsageRecorder {
  record(entry: ModelUsageEntry): Promise<void>;
}

export class InMemoryUsageRecorder implements UsageRecorder {
  readonly entries: ModelUsageEntry[] = [];
  readonly #waiters: (() => void)[] = [];

  async record(entry: ModelUsageEntry): Promise<void> {
    this.entries.push({ ...entry });
    for (const wake of this.#waiters.splice(0)) wake();
  }

  /** Resolves once `count` entries have been recorded (usage is recorded after the response). */
  async waitFor(count: number, timeoutMs = 5000): Promise<ModelUsageEntry[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.entries.length < count) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new Error(`expected ${count} usage entries, got ${this.entries.length}`);
      }
      await new Promise<void>((resolveWait) => {
        const timer = setTimeout(resolveWait, remaining);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolveWait();
        });
      });
    }
    return this.entries;
  }
}

/** Token counts gathered from a response so far. */
export interface TokenCounts {
  model?: string;
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
}

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const count = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : undefined;

/**
 * Reads usage from any of the wire formats. Responses puts it at `response.usage`
 * (`input_tokens`/`output_tokens`/`total_tokens`), Chat Completions at `usage`
 * (`prompt_tokens`/`completion_tokens`), Anthropic at `message.usage` (`message_start`) and
 * `usage` (`message_delta`, cumulative), Gemini at `usageMetadata` of every streamed chunk
 * (cumulative). Later reports override earlier ones field by field.
 */
export class UsageAccumulator {
  readonly counts: TokenCounts = {};

  /** Takes one parsed JSON value: an SSE event's data or a whole non-streaming body. */
  observe(value: unknown): void {
    if (!isObject(value)) return;
    const container = isObject(value.response)
      ? value.response
      : isObject(value.message)
        ? value.message
        : value;
    if (typeof container.model === "string") this.counts.model = container.model;
    else if (typeof value.model === "string") this.counts.model = value.model;
    if (isObject(container.usage)) this.#usage(container.usage);
    if (container !== value && isObject(value.usage)) this.#usage(value.usage);
    if (isObject(value.usageMetadata)) this.#usageMetadata(value.usageMetadata);
    if (typeof value.modelVersion === "string") this.counts.model = value.modelVersion;
  }

  /**
   * Gemini's `usageMetadata`: `promptTokenCount` includes the cached part
   * (`cachedContentTokenCount`); the output is the answer (`candidatesTokenCount`) plus the
   * thinking (`thoughtsTokenCount`), both billed as output.
   */
  #usageMetadata(usage: JsonObject): void {
    const input = count(usage.promptTokenCount);
    const candidates = count(usage.candidatesTokenCount);
    const thoughts = count(usage.thoughtsTokenCount);
    if (input !== undefined) this.counts.inputTokens = input;
    if (candidates !== undefined || thoughts !== undefined) {
      this.counts.outputTokens = (candidates ?? 0) + (thoughts ?? 0);
    }
    const total = count(usage.totalTokenCount);
    if (total !== undefined) this.counts.totalTokens = total;
  }

  #usage(usage: JsonObject): void {
    // Anthropic reports cached input apart from `input_tokens`; all of it was input.
    const cached =
      (count(usage.cache_creation_input_tokens) ?? 0) + (count(usage.cache_read_input_tokens) ?? 0);
    const input = count(usage.input_tokens) ?? count(usage.prompt_tokens);
    const output = count(usage.output_tokens) ?? count(usage.completion_tokens);
    if (input !== undefined) this.counts.inputTokens = input + cached;
    if (output !== undefined) this.counts.outputTokens = output;
    const total = count(usage.total_tokens);
    if (total !== undefined) this.counts.totalTokens = total;
    else if (this.counts.inputTokens !== undefined && this.counts.outputTokens !== undefined) {
      this.counts.totalTokens = this.counts.inputTokens + this.counts.outputTokens;
    }
  }
}

/** A stored usage row as the usage routes read it back (the `model_usage` table's shape). */
export interface StoredModelUsage {
  jobId: string;
  agentType: string;
  upstream: string;
  upstreamKind: ModelUpstreamKind;
  endpoint: ModelEndpoint;
  model: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  totalTokens: number | null;
  requestBytes: number;
  responseBytes: number;
  status: number;
  outcome: ModelUsageOutcome;
  createdAt: Date;
}

/** A stored row in the API's shape. */
export function usageRow(row: StoredModelUsage): UsageRow {
  return {
    job_id: row.jobId,
    agent_type: row.agentType,
    upstream: row.upstream,
    upstream_kind: row.upstreamKind,
    endpoint: row.endpoint,
    model: row.model,
    input_tokens: row.inputTokens,
    output_tokens: row.outputTokens,
    total_tokens: row.totalTokens,
    request_bytes: row.requestBytes,
    response_bytes: row.responseBytes,
    status: row.status,
    outcome: row.outcome,
    created_at: row.createdAt.toISOString(),
  };
}

/** Sums of rows; a count the provider did not report adds nothing. */
export function usageTotals(rows: readonly StoredModelUsage[]): UsageTotals {
  const sum = (pick: (row: StoredModelUsage) => number | null) =>
    rows.reduce((total, row) => total + (pick(row) ?? 0), 0);
  return {
    requests: rows.length,
    input_tokens: sum((row) => row.inputTokens),
    output_tokens: sum((row) => row.outputTokens),
    total_tokens: sum((row) => row.totalTokens),
    request_bytes: sum((row) => row.requestBytes),
    response_bytes: sum((row) => row.responseBytes),
  };
}

/** `GET /api/usage?job_id=`: one job's rows and their totals. */
export function jobUsageReport(jobId: string, rows: readonly StoredModelUsage[]): UsageResponse {
  return { job_id: jobId, usage: rows.map(usageRow), totals: usageTotals(rows) };
}

/** One job of a session: the agent it ran and, for a chat's own agent, the chat. */
export interface SessionUsageJob {
  jobId: string;
  agent: string;
  chatId: string | null;
}

/**
 * `GET /api/sessions/:id/usage`: each of the session's jobs with its totals, and every row of
 * them in time order with the totals of all.
 */
export function sessionUsageReport(
  sessionId: string,
  jobs: readonly SessionUsageJob[],
  rows: readonly StoredModelUsage[],
): SessionUsageResponse {
  const ordered = [...rows].sort(
    (left, right) => left.createdAt.getTime() - right.createdAt.getTime(),
  );
  return {
    session_id: sessionId,
    jobs: jobs.map((job) => ({
      job_id: job.jobId,
      agent: job.agent,
      chat_id: job.chatId,
      totals: usageTotals(ordered.filter((row) => row.jobId === job.jobId)),
    })),
    usage: ordered.map(usageRow),
    totals: usageTotals(ordered),
  };
}
