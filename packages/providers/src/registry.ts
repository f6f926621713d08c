import { type ModelUpstreamKind, WireEnv, WireHeader } from "@deckhand/wire";

/** What a launcher knows when it points an agent at Deckhand's model-provider proxy. */
export interface ModelProxyContext {
  /** `<server>/model-provider/<agent-type>`: the proxy route for this agent type. */
  proxyUrl: string;
  /** The short-lived scoped token; it travels only in the environment, never in arguments. */
  token: string;
  /** The job or session turn the token was minted for; sent back in the job id header. */
  jobId: string;
  /**
   * The models the upstream for this agent type serves, its default first (the server's
   * `modelUpstreams.<type>.models`): for agents that only offer models they were told of.
   */
  models?: readonly string[];
}

/** How to start an agent so that it talks to the proxy instead of a real provider. */
export interface ModelProxyLaunch {
  /** Variables to set in the agent's environment. */
  env: Record<string, string>;
  /** Variables to remove first, so credentials of the machine cannot take precedence. */
  unset: string[];
  /** Arguments to append to the provider's command. */
  args: string[];
}

export interface ModelProxySupport {
  /**
   * The last segment of the proxy URL, and the key of the server's `modelUpstreams`; the same
   * agent types batch specs use, so one upstream configuration serves both.
   */
  agentType: string;
  /**
   * The API the agent speaks to the proxy: one the proxy forwards. An agent that speaks only
   * another API, or cannot send the job id header the proxy checks, gets no `modelProxy`.
   */
  protocol: ModelUpstreamKind;
  configure(context: ModelProxyContext): ModelProxyLaunch;
}

/** One provider: a built-in, or a custom ACP agent from the config file. */
export interface ProviderDefinition {
  id: string;
  label: string;
  transport: "native" | "acp";
  builtin: boolean;
  /** Executable then arguments; null for the native agent, which runs in the server. */
  command: readonly string[] | null;
  /** Extra environment for the agent process. */
  env: Readonly<Record<string, string>>;
  /** Shown when the command cannot be found. */
  installHint: string | null;
  /**
   * The arguments that make the executable print its version, given instead of the command's
   * own; null when the agent has no such form (codex-acp refuses `--version`) and its version
   * is only what it reports in ACP `initialize`.
   */
  versionArgs: readonly string[] | null;
  /** Null when Deckhand cannot point the agent at its proxy; it then uses its own login. */
  modelProxy: ModelProxySupport | null;
  /**
   * Where the agent keeps its own state (settings, sessions it resumes, caches), relative to the
   * home directory: writable in its sandbox, where the rest of the home is read-only.
   */
  stateDirectories: readonly string[];
  /**
   * Its login files, relative to the home directory: hidden from every sandbox, and shown to
   * this agent only when it keeps its own login (no model proxy serves it).
   */
  loginFiles: readonly string[];
  /**
   * Whether Deckhand advertises `fs.readTextFile` and so serves the agent's file reads. False
   * for an agent that cannot take the answer to a read of a missing file (-32002, as ACP says):
   * it reads the worktree itself, its writes still go through Deckhand.
   */
  serveFileReads: boolean;
}

/** Both values travel in the environment, where every launcher below reads them from. */
function tokenEnvironment(context: ModelProxyContext): Record<string, string> {
  return { [WireEnv.modelProviderToken]: context.token, [WireEnv.jobId]: context.jobId };
}

/**
 * A TOML basic string. JSON's escapes are a subset of TOML's for the characters a URL or an
 * identifier holds, which is all that is quoted here.
 */
function tomlString(value: string): string {
  return JSON.stringify(value);
}

/** codex's id for the proxy provider; any id but the built-in `openai`, which tries WebSockets. */
const CODEX_PROVIDER_ID = "deckhand";

/**
 * codex-acp reads codex's `-c key=value` overrides. The custom provider takes the token from
 * `env_key` (sent as a bearer token) and the job id header from `env_http_headers`, both read
 * from the environment by codex, so neither value is ever in the command line.
 */
const codexModelProxy: ModelProxySupport = {
  agentType: "codex",
  protocol: "openai",
  configure(context) {
    const provider = `model_providers.${CODEX_PROVIDER_ID}`;
    return {
      env: tokenEnvironment(context),
      unset: ["OPENAI_API_KEY"],
      args: [
        "-c",
        `model_provider=${tomlString(CODEX_PROVIDER_ID)}`,
        "-c",
        `${provider}.name=${tomlString("Deckhand model provider")}`,
        "-c",
        `${provider}.base_url=${tomlString(context.proxyUrl)}`,
        "-c",
        `${provider}.env_key=${tomlString(WireEnv.modelProviderToken)}`,
        "-c",
        `${provider}.env_http_headers={${tomlString(WireHeader.jobId)}=${tomlString(WireEnv.jobId)}}`,
      ],
    };
  },
};

/**
 * Claude's SDK sends `ANTHROPIC_AUTH_TOKEN` as a bearer token, as the proxy expects;
 * `ANTHROPIC_API_KEY` is removed so a real key cannot go out as `x-api-key`. The job id goes in
 * `ANTHROPIC_CUSTOM_HEADERS` ("Name: value" lines).
 */
const claudeModelProxy: ModelProxySupport = {
  agentType: "claude-code",
  protocol: "anthropic",
  configure(context) {
    return {
      env: {
        ...tokenEnvironment(context),
        ANTHROPIC_BASE_URL: context.proxyUrl,
        ANTHROPIC_AUTH_TOKEN: context.token,
        ANTHROPIC_CUSTOM_HEADERS: `${WireHeader.jobId}: ${context.jobId}`,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
      },
      unset: ["ANTHROPIC_API_KEY"],
      args: [],
    };
  },
};

/** opencode's provider id for the proxy; models are addressed as `deckhand/<model>`. */
const OPENCODE_PROVIDER_ID = "deckhand";

/**
 * `OPENCODE_CONFIG_CONTENT` is applied over every config file. opencode offers only the models
 * a custom provider declares, and without a `model` it picks its own hosted default
 * (`opencode/big-pickle`, served by opencode's service): so the upstream's models are declared,
 * the first is the model (and the small model for titles), and `enabled_providers` leaves
 * opencode no provider but the proxy. Sharing, updates and the models.dev catalogue fetch, which
 * reach opencode's own services, are off. The token and job id are `{env:NAME}` references
 * opencode substitutes on load, so the config text holds no secret.
 */
const opencodeModelProxy: ModelProxySupport = {
  agentType: "opencode",
  protocol: "openai",
  configure(context) {
    const models = context.models ?? [];
    const model = models[0];
    return {
      env: {
        ...tokenEnvironment(context),
        OPENCODE_CONFIG_CONTENT: JSON.stringify({
          autoupdate: false,
          share: "disabled",
          enabled_providers: [OPENCODE_PROVIDER_ID],
          ...(model === undefined
            ? {}
            : {
                model: `${OPENCODE_PROVIDER_ID}/${model}`,
                small_model: `${OPENCODE_PROVIDER_ID}/${model}`,
              }),
          provider: {
            [OPENCODE_PROVIDER_ID]: {
              npm: "@ai-sdk/openai-compatible",
              name: "Deckhand model provider",
              options: {
                baseURL: context.proxyUrl,
                apiKey: `{env:${WireEnv.modelProviderToken}}`,
                headers: { [WireHeader.jobId]: `{env:${WireEnv.jobId}}` },
              },
              models: Object.fromEntries(models.map((id) => [id, { name: id }])),
            },
          },
        }),
        OPENCODE_DISABLE_AUTOUPDATE: "1",
        OPENCODE_DISABLE_SHARE: "1",
        OPENCODE_DISABLE_MODELS_FETCH: "1",
      },
      unset: [],
      args: [],
    };
  },
};

/**
 * goose's OpenAI provider splits the URL into host and path and takes extra headers as
 * `OPENAI_CUSTOM_HEADERS` ("Name=value" pairs separated by commas).
 */
const gooseModelProxy: ModelProxySupport = {
  agentType: "goose",
  protocol: "openai",
  configure(context) {
    const url = new URL(context.proxyUrl);
    const basePath = `${url.pathname.replace(/\/$/, "")}/v1/chat/completions`.replace(/^\//, "");
    return {
      env: {
        ...tokenEnvironment(context),
        GOOSE_PROVIDER: "openai",
        OPENAI_HOST: url.origin,
        OPENAI_BASE_PATH: basePath,
        OPENAI_API_KEY: context.token,
        OPENAI_CUSTOM_HEADERS: `${WireHeader.jobId}=${context.jobId}`,
      },
      unset: [],
      args: [],
    };
  },
};

function npmHint(packageName: string): string {
  return `npm install -g ${packageName}`;
}

/** The built-in providers, in the order a picker shows them. */
export const BUILTIN_PROVIDERS: readonly ProviderDefinition[] = [
  {
    id: "deckhand",
    label: "Deckhand",
    transport: "native",
    builtin: true,
    command: null,
    env: {},
    installHint: null,
    versionArgs: null,
    modelProxy: null,
    stateDirectories: [],
    loginFiles: [],
    serveFileReads: true,
  },
  {
    id: "codex",
    label: "Codex",
    transport: "acp",
    builtin: true,
    command: ["codex-acp"],
    env: {},
    installHint: npmHint("@zed-industries/codex-acp"),
    versionArgs: null,
    modelProxy: codexModelProxy,
    stateDirectories: [".codex"],
    loginFiles: [".codex/auth.json"],
    serveFileReads: true,
  },
  {
    id: "claude",
    label: "Claude Code",
    transport: "acp",
    builtin: true,
    command: ["claude-agent-acp"],
    env: {},
    installHint: npmHint("@agentclientprotocol/claude-agent-acp"),
    versionArgs: null,
    modelProxy: claudeModelProxy,
    stateDirectories: [".claude"],
    loginFiles: [".claude/.credentials.json"],
    serveFileReads: true,
  },
  {
    id: "gemini",
    label: "Gemini CLI",
    transport: "acp",
    builtin: true,
    command: ["gemini", "--acp"],
    env: {},
    installHint: npmHint("@google/gemini-cli"),
    // Gemini CLI speaks only Google's Gemini API, which the proxy does not forward: it keeps
    // its own login.
    versionArgs: ["--version"],
    modelProxy: null,
    stateDirectories: [".gemini"],
    loginFiles: [".gemini/oauth_creds.json", ".gemini/google_accounts.json"],
    // Its write_file reads a file before writing it and must see a missing one as ENOENT; the
    // ACP SDK the released CLI (0.61) bundles rejects with the bare JSON-RPC error object, which
    // its check reads as "[object Object]", so every new file failed. Told Deckhand serves no
    // reads, it reads the worktree itself (as it already does outside it).
    serveFileReads: false,
  },
  {
    id: "opencode",
    label: "OpenCode",
    transport: "acp",
    builtin: true,
    command: ["opencode", "acp"],
    env: {},
    installHint: npmHint("opencode-ai"),
    versionArgs: ["--version"],
    modelProxy: opencodeModelProxy,
    stateDirectories: [
      ".local/share/opencode",
      ".local/state/opencode",
      ".config/opencode",
      ".cache/opencode",
    ],
    loginFiles: [".local/share/opencode/auth.json"],
    serveFileReads: true,
  },
  {
    id: "goose",
    label: "Goose",
    transport: "acp",
    builtin: true,
    command: ["goose", "acp"],
    env: {},
    installHint:
      "install goose from https://block.github.io/goose/docs/getting-started/installation",
    versionArgs: ["--version"],
    modelProxy: gooseModelProxy,
    stateDirectories: [".config/goose", ".local/share/goose", ".local/state/goose"],
    loginFiles: [".config/goose/secrets.yaml"],
    serveFileReads: true,
  },
  {
    id: "qwen",
    label: "Qwen Code",
    transport: "acp",
    builtin: true,
    command: ["qwen", "--acp"],
    env: {},
    installHint: npmHint("@qwen-code/qwen-code"),
    // Qwen Code takes its base URL and key from the environment but extra request headers only
    // from its settings files, so it cannot send the job id header the proxy requires: it keeps
    // its own login.
    versionArgs: ["--version"],
    modelProxy: null,
    stateDirectories: [".qwen"],
    loginFiles: [".qwen/oauth_creds.json"],
    serveFileReads: true,
  },
];

/** The built-in with this id, if there is one. */
export function builtinProvider(id: string): ProviderDefinition | undefined {
  return BUILTIN_PROVIDERS.find((provider) => provider.id === id);
}
