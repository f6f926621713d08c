import { ModelTokenPattern, WireEnv } from "@deckhand/wire";

/** What every secret is replaced with, wherever Deckhand redacts. */
export const REDACTED = "[REDACTED]";

/**
 * Secret values shorter than this are not searched for: replacing them would mangle ordinary
 * text (a 4-character password matches words) and they protect nothing.
 */
export const MIN_SECRET_LENGTH = 8;

const anyModelToken = new RegExp(ModelTokenPattern.source, "g");

/** A variable whose value is a credential, judged by its name alone. */
const SECRET_NAME = /TOKEN|KEY|SECRET|PASSWORD|CREDENTIAL|AUTH/i;

/**
 * The process's own secrets (upstream keys, the admin and workspace-agent tokens, the database
 * password). They are kept process-wide rather than passed to each redaction site because every
 * site in the process must know them — log hooks, error handlers, stored events, agent
 * backends — and a site that was not handed them would leak silently.
 */
const processSecrets = new Set<string>();

/** Adds values every later `redactSecrets` call in this process replaces, whatever it is given. */
export function rememberSecrets(values: Iterable<string | null | undefined>): void {
  for (const value of values) {
    if (typeof value === "string" && value.length >= MIN_SECRET_LENGTH) processSecrets.add(value);
  }
}

/** Whether a variable's name says it holds a credential (`…TOKEN`, `…KEY`, `…PASSWORD`, …). */
export function looksLikeSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

/**
 * The values to search for: the process's remembered secrets and `secrets`, long enough,
 * without repeats, longest first.
 */
export function searchableSecrets(secrets: Iterable<string | null | undefined>): string[] {
  const values = new Set(processSecrets);
  for (const secret of secrets) {
    if (typeof secret === "string" && secret.length >= MIN_SECRET_LENGTH) values.add(secret);
  }
  // Longest first, so a secret containing another is replaced whole, not in pieces.
  return [...values].sort((left, right) => right.length - left.length);
}

function replaceAll(text: string, secrets: readonly string[]): string {
  let redacted = text;
  for (const secret of secrets) {
    if (redacted.includes(secret)) redacted = redacted.replaceAll(secret, REDACTED);
  }
  return redacted.replace(anyModelToken, REDACTED);
}

/**
 * Replaces every occurrence of each given secret, of each secret the process remembers, and of
 * anything shaped like a scoped model token with `[REDACTED]`. Token-shaped text is caught even
 * when its value is not known here, so a token from another request cannot slip through either.
 */
export function redactSecrets(
  text: string,
  secrets: Iterable<string | null | undefined> = [],
): string {
  return replaceAll(text, searchableSecrets(secrets));
}

/** Redacts every string inside a JSON-like value (log fields, events), keeping its shape. */
export function redactValue<Value>(
  value: Value,
  secrets: Iterable<string | null | undefined> = [],
): Value {
  const known = searchableSecrets(secrets);
  const walk = (inner: unknown): unknown => {
    if (typeof inner === "string") return replaceAll(inner, known);
    if (inner instanceof Error) return replaceAll(describeError(inner), known);
    if (Array.isArray(inner)) return inner.map(walk);
    if (inner && typeof inner === "object") {
      return Object.fromEntries(Object.entries(inner).map(([key, item]) => [key, walk(item)]));
    }
    return inner;
  };
  return walk(value) as Value;
}

/** An error's name, message and causes, flattened for a log line. */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && depth < 5; depth += 1) {
    if (current instanceof Error) {
      parts.push(`${current.name}: ${current.message}`);
      current = current.cause;
    } else {
      parts.push(String(current));
      break;
    }
  }
  return parts.join(" <- ");
}

export interface RedactNamedOptions {
  /** Variables whose values are secret, besides the model-provider token. */
  secretNames?: Iterable<string>;
  /** Further secret values to hide wherever they appear. */
  secretValues?: Iterable<string>;
}

/** The token is secret whatever the caller says: it is the secret that travels furthest. */
function secretNameSet(names: Iterable<string> | undefined): Set<string> {
  const set = new Set(names ?? []);
  set.add(WireEnv.modelProviderToken);
  return set;
}

/**
 * Copies `env` with the model-provider token and every caller-marked secret replaced by the
 * marker whatever its length; their values are also hidden where they appear inside other
 * variables (a header built from the token, say). For UI metadata and logs.
 */
export function redactEnv(
  env: Readonly<Record<string, string | undefined>>,
  options: RedactNamedOptions = {},
): Record<string, string> {
  const names = secretNameSet(options.secretNames);
  const values = [...(options.secretValues ?? [])];
  for (const [name, value] of Object.entries(env)) {
    if (names.has(name) && value !== undefined) values.push(value);
  }
  const secrets = searchableSecrets(values);
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    result[name] = names.has(name) ? REDACTED : replaceAll(value, secrets);
  }
  return result;
}

/**
 * Copies a command line with secrets replaced by the marker: the value of every `NAME=value`
 * argument whose name is secret (as in `-e DECKHAND_MODEL_PROVIDER_TOKEN=…` or `--env=NAME=…`),
 * and every occurrence of a secret value anywhere, including values learnt from those
 * arguments. For logged command lines.
 */
export function redactArgs(args: readonly string[], options: RedactNamedOptions = {}): string[] {
  const names = secretNameSet(options.secretNames);
  const values = [...(options.secretValues ?? [])];
  const assignments = args.map((argument) => secretAssignment(argument, names));
  for (const assignment of assignments) if (assignment) values.push(assignment.value);
  const secrets = searchableSecrets(values);
  return args.map((argument, index) => {
    const assignment = assignments[index];
    if (assignment) return `${assignment.prefix}${REDACTED}`;
    return replaceAll(argument, secrets);
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
