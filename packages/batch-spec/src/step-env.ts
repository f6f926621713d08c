// A step's environment, resolved against the runner's.
import type { EnvInput } from "./batch-spec-schema.ts";

/**
 * The variables a step gets: a map as written, or for a list, names passed through from
 * `runnerEnv` (empty when the runner does not have them, as src-cli does) and one-key maps.
 * Later entries override earlier ones. Values are returned as written; templates in them are
 * rendered by the caller with the step context.
 */
export function resolveStepEnv(
  env: EnvInput | undefined,
  runnerEnv: Readonly<Record<string, string | undefined>> = {},
): Record<string, string> {
  // A Map, so that no variable name (not even `__proto__`) is treated specially.
  const resolved = new Map<string, string>();
  if (env === undefined) return {};
  if (!Array.isArray(env)) return Object.fromEntries(Object.entries(env));
  for (const entry of env) {
    if (typeof entry === "string") {
      resolved.set(entry, Object.hasOwn(runnerEnv, entry) ? (runnerEnv[entry] ?? "") : "");
    } else {
      for (const [name, value] of Object.entries(entry)) resolved.set(name, value);
    }
  }
  return Object.fromEntries(resolved);
}

/** Names a step takes from the runner's environment (the plain names in an env list). */
export function passedThroughEnvNames(env: EnvInput | undefined): string[] {
  return Array.isArray(env)
    ? env.filter((entry): entry is string => typeof entry === "string")
    : [];
}
