import type * as acp from "@agentclientprotocol/sdk";
import type { ScriptedAgentOptions } from "./scripted-acp-options.ts";

/**
 * What the scripted agent announces, in one place so tests can assert on the same values the
 * agent sends. A later scenario (file edits, terminals, permission requests) adds its own
 * fields here and its handlers in the agent.
 */
export interface ScriptedAgentScript {
  authMethods: acp.AuthMethod[];
  modes: acp.SessionModeState;
  configOptions: acp.SessionConfigOption[];
  commands: acp.AvailableCommand[];
  /** The text every prompt is answered with. */
  reply: string;
}

/** Qwen Code's one auth method over ACP, as it advertises it. */
export const QWEN_OPENAI_AUTH_METHOD: acp.AuthMethod = {
  id: "openai",
  name: "Use OpenAI API key",
  description: "Requires setting the `OPENAI_API_KEY` environment variable",
  _meta: { type: "terminal", args: ["--auth-type=openai"] },
};

/** The `_meta` key marking a command as a skill (see docs/providers.md). */
export const SKILL_META = { kind: "skill" } as const;

export const scriptedAgentModels = [
  { value: "scripted-large", name: "Scripted Large", description: "the default model" },
  { value: "scripted-small", name: "Scripted Small" },
];

export const scriptedAgentModes = [
  { id: "ask", name: "Ask", description: "asks before every change" },
  { id: "code", name: "Code" },
];

export const scriptedAgentCommands: acp.AvailableCommand[] = [
  { name: "review", description: "review the current changes" },
  {
    name: "plan",
    description: "write a plan before coding",
    input: { hint: "what to plan" },
  },
  { name: "release-notes", description: "draft release notes", _meta: { ...SKILL_META } },
];

/** opencode's hosted default, served by opencode's own service. */
export const OPENCODE_HOSTED_MODEL = "opencode/big-pickle";

interface OpencodeConfig {
  model?: string;
  enabled_providers?: string[];
  provider?: Record<string, { models?: Record<string, { name?: string }> }>;
}

/** The model selector opencode offers for a config (see the `opencode` mode). */
export function opencodeModelOption(configText: string | undefined): acp.SessionConfigOption {
  const config = (configText ? JSON.parse(configText) : {}) as OpencodeConfig;
  const enabled = (provider: string) =>
    config.enabled_providers === undefined || config.enabled_providers.includes(provider);
  const options = [
    ...(enabled("opencode") ? [{ value: OPENCODE_HOSTED_MODEL, name: "Big Pickle" }] : []),
    ...Object.entries(config.provider ?? {}).flatMap(([provider, settings]) =>
      enabled(provider)
        ? Object.entries(settings.models ?? {}).map(([model, about]) => ({
            value: `${provider}/${model}`,
            name: about.name ?? model,
          }))
        : [],
    ),
  ];
  return {
    type: "select",
    id: "model",
    name: "Model",
    category: "model",
    currentValue: config.model ?? options[0]?.value ?? "",
    options,
  };
}

export function scriptedAgentScript(options: ScriptedAgentOptions): ScriptedAgentScript {
  return {
    authMethods:
      options.mode === "auth-required"
        ? [{ id: "scripted-login", name: "Scripted login", description: "not a real login" }]
        : options.mode === "env-auth"
          ? [QWEN_OPENAI_AUTH_METHOD]
          : [],
    modes: { currentModeId: "ask", availableModes: scriptedAgentModes },
    configOptions: [
      options.mode === "opencode"
        ? opencodeModelOption(process.env.OPENCODE_CONFIG_CONTENT)
        : {
            type: "select",
            id: "model",
            name: "Model",
            category: "model",
            currentValue: "scripted-large",
            options: scriptedAgentModels,
          },
    ],
    commands: scriptedAgentCommands,
    reply: "scripted reply",
  };
}
