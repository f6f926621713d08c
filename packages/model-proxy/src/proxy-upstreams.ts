import type { ModelEndpoint } from "@deckhand/wire";
import { WirePath } from "@deckhand/wire";
import { ModelProxyError } from "./model-proxy-error.ts";
import {
  AgentTypeSchema,
  endpointLabels,
  matchEndpoint,
  type UpstreamConfig,
  UpstreamConfigSchema,
} from "./upstreams.ts";

/** Where one request goes: its agent type's upstream and the endpoint it asks for. */
export interface UpstreamRoute {
  agentType: string;
  upstream: UpstreamConfig;
  endpoint: ModelEndpoint;
  /** The path after `<proxy>/<agent-type>`, as the upstream gets it. */
  restPath: string;
  /** The upstream's base URL without trailing slashes (never its key), as usage names it. */
  upstreamName: string;
}

/**
 * The proxy's upstreams by agent type, checked once when the proxy is made (a bad agent type or
 * upstream refuses to start it, naming fields, never the key), and the routing of a request to
 * its upstream's endpoint.
 */
export class ProxyUpstreams {
  /** The real API keys: redacted from everything the proxy answers or logs. */
  readonly keys: readonly string[];
  /** The configured agent types, for errors that name them. */
  readonly configuredTypes: string;
  readonly #upstreams = new Map<string, UpstreamConfig>();

  constructor(upstreams: Record<string, UpstreamConfig>) {
    for (const [agentType, config] of Object.entries(upstreams)) {
      if (!AgentTypeSchema.safeParse(agentType).success) {
        throw new ModelProxyError(
          "invalid_request",
          `agent type "${agentType}" is not a valid path segment; use lower-case letters, digits, ".", "_" and "-"`,
        );
      }
      const parsed = UpstreamConfigSchema.safeParse(config);
      if (!parsed.success) {
        // The issues could quote the key; name only the fields.
        const fields = parsed.error.issues.map((issue) => issue.path.join(".")).join(", ");
        throw new ModelProxyError(
          "invalid_request",
          `the upstream for agent type "${agentType}" is invalid (${fields}); give kind "openai", "anthropic" or "gemini", an http(s) baseUrl and a non-empty apiKey`,
        );
      }
      this.#upstreams.set(agentType, parsed.data);
    }
    this.keys = [...this.#upstreams.values()].map((upstream) => upstream.apiKey);
    this.configuredTypes = [...this.#upstreams.keys()].sort().join(", ") || "none";
  }

  /** The upstream endpoint `method` on `url` asks for; a not_found error naming what there is. */
  route(agentType: string, method: string, url: URL): UpstreamRoute {
    const upstream = this.#upstreams.get(agentType);
    if (!upstream) {
      throw new ModelProxyError(
        "not_found",
        `no upstream is configured for agent type "${agentType}"; configured agent types: ${this.configuredTypes}`,
      );
    }
    const prefix = `${WirePath.modelProvider}/${agentType}`;
    const restPath = url.pathname.startsWith(prefix) ? url.pathname.slice(prefix.length) : "";
    const endpoint = matchEndpoint(upstream.kind, method, restPath);
    if (!endpoint) {
      throw new ModelProxyError(
        "not_found",
        `agent type "${agentType}" forwards only ${endpointLabels(upstream.kind).join(", ")}; ${method} ${restPath || "/"} is not one of them`,
      );
    }
    const upstreamName = upstream.baseUrl.replace(/\/+$/, "");
    return { agentType, upstream, endpoint, restPath, upstreamName };
  }
}
