import type { Context } from "hono";
import type { z } from "zod";
import { HttpError } from "./http-error.ts";

type Issue = z.core.$ZodIssue;
type PathSegment = Issue["path"][number];

/** True for an issue that only says the input is not of a union alternative's type at all. */
function isTypeMismatch(issue: Issue): boolean {
  return issue.code === "invalid_type" && issue.path.length === 0;
}

/**
 * The messages of one issue, each with its full path. Zod wraps what went wrong with a record key
 * or a map element, and every alternative of a failed union, in a generic outer issue ("Invalid
 * key in record"); the useful text is in the nested issues, so those are described instead.
 */
function describeIssue(issue: Issue, parentPath: readonly PathSegment[]): string[] {
  const path = [...parentPath, ...issue.path];
  if (
    (issue.code === "invalid_key" || issue.code === "invalid_element") &&
    issue.issues.length > 0
  ) {
    return issue.issues.flatMap((inner) => describeIssue(inner, path));
  }
  if (issue.code === "invalid_union" && issue.errors.length > 0) {
    // An alternative the input is not even the type of says nothing the user needs; when only
    // one alternative comes close, its problems are the ones to fix.
    const close = issue.errors.filter((alternative) => !alternative.every(isTypeMismatch));
    if (close.length === 1) return close[0]!.flatMap((inner) => describeIssue(inner, path));
    if (close.length === 0) {
      const expected = new Set(
        issue.errors
          .flat()
          .flatMap((inner) => (inner.code === "invalid_type" ? [inner.expected] : [])),
      );
      return [withPath(path, `Invalid input: expected ${[...expected].join(" or ")}`)];
    }
    const alternatives = close.map(
      (alternative) => `(${alternative.flatMap((inner) => describeIssue(inner, [])).join("; ")})`,
    );
    return [withPath(path, `${issue.message}, fitting none of: ${alternatives.join(" or ")}`)];
  }
  return [withPath(path, issue.message)];
}

function withPath(path: readonly PathSegment[], message: string): string {
  return path.length > 0 ? `${path.map(String).join(".")}: ${message}` : message;
}

/** One line per problem: `field.path: message`, so a user sees every mistake at once. */
export function describeZodError(error: z.ZodError): string {
  const lines = error.issues.flatMap((issue) => describeIssue(issue, []));
  return [...new Set(lines)].join("; ");
}

/** Parses and validates a JSON request body; 400 `invalid_json` or `invalid_request` otherwise. */
export async function parseJsonBody<Schema extends z.ZodType>(
  context: Context,
  schema: Schema,
): Promise<z.output<Schema>> {
  const text = await context.req.text();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new HttpError(
      400,
      "invalid_json",
      `request body is not valid JSON (${(error as Error).message}); send a JSON object with Content-Type: application/json`,
      { cause: error },
    );
  }
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new HttpError(400, "invalid_request", describeZodError(result.error), {
      cause: result.error,
    });
  }
  return result.data;
}

/** Validates the query string; 400 `invalid_request` naming each bad parameter otherwise. */
export function parseQuery<Schema extends z.ZodType>(
  context: Context,
  schema: Schema,
): z.output<Schema> {
  const result = schema.safeParse(context.req.query());
  if (!result.success) {
    throw new HttpError(400, "invalid_request", describeZodError(result.error), {
      cause: result.error,
    });
  }
  return result.data;
}
