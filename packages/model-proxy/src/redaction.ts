import { ModelTokenPattern } from "@deckhand/wire";

/** What a secret is replaced with. */
export const REDACTED = "[REDACTED]";

const anyModelToken = new RegExp(ModelTokenPattern.source, "g");

/**
 * Replaces every occurrence of each secret, and anything shaped like a scoped model token, with
 * `[REDACTED]`. Token-shaped text is caught even when its value is not known here, so a token
 * from another request cannot slip through either. Secrets shorter than 8 characters are
 * ignored: redacting them would mangle ordinary text and they protect nothing.
 */
export function redactSecrets(text: string, secrets: Iterable<string | undefined> = []): string {
  let redacted = text;
  const known = [...secrets].filter(
    (secret): secret is string => typeof secret === "string" && secret.length >= 8,
  );
  // Longest first, so a secret containing another is replaced whole.
  known.sort((left, right) => right.length - left.length);
  for (const secret of known) {
    if (redacted.includes(secret)) redacted = redacted.split(secret).join(REDACTED);
  }
  return redacted.replace(anyModelToken, REDACTED);
}

/** Redacts every string inside a JSON-like value (log fields), keeping its shape. */
export function redactValue(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === "string") return redactSecrets(value, secrets);
  if (value instanceof Error) return redactSecrets(describeError(value), secrets);
  if (Array.isArray(value)) return value.map((item) => redactValue(item, secrets));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [key, redactValue(inner, secrets)]),
    );
  }
  return value;
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
