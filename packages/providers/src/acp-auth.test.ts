import { QWEN_OPENAI_AUTH_METHOD } from "@deckhand/testkit";
import { describe, expect, it } from "vitest";
import { authMethodVariables, chooseAuthMethod } from "./acp-auth.ts";

/** Gemini CLI's methods, as it advertises them in initialize. */
const geminiMethods = [
  { id: "oauth-personal", name: "Log in with Google", description: null },
  {
    id: "gemini-api-key",
    name: "Use Gemini API key",
    description: "Requires setting the `GEMINI_API_KEY` environment variable",
  },
  { id: "vertex-ai", name: "Vertex AI", description: null },
];

describe("authMethodVariables", () => {
  it("reads the variables a description names, and an env_var method's own", () => {
    expect(authMethodVariables(QWEN_OPENAI_AUTH_METHOD)).toEqual(["OPENAI_API_KEY"]);
    expect(geminiMethods.map(authMethodVariables)).toEqual([[], ["GEMINI_API_KEY"], []]);
    const envVar = {
      type: "env_var",
      id: "key",
      name: "API key",
      vars: [{ name: "ACME_KEY" }, { name: "ACME_ORG", optional: true }],
    } as never;
    expect(authMethodVariables(envVar)).toEqual(["ACME_KEY"]);
    // Backticks alone, without saying they are environment variables, name nothing.
    expect(authMethodVariables({ id: "x", name: "x", description: "run `login`" })).toEqual([]);
  });
});

describe("chooseAuthMethod", () => {
  const refusal = "Authentication required";
  const advice = "log in with the agent's own CLI";

  it("chooses a method whose variables the agent's environment holds", () => {
    expect(
      chooseAuthMethod({
        methods: geminiMethods,
        env: { GEMINI_API_KEY: "key" },
        refusal,
        advice,
        keysInEnv: true,
      }),
    ).toEqual({ kind: "authenticate", methodId: "gemini-api-key", name: "Use Gemini API key" });
  });

  it("never chooses a terminal login, nor one that needs a person", () => {
    const terminal = { ...QWEN_OPENAI_AUTH_METHOD, type: "terminal" } as never;
    expect(
      chooseAuthMethod({
        methods: [terminal],
        env: { OPENAI_API_KEY: "k" },
        refusal,
        advice,
        keysInEnv: true,
      }),
    ).toMatchObject({ kind: "refuse" });
    expect(
      chooseAuthMethod({ methods: geminiMethods, env: {}, refusal, advice, keysInEnv: true }),
    ).toEqual({
      kind: "refuse",
      message:
        "the agent needs a login before it can open a session (it offers: Log in with Google (an interactive login), Use Gemini API key (needs GEMINI_API_KEY; not set: GEMINI_API_KEY), Vertex AI (an interactive login)): Authentication required; set GEMINI_API_KEY in the provider's env in providers.json (Deckhand then logs the agent in with it), or log in with the agent's own CLI",
    });
  });

  it("never suggests a key in the provider's env for an agent the model proxy serves", () => {
    const choice = chooseAuthMethod({
      methods: geminiMethods,
      env: {},
      refusal,
      advice: "configure modelUpstreams.x in the server's config.json",
      keysInEnv: false,
    });
    expect(choice).toMatchObject({ kind: "refuse" });
    expect(choice.kind === "refuse" && choice.message).not.toContain("provider's env");
    expect(choice.kind === "refuse" && choice.message).toContain("modelUpstreams.x");
  });
});
