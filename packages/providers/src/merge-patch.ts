/** A JSON value as JSON.parse returns it. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Applies a JSON merge patch (RFC 7396): objects merge key by key, `null` removes a key, and any
 * other value (arrays included) replaces what was there. The target is not modified.
 */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    // defineProperty, not assignment: a "__proto__" key from JSON.parse must stay a plain key.
    else
      Object.defineProperty(result, key, {
        value: applyMergePatch(result[key], value),
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  return result;
}
