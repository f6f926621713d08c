import { MODEL_TOKEN_PREFIX, WireHeader } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import {
  agentResponseHeaders,
  describeUpstreams,
  matchEndpoint,
  scrubSearch,
  upstreamRequestHeaders,
  upstreamUrl,
} from "./upstreams.ts";

const token = `${MODEL_TOKEN_PREFIX}${"t".repeat(43)}`;

describe("upstream requests", () => {
  it("drops hop-by-hop headers, those Connection names, the agent's credentials and Deckhand's headers", () => {
    const incoming = new Headers({
      connection: "keep-alive, x-hop",
      "keep-alive": "timeout=5",
      "x-hop": "per-connection",
      te: "trailers",
      host: "proxy.local",
      "content-length": "12",
      "x-api-key": token,
      "x-custom": "kept",
      "x-smuggled": `token=${token}`,
      "anthropic-version": "2023-06-01",
    });
    incoming.set(WireHeader.authorization, `Bearer ${token}`);
    incoming.set(WireHeader.jobId, "job-1");
    incoming.set(WireHeader.chatId, "chat-1");
    const sent = upstreamRequestHeaders(
      incoming,
      { kind: "anthropic", baseUrl: "http://x", apiKey: "sk-ant-real" },
      token,
    );
    expect(Object.fromEntries(sent)).toEqual({
      "anthropic-version": "2023-06-01",
      "x-custom": "kept",
      "x-api-key": "sk-ant-real",
    });
  });

  it("sends an OpenAI-compatible upstream its key as a bearer token", () => {
    const sent = upstreamRequestHeaders(
      new Headers({ "x-api-key": token }),
      { kind: "openai", baseUrl: "http://x", apiKey: "sk-real" },
      token,
    );
    expect(sent.get(WireHeader.authorization)).toBe("Bearer sk-real");
    expect(sent.get("x-api-key")).toBeNull();
  });

  it("drops hop-by-hop, length and encoding headers from the upstream's answer", () => {
    const answer = agentResponseHeaders(
      new Headers({
        connection: "close",
        "transfer-encoding": "chunked",
        "content-length": "10",
        "content-encoding": "gzip",
        "content-type": "text/event-stream",
        "x-request-id": "req_1",
      }),
      [],
    );
    expect(Object.fromEntries(answer)).toEqual({
      "content-type": "text/event-stream",
      "x-request-id": "req_1",
    });
  });

  it("forwards only the endpoints of the upstream's kind", () => {
    expect(matchEndpoint("openai", "POST", "/responses")).toBe("responses");
    expect(matchEndpoint("openai", "POST", "/v1/chat/completions")).toBe("chat_completions");
    expect(matchEndpoint("openai", "GET", "/models/gpt-5")).toBe("models");
    expect(matchEndpoint("openai", "POST", "/messages")).toBeUndefined();
    expect(matchEndpoint("openai", "GET", "/responses")).toBeUndefined();
    expect(matchEndpoint("anthropic", "POST", "/v1/messages")).toBe("messages");
    expect(matchEndpoint("anthropic", "POST", "/v1/messages/count_tokens")).toBe("count_tokens");
    expect(matchEndpoint("anthropic", "POST", "/v1/files")).toBeUndefined();
  });

  it("joins base URL and path without doubling the version", () => {
    expect(upstreamUrl("https://api.openai.com/v1/", "/responses", "")).toBe(
      "https://api.openai.com/v1/responses",
    );
    expect(upstreamUrl("https://api.anthropic.com/v1", "/v1/messages", "?beta=true")).toBe(
      "https://api.anthropic.com/v1/messages?beta=true",
    );
  });

  it("drops query parameters that carry the scoped token", () => {
    expect(scrubSearch(`?key=${token}&beta=true`, token)).toBe("?beta=true");
    expect(scrubSearch(`?key=${token}`, token)).toBe("");
    expect(scrubSearch("?beta=true", token)).toBe("?beta=true");
  });
});

describe("describeUpstreams", () => {
  it("lists each agent type's upstream with its endpoints and key variable, never the key", () => {
    const key = "sk-describe-canary-0123456789";
    const described = describeUpstreams({
      codex: { kind: "openai", baseUrl: "https://a.example.com/v1", apiKey: key, apiKeyEnv: "A" },
      claude: { kind: "anthropic", baseUrl: "https://b.example.com", apiKey: key },
    });
    expect(described).toEqual([
      {
        agent_type: "claude",
        kind: "anthropic",
        base_url: "https://b.example.com",
        endpoints: ["messages", "count_tokens", "models"],
        api_key_env: null,
        api_key_set: true,
      },
      {
        agent_type: "codex",
        kind: "openai",
        base_url: "https://a.example.com/v1",
        endpoints: ["responses", "chat_completions", "models"],
        api_key_env: "A",
        api_key_set: true,
      },
    ]);
    expect(JSON.stringify(described)).not.toContain(key);
  });
});
