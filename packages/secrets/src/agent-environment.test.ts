import { WireEnv } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import {
  agentEnvironment,
  agentEnvironmentPolicy,
  DEFAULT_AGENT_ENVIRONMENT_DENY,
  matchesEnvironmentPattern,
  withheldBecause,
} from "./agent-environment.ts";

const serverEnvironment = {
  PATH: "/usr/bin:/bin",
  HOME: "/home/deckhand",
  MY_KEY: "sk-configured-upstream-key-000",
  OPENAI_API_KEY: "sk-operator-openai-key-0000",
  ANTHROPIC_API_KEY: "sk-ant-operator-key-0000",
  GOOGLE_API_KEY: "google-operator-key-0000",
  AWS_SECRET_ACCESS_KEY: "aws-secret-0000000000",
  [WireEnv.adminToken]: "admin-token-000000000000",
  [WireEnv.agentToken]: "agent-token-000000000000",
  [WireEnv.executorToken]: "dhexe_executor-token-0000",
  DATABASE_URL: "postgres://deckhand:db-password-0000@db:5432/deckhand",
  PGURL_COPY: "host=db password=db-password-0000",
  UNDEFINED_ONE: undefined,
};

describe("agentEnvironment", () => {
  it("withholds Deckhand's own secrets, the default deny list, and values holding a secret", () => {
    const policy = agentEnvironmentPolicy({
      secretNames: ["MY_KEY"],
      secretValues: ["db-password-0000"],
    });
    expect(agentEnvironment(policy, serverEnvironment)).toEqual({
      PATH: "/usr/bin:/bin",
      HOME: "/home/deckhand",
    });
  });

  it("adds configured deny entries to the default and lets allow pass a denied variable", () => {
    const policy = agentEnvironmentPolicy({
      deny: ["HOME", "P*TH"],
      allow: ["GOOGLE_API_KEY"],
    });
    const environment = agentEnvironment(policy, {
      PATH: "/bin",
      HOME: "/home/x",
      LANG: "C",
      GOOGLE_API_KEY: "google-operator-key-0000",
      OPENAI_API_KEY: "sk-operator-openai-key-0000",
    });
    expect(environment).toEqual({ LANG: "C", GOOGLE_API_KEY: "google-operator-key-0000" });
  });

  it("never lets allow pass Deckhand's own secrets or a value holding one", () => {
    const policy = agentEnvironmentPolicy({
      secretNames: ["MY_KEY"],
      secretValues: ["db-password-0000"],
      allow: ["MY_KEY", WireEnv.adminToken, WireEnv.executorToken, "DATABASE_URL", "PGURL_COPY"],
    });
    expect(agentEnvironment(policy, serverEnvironment)).not.toHaveProperty("MY_KEY");
    expect(withheldBecause(policy, "MY_KEY", "x")).toBe("deckhand-secret");
    expect(withheldBecause(policy, WireEnv.adminToken, "x")).toBe("deckhand-secret");
    expect(withheldBecause(policy, WireEnv.executorToken, "x")).toBe("deckhand-secret");
    expect(withheldBecause(policy, "DATABASE_URL", "x")).toBe("deckhand-secret");
    expect(withheldBecause(policy, "PGURL_COPY", "password=db-password-0000")).toBe("secret-value");
  });

  it("ignores secret values too short to search for", () => {
    const policy = agentEnvironmentPolicy({ secretValues: ["pw", "", null] });
    expect(agentEnvironment(policy, { WORDS: "pw is short" })).toEqual({ WORDS: "pw is short" });
  });

  it("covers the well-known upstream key names by default", () => {
    const policy = agentEnvironmentPolicy();
    for (const name of [
      "OPENAI_API_KEY",
      "ANTHROPIC_API_KEY",
      "GEMINI_API_KEY",
      "GOOGLE_API_KEY",
      "AZURE_OPENAI_API_KEY",
      "MISTRAL_API_KEY",
      "OPENROUTER_API_KEY",
      "ANTHROPIC_AUTH_TOKEN",
      "AWS_SECRET_ACCESS_KEY",
    ]) {
      expect(withheldBecause(policy, name, "value"), name).toBe("denied");
    }
    expect(DEFAULT_AGENT_ENVIRONMENT_DENY).toContain("*_API_KEY");
  });
});

describe("matchesEnvironmentPattern", () => {
  it("matches whole names, with * standing for any run of characters", () => {
    expect(matchesEnvironmentPattern("OPENAI_API_KEY", "*_API_KEY")).toBe(true);
    expect(matchesEnvironmentPattern("API_KEY", "*_API_KEY")).toBe(false);
    expect(matchesEnvironmentPattern("OPENAI_API_KEY_FILE", "*_API_KEY")).toBe(false);
    expect(matchesEnvironmentPattern("A.B", "A.B")).toBe(true);
    expect(matchesEnvironmentPattern("AXB", "A.B")).toBe(false);
    expect(matchesEnvironmentPattern("AXB", "A*B")).toBe(true);
    expect(matchesEnvironmentPattern("A?[B]", "A?[B]*")).toBe(true);
    expect(matchesEnvironmentPattern("AXB", "A?B*")).toBe(false);
  });

  it("answers a pathological deny pattern at once (no backtracking)", () => {
    // As the `^.*A.*A…B$` regular expression it was, a deny entry like this one took longer
    // than the test timeout for a 48-character name, blocking whatever started an agent.
    const pattern = "*A*A*A*A*A*A*A*A*B";
    expect(matchesEnvironmentPattern("A".repeat(48), pattern)).toBe(false);
    expect(matchesEnvironmentPattern(`${"A".repeat(48)}B`, pattern)).toBe(true);
  });
});
