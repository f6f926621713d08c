import { WireEnv } from "@deckhand/wire";

/** What every secret value is replaced with. */
export const REDACTED = "REDACTED";

export interface RedactEnvOptions {
  /** Environment variables the caller marks secret, besides the model-provider token. */
  secretNames?: Iterable<string>;
  /** Further secret values to hide wherever they appear. */
  secretValues?: Iterable<string>;
}

export interface RedactArgsOptions {
  /** Secret values to hide wherever they appear, e.g. the model-provider token itself. */
  secretValues?: Iterable<string>;
  /** Environment variables whose `NAME=value` arguments are secret, besides the token. */
  secretNames?: Iterable<string>;
}

export interface RedactTextOptions {
  secretValues?: Iterable<string>;
}

/** The token is secret whatever the caller says: it is the secret that travels furthest. */
function secretNameSet(names: Iterable<string> | undefined): Set<string> {
  const set = new Set(names ?? []);
  set.add(WireEnv.modelProviderToken);
  return set;
}

/** Longest first, so a value that contains another is replaced whole, not in pieces. */
function orderedSecrets(values: Iterable<string>): string[] {
  return [...new Set(values)]
    .filter((value) => value.length > 0)
    .sort((left, right) => right.length - left.length);
}

function replaceSecrets(text: string, secrets: readonly string[]): string {
  let result = text;
  for (const secret of secrets) result = result.replaceAll(secret, REDACTED);
  return result;
}

/** Replaces every occurrence of each secret value in `text` with `REDACTED`. */
export function redactText(text: string, options: RedactTextOptions = {}): string {
  return replaceSecrets(text, orderedSecrets(options.secretValues ?? []));
}

/**
 * Copies `env` with the model-provider token and every caller-marked secret replaced by
 * `REDACTED`; their values are also hidden where they appear inside other variables (a header
 * built from the token, say). For UI metadata and logs.
 */
export function redactEnv(
  env: Readonly<Record<string, string | undefined>>,
  options: RedactEnvOptions = {},
): Record<string, string> {
  const names = secretNameSet(options.secretNames);
  const values = [...(options.secretValues ?? [])];
  for (const [name, value] of Object.entries(env)) {
    if (names.has(name) && value !== undefined) values.push(value);
  }
  const secrets = orderedSecrets(values);
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    result[name] = names.has(name) ? REDACTED : replaceSecrets(value, secrets);
  }
  return result;
}

/**
 * Copies a command line with secrets replaced by `REDACTED`: the value of every `NAME=value`
 * argument whose name is secret (as in `-e DECKHAND_MODEL_PROVIDER_TOKEN=…` or
 * `--env=NAME=…`), and every occurrence of a secret value anywhere, including values learnt
 * from those arguments. For logged command lines.
 */
export function redactArgs(args: readonly string[], options: RedactArgsOptions = {}): string[] {
  const names = secretNameSet(options.secretNames);
  const values = [...(options.secretValues ?? [])];
  const assignments = args.map((argument) => secretAssignment(argument, names));
  for (const assignment of assignments) if (assignment) values.push(assignment.value);
  const secrets = orderedSecrets(values);
  return args.map((argument, index) => {
    const assignment = assignments[index];
    if (assignment) return `${assignment.prefix}${REDACTED}`;
    return replaceSecrets(argument, secrets);
  });
}

/** Finds `NAME=value` at the end of an argument (`NAME=v`, `--env=NAME=v`) for a secret NAME. */
function secretAssignment(
  argument: string,
  names: ReadonlySet<string>,
): { prefix: string; value: string } | undefined {
  for (const name of names) {
    const marker = `${name}=`;
    let index = argument.indexOf(marker);
    while (index !== -1) {
      // The name must start the argument or follow a separator, so `XTOKEN=` is not `TOKEN=`.
      const before = index === 0 ? "" : argument[index - 1]!;
      if (before === "" || !/[A-Za-z0-9_]/.test(before)) {
        const prefix = argument.slice(0, index + marker.length);
        return { prefix, value: argument.slice(prefix.length) };
      }
      index = argument.indexOf(marker, index + 1);
    }
  }
  return undefined;
}
