import { ModelUpstreamKindSchema, WireEnv, WireHeader } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { BUILTIN_PROVIDERS, type ModelProxyContext, type ModelProxyLaunch } from "./registry.ts";

const context: ModelProxyContext = {
  proxyUrl: "http://127.0.0.1:7420/model-provider/some-type",
  token: "dhmp_secret-token",
  jobId: "agent-session:1234",
};

/** What the agent would send to the proxy, worked out from its launch the way the agent reads it. */
interface Sent {
  baseUrl: string;
  authorization: string | undefined;
  jobId: string | undefined;
}

/** `Name: value` lines (Claude Code) or `Name=value` pairs separated by commas (goose). */
function headerList(text: string | undefined, separator: RegExp, assign: string) {
  const headers = new Map<string, string>();
  for (const item of (text ?? "").split(separator)) {
    const at = item.indexOf(assign);
    if (at > 0) headers.set(item.slice(0, at).trim().toLowerCase(), item.slice(at + 1).trim());
  }
  return headers;
}

/** codex's `-c key=value` overrides, values as TOML (JSON-compatible strings and inline tables). */
function codexOverrides(args: readonly string[]): Map<string, string> {
  const overrides = new Map<string, string>();
  for (let index = 0; index < args.length; index += 2) {
    expect(args[index]).toBe("-c");
    const pair = args[index + 1]!;
    const at = pair.indexOf("=");
    overrides.set(pair.slice(0, at), pair.slice(at + 1));
  }
  return overrides;
}

const bearer = `Bearer ${context.token}`;

/**
 * Every built-in, with how it reaches the proxy or null when it keeps its own login. Listing
 * them all is the point: a new built-in fails the first test until its wiring is checked here.
 */
const expectedWiring: Record<
  string,
  null | {
    agentType: string;
    protocol: "openai" | "anthropic";
    unset: string[];
    sent(launch: ModelProxyLaunch): Sent;
  }
> = {
  deckhand: null,
  codex: {
    agentType: "codex",
    protocol: "openai",
    unset: ["OPENAI_API_KEY"],
    sent({ args, env }) {
      const overrides = codexOverrides(args);
      const provider = JSON.parse(overrides.get("model_provider")!) as string;
      const key = (name: string) => overrides.get(`model_providers.${provider}.${name}`);
      const tokenVariable = JSON.parse(key("env_key")!) as string;
      const headers = key("env_http_headers")!;
      const match = /^\{"([^"]+)"="([^"]+)"\}$/.exec(headers);
      expect(match, headers).not.toBeNull();
      return {
        baseUrl: JSON.parse(key("base_url")!),
        authorization: env[tokenVariable] ? `Bearer ${env[tokenVariable]}` : undefined,
        jobId:
          match![1]!.toLowerCase() === WireHeader.jobId.toLowerCase() ? env[match![2]!] : undefined,
      };
    },
  },
  claude: {
    agentType: "claude-code",
    protocol: "anthropic",
    unset: ["ANTHROPIC_API_KEY"],
    sent({ env }) {
      const headers = headerList(env.ANTHROPIC_CUSTOM_HEADERS, /\n/, ":");
      return {
        baseUrl: env.ANTHROPIC_BASE_URL!,
        authorization: env.ANTHROPIC_AUTH_TOKEN ? `Bearer ${env.ANTHROPIC_AUTH_TOKEN}` : undefined,
        jobId: headers.get(WireHeader.jobId.toLowerCase()),
      };
    },
  },
  gemini: null,
  opencode: {
    agentType: "opencode",
    protocol: "openai",
    unset: [],
    sent({ env }) {
      const config = JSON.parse(env.OPENCODE_CONFIG_CONTENT!);
      const providers = Object.values(config.provider) as {
        npm: string;
        options: { baseURL: string; apiKey: string; headers: Record<string, string> };
      }[];
      expect(providers).toHaveLength(1);
      const { npm, options } = providers[0]!;
      expect(npm).toBe("@ai-sdk/openai-compatible");
      // opencode substitutes `{env:NAME}` when it loads the config.
      const substitute = (value: string | undefined) =>
        value?.replace(/\{env:([A-Z_]+)\}/g, (_, name: string) => env[name] ?? "");
      const headers = new Map(
        Object.entries(options.headers).map(([name, value]) => [name.toLowerCase(), value]),
      );
      return {
        baseUrl: options.baseURL,
        authorization: `Bearer ${substitute(options.apiKey)}`,
        jobId: substitute(headers.get(WireHeader.jobId.toLowerCase())),
      };
    },
  },
  goose: {
    agentType: "goose",
    protocol: "openai",
    unset: [],
    sent({ env }) {
      expect(env.GOOSE_PROVIDER).toBe("openai");
      const headers = headerList(env.OPENAI_CUSTOM_HEADERS, /,/, "=");
      const url = `${env.OPENAI_HOST}/${env.OPENAI_BASE_PATH}`;
      // goose posts to host + base path as given: the chat completions route under the proxy.
      expect(url).toBe(`${context.proxyUrl}/v1/chat/completions`);
      return {
        baseUrl: url.replace(/\/v1\/chat\/completions$/, ""),
        authorization: env.OPENAI_API_KEY ? `Bearer ${env.OPENAI_API_KEY}` : undefined,
        jobId: headers.get(WireHeader.jobId.toLowerCase()),
      };
    },
  },
  qwen: null,
};

describe("the built-ins' model-proxy wiring", () => {
  it("is checked below for every built-in", () => {
    expect(Object.keys(expectedWiring)).toEqual(BUILTIN_PROVIDERS.map((provider) => provider.id));
  });

  for (const provider of BUILTIN_PROVIDERS) {
    const expected = expectedWiring[provider.id];
    if (expected === null || expected === undefined) {
      it(`leaves ${provider.id} on its own login`, () => {
        expect(provider.modelProxy).toBeNull();
      });
      continue;
    }
    it(`points ${provider.id} at the proxy with its token and the job id header`, () => {
      const proxy = provider.modelProxy!;
      expect(proxy).not.toBeNull();
      expect(proxy.agentType).toBe(expected.agentType);
      expect(proxy.protocol).toBe(expected.protocol);
      expect(ModelUpstreamKindSchema.options).toContain(proxy.protocol);
      const launch = proxy.configure(context);
      expect(expected.sent(launch)).toEqual({
        baseUrl: context.proxyUrl,
        authorization: bearer,
        jobId: context.jobId,
      });
      // Both also travel in Deckhand's own variables, for launchers that read them.
      expect(launch.env[WireEnv.modelProviderToken]).toBe(context.token);
      expect(launch.env[WireEnv.jobId]).toBe(context.jobId);
      expect(launch.unset).toEqual(expected.unset);
      // The token never appears on the command line, where `ps` would show it.
      expect(launch.args.join(" ")).not.toContain(context.token);
      expect(provider.command!.join(" ")).not.toContain(context.token);
    });
  }
});

describe("opencode pointed at the proxy", () => {
  const opencode = BUILTIN_PROVIDERS.find((provider) => provider.id === "opencode")!;

  function configOf(launch: ModelProxyLaunch) {
    return JSON.parse(launch.env.OPENCODE_CONFIG_CONTENT!) as {
      model?: string;
      small_model?: string;
      enabled_providers?: string[];
      share?: string;
      autoupdate?: boolean;
      provider: Record<string, { models?: Record<string, { name: string }> }>;
    };
  }

  it("declares the upstream's models and uses the first, so it never falls back to opencode's own", () => {
    const launch = opencode.modelProxy!.configure({
      ...context,
      models: ["gpt-5.1-codex", "gpt-5-mini"],
    });
    const config = configOf(launch);
    expect(config.provider.deckhand!.models).toEqual({
      "gpt-5.1-codex": { name: "gpt-5.1-codex" },
      "gpt-5-mini": { name: "gpt-5-mini" },
    });
    expect(config.model).toBe("deckhand/gpt-5.1-codex");
    expect(config.small_model).toBe("deckhand/gpt-5.1-codex");
    // opencode's hosted models (opencode/big-pickle and the rest) are not loaded at all.
    expect(config.enabled_providers).toEqual(["deckhand"]);
    expect(config).toMatchObject({ share: "disabled", autoupdate: false });
    expect(launch.env).toMatchObject({
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_SHARE: "1",
      OPENCODE_DISABLE_MODELS_FETCH: "1",
    });
  });

  it("still keeps it to the proxy when no models are configured", () => {
    const config = configOf(opencode.modelProxy!.configure(context));
    expect(config.enabled_providers).toEqual(["deckhand"]);
    expect(config.model).toBeUndefined();
    expect(config.provider.deckhand!.models).toEqual({});
  });
});
