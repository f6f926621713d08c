import { describe, expect, it } from "vitest";
import { codingAgentOptions } from "./coding-agent-step.ts";

describe("codingAgentOptions", () => {
  it("takes per-type install sources of every kind from config.json, with a run's own on top", () => {
    const options = codingAgentOptions(
      {
        versions: { codex: "0.169.0", gemini: "0.61.0" },
        models: { codex: "gpt-5.5" },
        install_source: { kind: "release", base_url: "https://mirror.internal/agents" },
        install_sources: {
          codex: { kind: "release", base_url: "file:///srv/mirror/codex" },
          gemini: { kind: "npm", registry: "https://npm.internal" },
          opencode: { kind: "installed", path: "/opt/opencode/bin/opencode" },
        },
      },
      {
        versions: { gemini: "0.62.0" },
        install_source: { kind: "npm" },
        install_sources: { "claude-code": { kind: "installed" } },
      },
    );
    expect(options).toEqual({
      versions: { codex: "0.169.0", gemini: "0.62.0" },
      models: { codex: "gpt-5.5" },
      // The run's default replaces config.json's default, not its per-type sources.
      installSource: { kind: "npm" },
      installSources: {
        codex: { kind: "release", baseUrl: "file:///srv/mirror/codex" },
        gemini: { kind: "npm", registry: "https://npm.internal" },
        opencode: { kind: "installed", path: "/opt/opencode/bin/opencode" },
        "claude-code": { kind: "installed" },
      },
    });
  });

  it("leaves the install sources out when neither config.json nor the run names one", () => {
    expect(codingAgentOptions({ versions: { codex: "1" } }, undefined)).toEqual({
      versions: { codex: "1" },
      models: {},
    });
  });
});
