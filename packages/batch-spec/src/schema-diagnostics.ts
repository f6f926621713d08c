// Turns zod's structural issues into diagnostics a person can act on: unknown fields with a
// "did you mean", missing fields, wrong types with what was expected, and for unions the
// alternative the value was closest to.
import type { z } from "zod";
import { BatchSpecSchema } from "./batch-spec-schema.ts";
import type { BatchSpecDiagnostic, FieldPath } from "./diagnostics.ts";
import type { SpecSource } from "./spec-source.ts";
import { closestMatch } from "./suggest.ts";

type Issue = z.core.$ZodIssue;
type AnySchema = z.core.$ZodType;

function definition(schema: AnySchema): { type: string } & Record<string, unknown> {
  return schema._zod.def as unknown as { type: string } & Record<string, unknown>;
}

function unwrap(schema: AnySchema): AnySchema {
  let current = schema;
  for (;;) {
    const def = definition(current);
    if (def.type === "optional" || def.type === "nullable" || def.type === "default") {
      current = def.innerType as AnySchema;
    } else {
      return current;
    }
  }
}

/** The schemas a path can lead to (several when it runs through a union). */
function schemasAt(root: AnySchema, path: FieldPath): AnySchema[] {
  let current: AnySchema[] = [root];
  for (const segment of path) {
    const next: AnySchema[] = [];
    const visit = (candidate: AnySchema): void => {
      const schema = unwrap(candidate);
      const def = definition(schema);
      if (def.type === "union") {
        for (const option of def.options as AnySchema[]) visit(option);
      } else if (def.type === "object" && typeof segment === "string") {
        const shape = def.shape as Record<string, AnySchema>;
        if (Object.hasOwn(shape, segment)) next.push(shape[segment]!);
      } else if (def.type === "array" && typeof segment === "number") {
        next.push(def.element as AnySchema);
      } else if (def.type === "record") {
        next.push(def.valueType as AnySchema);
      }
    };
    for (const schema of current) visit(schema);
    current = next;
  }
  return current;
}

/** The field names an object at `path` accepts. */
export function allowedFields(path: FieldPath): string[] {
  const fields = new Set<string>();
  const collect = (candidate: AnySchema): void => {
    const schema = unwrap(candidate);
    const def = definition(schema);
    if (def.type === "union") for (const option of def.options as AnySchema[]) collect(option);
    if (def.type === "object") for (const key of Object.keys(def.shape as object)) fields.add(key);
  };
  for (const schema of schemasAt(BatchSpecSchema, path)) collect(schema);
  return [...fields];
}

const typeNames: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "a whole number",
  boolean: "a boolean (true or false)",
  array: "a list",
  object: "a map",
  record: "a map",
  null: "null",
};

/** What a value is, in the words the messages use. */
export function describeKind(value: unknown): string {
  if (value === null || value === undefined) return "nothing (null)";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a map";
  if (typeof value === "number") return Number.isInteger(value) ? "a whole number" : "a number";
  if (typeof value === "boolean") return "a boolean";
  return "a string";
}

/** Like `describeKind`, quoting short strings so the user sees which value is meant. */
function describeValue(value: unknown): string {
  if (typeof value === "string" && value.length <= 40 && !value.includes("\n")) {
    return `the string ${JSON.stringify(value)}`;
  }
  return describeKind(value);
}

function valueAt(root: unknown, path: FieldPath): { present: boolean; value: unknown } {
  let current: unknown = root;
  for (const segment of path) {
    if (current === null || typeof current !== "object")
      return { present: false, value: undefined };
    if (!Object.hasOwn(current, segment)) return { present: false, value: undefined };
    current = (current as Record<string | number, unknown>)[segment];
  }
  return { present: true, value: current };
}

function listWords(words: readonly string[]): string {
  if (words.length <= 1) return words.join("");
  return `${words.slice(0, -1).join(", ")} or ${words[words.length - 1]}`;
}

function expectations(issues: readonly Issue[]): string[] {
  const [issue] = issues;
  if (issue === undefined) return [];
  if (issue.code === "invalid_type") return [typeNames[issue.expected] ?? issue.expected];
  if (issue.code === "invalid_value") return issue.values.map((value) => JSON.stringify(value));
  if (issue.code === "invalid_union") return issue.errors.flatMap(expectations);
  return [];
}

function depth(issues: readonly Issue[]): number {
  return Math.max(0, ...issues.map((issue) => issue.path.length));
}

function quoteHint(expected: string, value: unknown): string {
  if (expected === "string" && (typeof value === "number" || typeof value === "boolean")) {
    return `; put it in quotes ("${String(value)}") to use it as text`;
  }
  return "";
}

/**
 * A "did you mean" for a value outside a fixed set: the quoted form of an allowed number
 * (`version: "2"`), or an allowed value a typo away (`version: "v2"`, once in Sourcegraph's own
 * examples, is refused there too).
 */
function didYouMeanValue(value: unknown, allowed: readonly unknown[]): string {
  if (typeof value !== "string") return "";
  const spelled = new Map(allowed.map((option) => [String(option), option]));
  const exact = spelled.get(value);
  if (exact !== undefined) return `; did you mean ${JSON.stringify(exact)} (without quotes)?`;
  const closest = closestMatch(value, spelled.keys());
  return closest === undefined ? "" : `; did you mean ${JSON.stringify(spelled.get(closest))}?`;
}

/** Diagnostics for zod issues over `data` (the spec as parsed from YAML). */
export function schemaDiagnostics(
  issues: readonly Issue[],
  data: unknown,
  source: SpecSource,
): BatchSpecDiagnostic[] {
  const diagnostics: BatchSpecDiagnostic[] = [];
  const visit = (issue: Issue, prefix: FieldPath): void => {
    const path: FieldPath = [...prefix, ...(issue.path as (string | number)[])];
    switch (issue.code) {
      case "unrecognized_keys": {
        const allowed = allowedFields(path);
        for (const key of issue.keys) {
          const suggestion = closestMatch(key, allowed);
          const message =
            suggestion === undefined
              ? `unknown field "${key}"; remove it (allowed here: ${allowed.join(", ")})`
              : `unknown field "${key}"; did you mean "${suggestion}"?`;
          diagnostics.push(source.diagnostic([...path, key], "unknown_field", message, "key"));
        }
        return;
      }
      case "invalid_union": {
        // Follow the alternative the value got furthest into: a list of publish rules with one
        // bad rule is reported at that rule, not as "not a boolean".
        const deepest = Math.max(...issue.errors.map(depth));
        if (deepest > 0) {
          const candidates = issue.errors.filter((errors) => depth(errors) === deepest);
          const best = candidates.reduce((left, right) =>
            right.length < left.length ? right : left,
          );
          for (const inner of best) visit(inner, path);
          return;
        }
        const { value } = valueAt(data, path);
        const expected = listWords(expectations([issue])) || "another value";
        diagnostics.push(
          source.diagnostic(
            path,
            "invalid_type",
            `expected ${expected}, got ${describeValue(value)}`,
            "value",
          ),
        );
        return;
      }
      case "invalid_type": {
        const { present, value } = valueAt(data, path);
        if (!present) {
          const field = path[path.length - 1];
          diagnostics.push(
            source.diagnostic(
              path,
              "missing_field",
              `missing required field "${String(field)}"; add it`,
              "key",
            ),
          );
          return;
        }
        const expected = typeNames[issue.expected] ?? issue.expected;
        diagnostics.push(
          source.diagnostic(
            path,
            "invalid_type",
            `expected ${expected}, got ${describeValue(value)}${quoteHint(issue.expected, value)}`,
            "value",
          ),
        );
        return;
      }
      case "invalid_value": {
        const { value } = valueAt(data, path);
        const options = listWords(issue.values.map((option) => JSON.stringify(option)));
        diagnostics.push(
          source.diagnostic(
            path,
            "invalid_value",
            `must be ${options}; got ${JSON.stringify(value)}${didYouMeanValue(value, issue.values)}`,
            "value",
          ),
        );
        return;
      }
      case "invalid_format": {
        const { value } = valueAt(data, path);
        if (path.length === 1 && path[0] === "name") {
          diagnostics.push(
            source.diagnostic(
              path,
              "invalid_name",
              `the batch change name may contain only letters, digits, "_", "." and "-" (no spaces or newlines); got ${JSON.stringify(value)}`,
              "value",
            ),
          );
          return;
        }
        diagnostics.push(
          source.diagnostic(
            path,
            "invalid_value",
            `invalid value ${JSON.stringify(value)}`,
            "value",
          ),
        );
        return;
      }
      case "too_small": {
        const { value } = valueAt(data, path);
        const message =
          issue.origin === "string"
            ? "must not be empty"
            : `must be at least ${String(issue.minimum)}; got ${JSON.stringify(value)}`;
        diagnostics.push(source.diagnostic(path, "invalid_value", message, "value"));
        return;
      }
      default:
        diagnostics.push(source.diagnostic(path, "invalid_value", issue.message, "value"));
    }
  };
  for (const issue of issues) visit(issue, []);
  return diagnostics;
}
