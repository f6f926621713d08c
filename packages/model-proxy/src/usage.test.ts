import { SseParser } from "@deckhand/sse";
import { anthropicMessagesStream, chatCompletionsStream, responsesStream } from "@deckhand/testkit";
import { describe, expect, it } from "vitest";
import {
  type StoredModelUsage,
  sessionUsageReport,
  UsageAccumulator,
  usageTotals,
} from "./usage.ts";

function countsOf(chunks: string[]) {
  const parser = new SseParser();
  const accumulator = new UsageAccumulator();
  for (const event of [...chunks.flatMap((chunk) => parser.push(chunk)), ...parser.end()]) {
    try {
      accumulator.observe(JSON.parse(event.data));
    } catch {
      // [DONE]
    }
  }
  return accumulator.counts;
}

describe("UsageAccumulator", () => {
  it("reads Responses usage from response.completed", () => {
    expect(countsOf(responsesStream("a b", { input: 10, output: 4 }, "gpt-5"))).toEqual({
      model: "gpt-5",
      inputTokens: 10,
      outputTokens: 4,
      totalTokens: 14,
    });
  });

  it("reads Chat Completions usage from the final chunk", () => {
    expect(countsOf(chatCompletionsStream("a b", { input: 3, output: 2 }, "gpt-4o"))).toEqual({
      model: "gpt-4o",
      inputTokens: 3,
      outputTokens: 2,
      totalTokens: 5,
    });
  });

  it("reads Anthropic usage from message_start and the cumulative message_delta", () => {
    expect(countsOf(anthropicMessagesStream("a b", { input: 20, output: 9 }, "claude"))).toEqual({
      model: "claude",
      inputTokens: 20,
      outputTokens: 9,
      totalTokens: 29,
    });
  });

  it("counts Anthropic cached input as input", () => {
    const accumulator = new UsageAccumulator();
    accumulator.observe({
      type: "message",
      model: "claude",
      usage: {
        input_tokens: 5,
        cache_read_input_tokens: 100,
        cache_creation_input_tokens: 10,
        output_tokens: 3,
      },
    });
    expect(accumulator.counts).toEqual({
      model: "claude",
      inputTokens: 115,
      outputTokens: 3,
      totalTokens: 118,
    });
  });

  it("reads non-streaming bodies of each format and ignores events without usage", () => {
    const accumulator = new UsageAccumulator();
    accumulator.observe({ type: "response.output_text.delta", delta: "x" });
    accumulator.observe(null);
    expect(accumulator.counts).toEqual({});
    accumulator.observe({
      object: "chat.completion",
      model: "m",
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    });
    expect(accumulator.counts).toEqual({
      model: "m",
      inputTokens: 1,
      outputTokens: 2,
      totalTokens: 3,
    });
  });
});

describe("usage reports", () => {
  const row = (
    jobId: string,
    minute: number,
    tokens: [number, number] | null,
  ): StoredModelUsage => ({
    jobId,
    agentType: "codex",
    upstream: "https://models.example.com/v1",
    upstreamKind: "openai",
    endpoint: "responses",
    model: "gpt-5",
    inputTokens: tokens?.[0] ?? null,
    outputTokens: tokens?.[1] ?? null,
    totalTokens: tokens ? tokens[0] + tokens[1] : null,
    requestBytes: 100,
    responseBytes: 1_000,
    status: tokens ? 200 : 503,
    outcome: tokens ? "completed" : "upstream_unavailable",
    createdAt: new Date(Date.UTC(2026, 0, 1, 0, minute)),
  });

  it("sums a session's rows per job and in all, in time order, missing counts adding nothing", () => {
    const rows = [row("job-b", 3, [5, 1]), row("job-a", 1, [10, 2]), row("job-a", 2, null)];
    const report = sessionUsageReport(
      "session-1",
      [
        { jobId: "job-a", agent: "codex", chatId: "chat-1" },
        { jobId: "job-b", agent: "claude", chatId: null },
        { jobId: "job-c", agent: "deckhand", chatId: null },
      ],
      rows,
    );
    expect(
      report.jobs.map((job) => [job.job_id, job.totals.requests, job.totals.total_tokens]),
    ).toEqual([
      ["job-a", 2, 12],
      ["job-b", 1, 6],
      ["job-c", 0, 0],
    ]);
    expect(report.usage.map((entry) => entry.created_at)).toEqual([
      "2026-01-01T00:01:00.000Z",
      "2026-01-01T00:02:00.000Z",
      "2026-01-01T00:03:00.000Z",
    ]);
    expect(report.totals).toEqual(usageTotals(rows));
    expect(report.totals).toEqual({
      requests: 3,
      input_tokens: 15,
      output_tokens: 3,
      total_tokens: 18,
      request_bytes: 300,
      response_bytes: 3_000,
    });
  });
});
