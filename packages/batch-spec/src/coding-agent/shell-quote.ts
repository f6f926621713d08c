import { quoteShellWord, ShellError } from "@deckhand/shell";
import { BatchSpecError } from "../batch-spec-error.ts";

/**
 * Quotes `value` as one POSIX shell word that expands to exactly `value`, byte for byte (the
 * one quoter, `@deckhand/shell`'s `quoteShellWord`). A value no shell can carry (a NUL
 * character) is reported as this package's error, `shell_nul_character`, so renders and
 * templates turn it into a diagnostic instead of an unexpected throw.
 */
export function shellQuote(value: string): string {
  try {
    return quoteShellWord(value);
  } catch (error) {
    if (error instanceof ShellError) {
      throw new BatchSpecError(`shell_${error.code}`, error.message, { cause: error });
    }
    throw error;
  }
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** True when `name` can be used as a shell variable and environment variable name. */
export function isEnvName(name: string): boolean {
  return ENV_NAME.test(name);
}

/** A piece of a shell value: literal text, or the run-time value of an environment variable. */
export type ShellValuePart = string | { readonly env: string };

/**
 * Renders parts as one shell word: literals single-quoted, environment references as
 * `"${NAME}"`, so a value read at run time (the model-provider token) never appears in the
 * script itself.
 */
export function shellValue(parts: readonly ShellValuePart[]): string {
  if (parts.length === 0) return "''";
  return parts
    .map((part) => {
      if (typeof part === "string") return part === "" ? "" : shellQuote(part);
      if (!isEnvName(part.env)) {
        throw new BatchSpecError(
          "invalid_env_name",
          `"${part.env}" is not a valid environment variable name; use letters, digits and _`,
        );
      }
      return `"\${${part.env}}"`;
    })
    .join("");
}
