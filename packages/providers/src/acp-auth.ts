// What Deckhand does when an ACP agent refuses `session/new` with auth_required: the agent's
// `initialize` listed the ways it can log in (`authMethods`). One that needs only environment
// variables the agent already has (Qwen Code's "Use OpenAI API key" reads OPENAI_API_KEY) can be
// chosen with `authenticate` and the session asked for again; a login that needs a person (a
// browser, a terminal) cannot, and then the user is told what the agent offers and what to set.
import type * as acp from "@agentclientprotocol/sdk";

export type AuthChoice =
  /** Call `authenticate` with this method, then ask for the session again. */
  | { kind: "authenticate"; methodId: string; name: string }
  /** No method fits: the message says what the agent offers and what to configure. */
  | { kind: "refuse"; message: string };

/** An `env_var` method of newer ACP versions, which the SDK's types do not know yet. */
interface EnvVarMethod {
  type?: unknown;
  varName?: unknown;
  vars?: unknown;
}

const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The environment variables a method needs, as the agent says: the variables of an `env_var`
 * method, or the ones its description names as environment variables (Gemini CLI and Qwen Code
 * say "Requires setting the `OPENAI_API_KEY` environment variable"). Empty for a method that
 * needs something else, such as a browser login.
 */
export function authMethodVariables(method: acp.AuthMethod): string[] {
  const typed = method as EnvVarMethod;
  if (typed.type === "env_var") {
    const named = Array.isArray(typed.vars)
      ? typed.vars.flatMap((entry: unknown) => {
          const variable = entry as { name?: unknown; optional?: unknown };
          return typeof variable.name === "string" && variable.optional !== true
            ? [variable.name]
            : [];
        })
      : [];
    if (typeof typed.varName === "string") named.push(typed.varName);
    return [...new Set(named.filter((name) => VARIABLE.test(name)))];
  }
  const description = method.description ?? "";
  if (!/environment variable/i.test(description)) return [];
  return [...new Set([...description.matchAll(/`([A-Za-z_][A-Za-z0-9_]*)`/g)].map((m) => m[1]!))];
}

function describe(method: acp.AuthMethod, env: Readonly<Record<string, string | undefined>>) {
  const variables = authMethodVariables(method);
  if (variables.length === 0) return `${method.name} (an interactive login)`;
  const missing = variables.filter((name) => !env[name]);
  return `${method.name} (needs ${variables.join(", ")}${missing.length > 0 ? `; not set: ${missing.join(", ")}` : ""})`;
}

export interface AuthChoiceInput {
  /** The agent's `authMethods` from `initialize`. */
  methods: readonly acp.AuthMethod[];
  /** The agent's whole environment. */
  env: Readonly<Record<string, string | undefined>>;
  /** What the agent said when it refused the session. */
  refusal: string;
  /** What to do otherwise (log in with its own CLI; configure a model upstream). */
  advice: string;
  /**
   * Whether the user may give the agent a key in the provider's env: not for an agent type the
   * model proxy serves, which must never hold a real key.
   */
  keysInEnv: boolean;
}

/**
 * The first method Deckhand can use on its own: one that needs environment variables, all of
 * which the agent's environment holds (the provider's `env`, or what Deckhand set to point it at
 * the model proxy). Terminal logins are for a person and never passed to `authenticate`. With
 * none, the refusal lists every method and ends with what to configure.
 */
export function chooseAuthMethod(input: AuthChoiceInput): AuthChoice {
  const { methods, env } = input;
  for (const method of methods) {
    if ((method as { type?: unknown }).type === "terminal") continue;
    const variables = authMethodVariables(method);
    if (variables.length > 0 && variables.every((name) => Boolean(env[name]))) {
      return { kind: "authenticate", methodId: method.id, name: method.name };
    }
  }
  const offered = methods.map((method) => describe(method, env)).join(", ");
  const wanted = [...new Set(methods.flatMap(authMethodVariables))];
  const set =
    wanted.length > 0 && input.keysInEnv
      ? `set ${wanted.join(" or ")} in the provider's env in providers.json (Deckhand then logs the agent in with it), or `
      : "";
  return {
    kind: "refuse",
    message: `the agent needs a login before it can open a session${offered ? ` (it offers: ${offered})` : ""}: ${input.refusal}; ${set}${input.advice}`,
  };
}
