import { BatchSpecError } from "../batch-spec-error.ts";
import { claudeCodeAgent } from "./agents/claude-code.ts";
import { codexAgent } from "./agents/codex.ts";
import { geminiAgent } from "./agents/gemini.ts";
import { opencodeAgent } from "./agents/opencode.ts";
import type { AgentTypeDefinition, CodingAgentResult } from "./types.ts";

/** Agent types end up in URL paths and directory names, so they are kept to plain words. */
const AGENT_TYPE = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;

/**
 * The agent types a `codingAgent` step may name. Registering never throws: a conflict is a
 * value the caller reports, so a plugin registering a taken name cannot crash whoever imports
 * it (the src-cli renderer panicked on duplicate registration).
 */
export class AgentTypeRegistry {
  readonly #definitions = new Map<string, AgentTypeDefinition>();

  register(definition: AgentTypeDefinition): CodingAgentResult<AgentTypeDefinition> {
    if (!AGENT_TYPE.test(definition.type)) {
      return {
        ok: false,
        error: new BatchSpecError(
          "invalid_agent_type",
          `agent type "${definition.type}" is not a lower-case word (letters, digits, single dashes); rename it`,
        ),
      };
    }
    if (this.#definitions.has(definition.type)) {
      return {
        ok: false,
        error: new BatchSpecError(
          "duplicate_agent_type",
          `agent type "${definition.type}" is already registered; pick another name or use a registry of your own`,
        ),
      };
    }
    this.#definitions.set(definition.type, definition);
    return { ok: true, value: definition };
  }

  get(type: string): AgentTypeDefinition | undefined {
    return this.#definitions.get(type);
  }

  has(type: string): boolean {
    return this.#definitions.has(type);
  }

  /** Registered types in registration order, for "known types are …" messages. */
  types(): string[] {
    return [...this.#definitions.keys()];
  }
}

/** A new registry holding the built-in agent types: codex, claude-code, opencode, gemini. */
export function createDefaultAgentRegistry(): AgentTypeRegistry {
  const registry = new AgentTypeRegistry();
  for (const definition of [codexAgent, claudeCodeAgent, opencodeAgent, geminiAgent]) {
    // The built-ins have distinct, valid names (a test registers them twice to prove the
    // conflict path), so these results are always `ok`.
    registry.register(definition);
  }
  return registry;
}

/** The registry renders use unless given another. */
export const defaultAgentRegistry: AgentTypeRegistry = createDefaultAgentRegistry();
