import type { ModelEndpoint, ModelUpstreamKind, ModelUpstreamView } from "@deckhand/wire";
import { ModelUpstreamKindSchema, WireHeader } from "@deckhand/wire";
import { z } from "zod";

/** Where one agent type's requests go. */
export interface UpstreamConfig {
  kind: ModelUpstreamKind;
  /**
   * The base URL exactly as the provider's SDK takes it: OpenAI-compatible ones include the
   * version (`https://api.openai.com/v1`), Anthropic's and Gemini's do not
   * (`https://api.anthropic.com`, `https://generativelanguage.googleapis.com`), since their SDKs
   * append `/v1/messages` and `/v1beta/models/…` themselves.
   */
  baseUrl: string;
  /** The real key. Agents never see it. */
  apiKey: string;
  /** The environment variable the key was read from, to name it where the key cannot be shown. */
  apiKeyEnv?: string;
}

export const UpstreamConfigSchema = z.strictObject({
  kind: ModelUpstreamKindSchema,
  baseUrl: z.url({ protocol: /^https?$/ }),
  apiKey: z.string().min(1),
  apiKeyEnv: z.string().min(1).optional(),
});

/** Agent-type names are path segments: keep them boring. */
export const AgentTypeSchema = z.string().regex(/^[a-z0-9][a-z0-9._-]*$/);

interface EndpointRule {
  method: string;
  pattern: RegExp;
  endpoint: ModelEndpoint;
  label: string;
}

// The optional `/v1` lets an agent whose SDK adds the version itself reach an upstream whose
// base URL already has it, and the other way round.
const ENDPOINTS: Record<ModelUpstreamKind, EndpointRule[]> = {
  openai: [
    {
      method: "POST",
      pattern: /^(?:\/v1)?\/responses$/,
      endpoint: "responses",
      label: "POST /responses",
    },
    {
      method: "POST",
      pattern: /^(?:\/v1)?\/chat\/completions$/,
      endpoint: "chat_completions",
      label: "POST /chat/completions",
    },
    {
      method: "GET",
      pattern: /^(?:\/v1)?\/models(?:\/[^/]+)?$/,
      endpoint: "models",
      label: "GET /models",
    },
  ],
  anthropic: [
    {
      method: "POST",
      pattern: /^(?:\/v1)?\/messages$/,
      endpoint: "messages",
      label: "POST /v1/messages",
    },
    {
      method: "POST",
      pattern: /^(?:\/v1)?\/messages\/count_tokens$/,
      endpoint: "count_tokens",
      label: "POST /v1/messages/count_tokens",
    },
    {
      method: "GET",
      pattern: /^(?:\/v1)?\/models(?:\/[^/]+)?$/,
      endpoint: "models",
      label: "GET /v1/models",
    },
  ],
  // Google's Generative Language API: the version is in the path the SDK sends (`v1beta` for
  // the Gemini CLI), the model and the method in its last segment.
  gemini: [
    {
      method: "POST",
      pattern: /^\/v1(?:alpha|beta)?\/models\/[^/:]+:generateContent$/,
      endpoint: "generate_content",
      label: "POST /v1beta/models/<model>:generateContent",
    },
    {
      method: "POST",
      pattern: /^\/v1(?:alpha|beta)?\/models\/[^/:]+:streamGenerateContent$/,
      endpoint: "stream_generate_content",
      label: "POST /v1beta/models/<model>:streamGenerateContent",
    },
    {
      method: "POST",
      pattern: /^\/v1(?:alpha|beta)?\/models\/[^/:]+:countTokens$/,
      endpoint: "count_tokens",
      label: "POST /v1beta/models/<model>:countTokens",
    },
    {
      method: "GET",
      pattern: /^\/v1(?:alpha|beta)?\/models(?:\/[^/:]+)?$/,
      endpoint: "models",
      label: "GET /v1beta/models",
    },
  ],
};

/** The endpoint a request is for, or undefined when the proxy does not forward it. */
export function matchEndpoint(
  kind: ModelUpstreamKind,
  method: string,
  path: string,
): ModelEndpoint | undefined {
  return ENDPOINTS[kind].find((rule) => rule.method === method && rule.pattern.test(path))
    ?.endpoint;
}

/** The endpoints an upstream kind forwards. */
export function upstreamEndpoints(kind: ModelUpstreamKind): ModelEndpoint[] {
  return [...new Set(ENDPOINTS[kind].map((rule) => rule.endpoint))];
}

/**
 * What the settings screen shows of the configured upstreams, by agent type: everything but the
 * key, which is only named by its variable.
 */
export function describeUpstreams(upstreams: Record<string, UpstreamConfig>): ModelUpstreamView[] {
  return Object.entries(upstreams)
    .sort(([left], [right]) => left.localeCompare(right))
    .map(([agentType, upstream]) => ({
      agent_type: agentType,
      kind: upstream.kind,
      base_url: upstream.baseUrl,
      endpoints: upstreamEndpoints(upstream.kind),
      api_key_env: upstream.apiKeyEnv ?? null,
      api_key_set: upstream.apiKey.length > 0,
    }));
}

/** The endpoints an upstream kind forwards, for error messages. */
export function endpointLabels(kind: ModelUpstreamKind): string[] {
  return ENDPOINTS[kind].map((rule) => rule.label);
}

/** Joins the base URL and the path the agent asked for, keeping the query string. */
export function upstreamUrl(baseUrl: string, path: string, search: string): string {
  const base = baseUrl.replace(/\/+$/, "");
  // The base already ends in the version the agent's SDK added too: do not send it twice.
  const trimmed = base.endsWith("/v1") && path.startsWith("/v1/") ? path.slice(3) : path;
  return `${base}${trimmed}${search}`;
}

/** Headers that describe one connection, not the message (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** Every hop-by-hop header of a message, including those its `Connection` header names. */
function hopByHop(headers: Headers): Set<string> {
  const names = new Set(HOP_BY_HOP);
  for (const name of (headers.get("connection") ?? "").split(",")) {
    const trimmed = name.trim().toLowerCase();
    if (trimmed) names.add(trimmed);
  }
  return names;
}

const AGENT_CREDENTIAL_HEADERS = new Set([
  WireHeader.authorization.toLowerCase(),
  "x-api-key",
  "x-goog-api-key",
  "api-key",
  "cookie",
]);
const DECKHAND_HEADERS = new Set(Object.values(WireHeader).map((name) => name.toLowerCase()));

/**
 * The headers sent upstream: the agent's own, minus hop-by-hop headers, its credentials,
 * Deckhand's headers and anything else carrying the scoped token; plus the upstream key in the
 * form its provider expects (`Authorization: Bearer`, Anthropic's `x-api-key`, Google's
 * `x-goog-api-key`). `anthropic-version` and `anthropic-beta` pass through untouched.
 */
export function upstreamRequestHeaders(
  incoming: Headers,
  upstream: UpstreamConfig,
  scopedToken: string,
): Headers {
  const dropped = hopByHop(incoming);
  const headers = new Headers();
  for (const [name, value] of incoming) {
    if (dropped.has(name) || AGENT_CREDENTIAL_HEADERS.has(name) || DECKHAND_HEADERS.has(name)) {
      continue;
    }
    // Host and length belong to the new request; the encoding is what fetch decodes for us.
    if (name === "host" || name === "content-length" || name === "accept-encoding") continue;
    if (name === "expect") continue;
    if (value.includes(scopedToken)) continue;
    headers.set(name, value);
  }
  if (upstream.kind === "anthropic") {
    headers.set("x-api-key", upstream.apiKey);
  } else if (upstream.kind === "gemini") {
    headers.set("x-goog-api-key", upstream.apiKey);
  } else {
    headers.set(WireHeader.authorization, `Bearer ${upstream.apiKey}`);
  }
  return headers;
}

/**
 * The upstream's response headers for the agent. Length and encoding are dropped because
 * fetch has already decoded the body and the proxy re-frames it.
 */
export function agentResponseHeaders(upstream: Headers, secrets: readonly string[]): Headers {
  const dropped = hopByHop(upstream);
  const headers = new Headers();
  for (const [name, value] of upstream) {
    if (dropped.has(name) || name === "content-length" || name === "content-encoding") continue;
    if (name === "set-cookie") continue;
    if (secrets.some((secret) => value.includes(secret))) continue;
    headers.append(name, value);
  }
  return headers;
}

/**
 * Drops the `key` query parameter (Google's API-key parameter, which an agent may use for the
 * scoped token; the upstream key goes in a header) and any other parameter carrying the token.
 */
export function scrubSearch(search: string, scopedToken: string): string {
  const parameters = new URLSearchParams(search);
  if (!search.includes(scopedToken) && !parameters.has("key")) return search;
  for (const [name, value] of [...parameters]) {
    if (name === "key" || value.includes(scopedToken) || name.includes(scopedToken)) {
      parameters.delete(name);
    }
  }
  const rest = parameters.toString();
  return rest ? `?${rest}` : "";
}
