// The coding-agent types validation accepts come from the renderer's registry, so a type is
// valid exactly when a step of that type can be rendered.
import { defaultAgentRegistry } from "./coding-agent/registry.ts";

/** Which `codingAgent.type` values are known, for validation. */
export interface AgentTypeCatalogue {
  has(type: string): boolean;
  types(): string[];
}

/** The built-in agent types (codex, claude-code, opencode, gemini). */
export function defaultAgentTypes(): AgentTypeCatalogue {
  return defaultAgentRegistry;
}
