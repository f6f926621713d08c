import { shellQuote } from "../coding-agent/shell-quote.ts";

// Values a template can see and produce, and how they print. Printing follows Go's fmt `%v`
// so that rendered output matches what Sourcegraph's text/template produced for the same spec.

/** Data a template can read: JSON-like values only, never functions or class instances. */
export type TemplateValue =
  | string
  | number
  | boolean
  | null
  | readonly TemplateValue[]
  | { readonly [key: string]: TemplateValue };

/** The kind of a value, for messages. */
export function kindOf(value: unknown): string {
  if (value === null || value === undefined) return "nil";
  if (Array.isArray(value)) return "list";
  if (typeof value === "object") return "map";
  return typeof value;
}

/** A plain data object: created by a literal, JSON or YAML, not a class instance or a function. */
export function isPlainObject(value: unknown): value is { readonly [key: string]: TemplateValue } {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * Reads an own field of a plain object. Inherited members (`constructor`, `__proto__`,
 * `toString`) are never visible, so a template cannot reach past the data it was given.
 */
export function ownField(value: unknown, field: string): { found: boolean; value: TemplateValue } {
  if (isPlainObject(value) && Object.hasOwn(value, field)) {
    const found = value[field];
    if (typeof found === "function") return { found: false, value: null };
    return { found: true, value: found as TemplateValue };
  }
  return { found: false, value: null };
}

/** Go's notion of truth: false, 0, nil, "" and empty lists and maps are false. */
export function isTruthy(value: TemplateValue | undefined): boolean {
  if (value === null || value === undefined) return false;
  if (typeof value === "boolean") return value;
  if (typeof value === "number") return value !== 0;
  if (typeof value === "string") return value !== "";
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object") return Object.keys(value).length > 0;
  return true;
}

const spaceSeparated = Symbol("deckhand.template.spaceSeparated");

/**
 * A list that prints as its items separated by spaces (`a b`), not as Go prints a slice
 * (`[a b]`): src-cli gives `repository.search_result_paths` a type with a `String()` method
 * (`fileMatchPathList`), which `fmt` uses, so `for f in ${{ repository.search_result_paths }}`
 * loops over the paths. It is a list for everything else (`range`, `index`, `len`, `join`).
 */
export function spaceSeparatedList(items: readonly TemplateValue[]): readonly TemplateValue[] {
  const list = [...items];
  Object.defineProperty(list, spaceSeparated, { value: true });
  return Object.freeze(list);
}

/** Whether `list` is a `spaceSeparatedList`. */
export function isSpaceSeparated(list: readonly TemplateValue[]): boolean {
  return spaceSeparated in list;
}

/**
 * Formats a value the way Go's `fmt.Sprint` does: lists as `[a b]`, maps as `map[k:v]`, and a
 * `spaceSeparatedList` as its `String()` method would.
 */
export function printValue(value: TemplateValue | undefined): string {
  if (value === null || value === undefined) return "<no value>";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value)) {
    const items = value.map(printValue).join(" ");
    return isSpaceSeparated(value) ? items : `[${items}]`;
  }
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort();
    return `map[${keys.map((key) => `${key}:${printValue(value[key])}`).join(" ")}]`;
  }
  return "<unsupported value>";
}

/**
 * Splits a shell-quoted string into words, honouring single quotes, double quotes and
 * backslashes as /bin/sh does. Returns undefined for an unterminated quote.
 */
export function shellSplit(input: string): string[] | undefined {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  for (let index = 0; index < input.length; index += 1) {
    const character = input[index]!;
    if (character === "'") {
      const close = input.indexOf("'", index + 1);
      if (close < 0) return undefined;
      word += input.slice(index + 1, close);
      index = close;
      inWord = true;
    } else if (character === '"') {
      index += 1;
      for (; index < input.length && input[index] !== '"'; index += 1) {
        const inner = input[index]!;
        if (inner === "\\" && /["\\$`\n]/.test(input[index + 1] ?? "")) {
          if (input[index + 1] !== "\n") word += input[index + 1];
          index += 1;
        } else {
          word += inner;
        }
      }
      if (index >= input.length) return undefined;
      inWord = true;
    } else if (character === "\\") {
      const next = input[index + 1];
      if (next === undefined) return undefined;
      if (next !== "\n") word += next;
      index += 1;
      inWord = true;
    } else if (/[ \t\n]/.test(character)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += character;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/**
 * True when `word` is already exactly what `shellQuote` produces for some word. This is
 * `shellquote_join`'s idempotence rule from Sourcegraph (an element already in canonical
 * quoted form, such as each of `*_files`, passes through unchanged instead of being quoted
 * twice); it is a check built on the one quoter, not a quoter of its own.
 */
export function isShellQuoted(word: string): boolean {
  const parts = shellSplit(word);
  if (parts === undefined || parts.length !== 1 || parts[0]!.includes("\u0000")) return false;
  return shellQuote(parts[0]!) === word;
}
