import { z } from "zod";
import { ErrorCodeSchema } from "./errors.ts";

/**
 * Model-provider proxy contracts. Scoped tokens start with this prefix so secret scanners (and
 * Deckhand's own redaction) can recognise one without knowing its value.
 */
export const MODEL_TOKEN_PREFIX = "dhmp_";

/** A scoped token: the prefix then 32 random bytes in base64url (43 characters, no padding). */
export const ModelTokenPattern = /dhmp_[A-Za-z0-9_-]{43}/;

/** The error codes only the model-provider proxy answers with (a subset of `ErrorCodeSchema`). */
export const ModelProxyErrorCodeSchema = ErrorCodeSchema.extract([
  "rate_limited",
  "upstream_unavailable",
  "budget_exceeded",
]);
export type ModelProxyErrorCode = z.infer<typeof ModelProxyErrorCodeSchema>;

/**
 * The wire protocol an upstream speaks: OpenAI-compatible (Responses, Chat Completions),
 * Anthropic Messages, or Google's Generative Language API (Gemini).
 */
export const ModelUpstreamKindSchema = z.enum(["openai", "anthropic", "gemini"]);
export type ModelUpstreamKind = z.infer<typeof ModelUpstreamKindSchema>;

/** The upstream endpoints the proxy forwards; every other path is refused. */
export const ModelEndpointSchema = z.enum([
  "responses",
  "chat_completions",
  "messages",
  "count_tokens",
  "models",
  /** Gemini `POST /v1beta/models/{model}:generateContent`. */
  "generate_content",
  /** Gemini `POST /v1beta/models/{model}:streamGenerateContent` (SSE with `?alt=sse`). */
  "stream_generate_content",
]);
export type ModelEndpoint = z.infer<typeof ModelEndpointSchema>;

/** How a forwarded request ended. */
export const ModelUsageOutcomeSchema = z.enum([
  /** The upstream answered and the whole answer reached the agent. */
  "completed",
  /** The agent went away before the answer ended; the upstream request was aborted. */
  "client_aborted",
  /** The upstream's answer broke off mid-way. */
  "upstream_aborted",
  /** The upstream could not be reached at all. */
  "upstream_unavailable",
]);
export type ModelUsageOutcome = z.infer<typeof ModelUsageOutcomeSchema>;

/** One forwarded request's usage, as the server API returns it. */
export const ModelUsageSchema = z.object({
  job_id: z.string(),
  agent_type: z.string(),
  upstream: z.string(),
  upstream_kind: ModelUpstreamKindSchema,
  endpoint: ModelEndpointSchema,
  model: z.string().nullable(),
  input_tokens: z.number().int().nonnegative().nullable(),
  output_tokens: z.number().int().nonnegative().nullable(),
  total_tokens: z.number().int().nonnegative().nullable(),
  request_bytes: z.number().int().nonnegative(),
  response_bytes: z.number().int().nonnegative(),
  status: z.number().int(),
  outcome: ModelUsageOutcomeSchema,
});
export type ModelUsage = z.infer<typeof ModelUsageSchema>;
