// The coding-agent types validation accepts come from the renderer's registry, so a type is
// valid exactly when a step of that type can be rendered.
import { defaultAgentRegistry } from "./coding-agent/registry.ts";

/** Which `codingAgent.type` values are known, for validation. */
export interface AgentTypeCatalogue {
  has(type: string): boolean;
  types(): string[];
}

/**
 * The providers an `acp` step may name: the ACP agents of the server's provider registry
 * (built-in and custom). `describe` says why an id is not one (the native agent, say).
 */
export interface AcpProviderCatalogue {
  has(id: string): boolean;
  ids(): string[];
  /** Why `id` cannot run as an `acp` step although it is a provider; undefined otherwise. */
  refusal?(id: string): string | undefined;
}

/** The built-in agent types (codex, claude-code, opencode, gemini). */
export function defaultAgentTypes(): AgentTypeCatalogue {
  return defaultAgentRegistry;
}
