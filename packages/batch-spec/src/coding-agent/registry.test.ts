import { describe, expect, it } from "vitest";
import { codexAgent } from "./agents/codex.ts";
import { AgentTypeRegistry, createDefaultAgentRegistry, defaultAgentRegistry } from "./registry.ts";

describe("AgentTypeRegistry", () => {
  it("ships codex and claude-code, the types existing specs use, plus opencode and gemini", () => {
    expect(defaultAgentRegistry.types()).toEqual(["codex", "claude-code", "opencode", "gemini"]);
    expect(defaultAgentRegistry.has("codex")).toBe(true);
    expect(defaultAgentRegistry.get("claude-code")?.binary).toBe("claude");
    expect(defaultAgentRegistry.get("aider")).toBeUndefined();
  });

  it("returns an error value for a duplicate type instead of throwing", () => {
    const registry = createDefaultAgentRegistry();
    const result = registry.register(codexAgent);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.code).toBe("duplicate_agent_type");
    expect(result.error.message).toBe(
      'agent type "codex" is already registered; pick another name or use a registry of your own',
    );
    expect(registry.types()).toEqual(["codex", "claude-code", "opencode", "gemini"]);
  });

  it("registers a new type and rejects a name that cannot be a URL segment", () => {
    const registry = new AgentTypeRegistry();
    expect(registry.register({ ...codexAgent, type: "my-agent" }).ok).toBe(true);
    expect(registry.types()).toEqual(["my-agent"]);
    const bad = registry.register({ ...codexAgent, type: "My Agent/2" });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error.code).toBe("invalid_agent_type");
  });

  it("gives each registry its own types", () => {
    const registry = createDefaultAgentRegistry();
    registry.register({ ...codexAgent, type: "extra" });
    expect(defaultAgentRegistry.has("extra")).toBe(false);
  });
});
