import { matchesGlob } from "@deckhand/glob";
import { WireEnv } from "@deckhand/wire";
import { MIN_SECRET_LENGTH } from "./redaction.ts";

/**
 * Variables no agent process inherits unless `allow` names them: model-provider credentials an
 * operator commonly has exported. `*` stands for any run of characters, so `*_API_KEY` covers
 * `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, `GOOGLE_API_KEY`,
 * `AZURE_OPENAI_API_KEY`, `MISTRAL_API_KEY`, `OPENROUTER_API_KEY` and the like.
 */
export const DEFAULT_AGENT_ENVIRONMENT_DENY: readonly string[] = [
  "*_API_KEY",
  "ANTHROPIC_AUTH_TOKEN",
  "AZURE_OPENAI_AD_TOKEN",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "AWS_BEARER_TOKEN_BEDROCK",
  "HF_TOKEN",
  "HUGGING_FACE_HUB_TOKEN",
  "PGPASSWORD",
];

/** Deckhand's own credentials: withheld from every agent process, whatever `allow` says. */
export const DECKHAND_SECRET_ENVIRONMENT: readonly string[] = [
  WireEnv.adminToken,
  WireEnv.agentToken,
  WireEnv.executorToken,
  WireEnv.modelProviderToken,
  "DATABASE_URL",
];

export interface AgentEnvironmentPolicyInput {
  /**
   * Deckhand's own secret variables besides DECKHAND_SECRET_ENVIRONMENT (each upstream's
   * `apiKeyEnv`); never passed on, even when `allow` names them.
   */
  secretNames?: Iterable<string>;
  /**
   * Deckhand's own secret values (the database password, upstream keys): a variable whose value
   * contains one is withheld, whatever its name, even when `allow` names it.
   */
  secretValues?: Iterable<string | null | undefined>;
  /** Names or `*` patterns withheld on top of DEFAULT_AGENT_ENVIRONMENT_DENY. */
  deny?: Iterable<string>;
  /** Exact names passed through although `deny` or the default deny list matches them. */
  allow?: Iterable<string>;
}

/** What an agent process may inherit: one policy for every process Deckhand starts for agents. */
export interface AgentEnvironmentPolicy {
  readonly secretNames: ReadonlySet<string>;
  readonly secretValues: readonly string[];
  readonly deny: readonly string[];
  readonly allow: ReadonlySet<string>;
}

export function agentEnvironmentPolicy(
  input: AgentEnvironmentPolicyInput = {},
): AgentEnvironmentPolicy {
  return {
    secretNames: new Set([...DECKHAND_SECRET_ENVIRONMENT, ...(input.secretNames ?? [])]),
    secretValues: [...(input.secretValues ?? [])].filter(
      (value): value is string => typeof value === "string" && value.length >= MIN_SECRET_LENGTH,
    ),
    deny: [...DEFAULT_AGENT_ENVIRONMENT_DENY, ...(input.deny ?? [])],
    allow: new Set(input.allow ?? []),
  };
}

/**
 * Whether `name` matches a deny entry: an exact name, or a pattern where `*` is any run (and
 * nothing else is special). Matched by @deckhand/glob in time linear in the name, so a deny
 * entry like `*A*A*A*A*B` cannot stall the process that starts agents.
 */
export function matchesEnvironmentPattern(name: string, pattern: string): boolean {
  if (!pattern.includes("*")) return name === pattern;
  return matchesGlob(pattern, name, { syntax: "wildcard" });
}

/** Why a variable is withheld from agents, or null when it is passed on. */
export function withheldBecause(
  policy: AgentEnvironmentPolicy,
  name: string,
  value: string,
): "deckhand-secret" | "secret-value" | "denied" | null {
  if (policy.secretNames.has(name)) return "deckhand-secret";
  if (policy.secretValues.some((secret) => value.includes(secret))) return "secret-value";
  if (policy.allow.has(name)) return null;
  return policy.deny.some((pattern) => matchesEnvironmentPattern(name, pattern)) ? "denied" : null;
}

/** `source` (the server's own environment, by default) with everything the policy withholds removed. */
export function agentEnvironment(
  policy: AgentEnvironmentPolicy,
  source: Readonly<Record<string, string | undefined>> = process.env,
): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined) continue;
    if (withheldBecause(policy, name, value) === null) environment[name] = value;
  }
  return environment;
}
