import { BatchSpecError } from "../batch-spec-error.ts";

/** Words made only of these characters mean the same to a POSIX shell quoted or not. */
const BARE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/**
 * Quotes `value` as one POSIX shell word that expands to exactly `value`, byte for byte.
 *
 * Single quotes are the only quoting in which a POSIX shell expands nothing (`$`, backticks,
 * `\`, `!`, globs and newlines are all literal), so the value is wrapped in them and each
 * embedded `'` becomes `'\''` (close, escaped quote, reopen). Plain words stay bare so rendered
 * scripts remain readable. NUL cannot be passed in an argument or environment variable at
 * all, so it is rejected rather than silently truncated.
 */
export function shellQuote(value: string): string {
  if (value.includes("\u0000")) {
    throw new BatchSpecError(
      "shell_nul_character",
      "a value for the shell contains a NUL character, which no shell argument can carry; remove it",
    );
  }
  if (BARE_WORD.test(value)) return value;
  return `'${value.replaceAll("'", `'\\''`)}'`;
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
