import { z } from "zod";
import { ModelEndpointSchema, ModelUpstreamKindSchema } from "./model-proxy.ts";
import { UsageRowSchema, UsageTotalsSchema } from "./server-api.ts";

/**
 * Read-only views of the server's configuration for the settings screen: model upstreams, code
 * host connections and usage per session. Secrets never appear: a key or token is named by the
 * environment variable holding it, with whether it is set.
 */

/** One agent type's model upstream (`modelUpstreams` of config.json). */
export const ModelUpstreamViewSchema = z.object({
  /** The agent type it serves: agents reach it at `/model-provider/<agent_type>`. */
  agent_type: z.string(),
  /** The wire format it speaks: `openai` (Responses, Chat Completions) or `anthropic` (Messages). */
  kind: ModelUpstreamKindSchema,
  base_url: z.string(),
  /** The endpoints the proxy forwards to it, e.g. `POST /responses`. */
  endpoints: z.array(ModelEndpointSchema),
  /** The environment variable the key is read from; null when the server was given the key directly. */
  api_key_env: z.string().nullable(),
  /** Whether the server holds a key for it (never the key). */
  api_key_set: z.boolean(),
});
export type ModelUpstreamView = z.infer<typeof ModelUpstreamViewSchema>;

/** `GET /api/model-upstreams`. */
export const ModelUpstreamListSchema = z.object({
  model_upstreams: z.array(ModelUpstreamViewSchema),
});
export type ModelUpstreamList = z.infer<typeof ModelUpstreamListSchema>;

/** One code host changesets are published to (`codeHostConnections` of config.json). */
export const CodeHostConnectionViewSchema = z.object({
  /** Its name in messages: the configured `name`, else the host of its URL. */
  name: z.string(),
  /** `github`, `gitlab`, `bitbucket-cloud` or `gitea`. */
  type: z.string(),
  url: z.string(),
  api_url: z.string(),
  /** The environment variable the token is read from at each request. */
  token_env: z.string(),
  /** Whether that variable is set now (never its value). */
  token_set: z.boolean(),
  /** Mutating requests (create, update, comment, close, merge) per minute. */
  publish_rate_per_minute: z.number().positive(),
});
export type CodeHostConnectionView = z.infer<typeof CodeHostConnectionViewSchema>;

/** `GET /api/code-host-connections`. */
export const CodeHostConnectionListSchema = z.object({
  code_host_connections: z.array(CodeHostConnectionViewSchema),
});
export type CodeHostConnectionList = z.infer<typeof CodeHostConnectionListSchema>;

/** `GET /api/sessions/:session_id/usage`: every agent of the session, each under its own job. */
export const SessionUsageResponseSchema = z.object({
  session_id: z.string(),
  /** One entry per agent the session ran (a chat's own agent counts separately), oldest first. */
  jobs: z.array(
    z.object({
      job_id: z.string(),
      agent: z.string(),
      chat_id: z.string().nullable(),
      totals: UsageTotalsSchema,
    }),
  ),
  usage: z.array(UsageRowSchema),
  totals: UsageTotalsSchema,
});
export type SessionUsageResponse = z.infer<typeof SessionUsageResponseSchema>;
