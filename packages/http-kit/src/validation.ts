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

/** How deep a request's JSON may nest; no Deckhand request comes near it. */
export const MAX_JSON_DEPTH = 64;

/**
 * The deepest nesting of arrays and objects in a JSON text, counted without recursion (and
 * without parsing) so that a hostile 50,000-deep body cannot overflow the stack of whatever
 * walks the parsed value later. Brackets inside strings do not count.
 */
export function jsonDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c) index++;
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) inString = true;
    else if (code === 0x5b || code === 0x7b) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (code === 0x5d || code === 0x7d) depth--;
  }
  return deepest;
}

/** What is wrong with a string no Deckhand store can keep as it was sent, or null. */
function unusableTextProblem(text: string): string | null {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code === 0) {
      return "contains a NUL character (U+0000), which text fields cannot hold; remove it";
    }
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        index++;
        continue;
      }
    }
    if (code >= 0xd800 && code <= 0xdfff) {
      return `contains a lone surrogate (U+${code.toString(16).toUpperCase()}), which is not Unicode text; send valid UTF-16 pairs or UTF-8`;
    }
  }
  return null;
}

/**
 * The one check for text Deckhand cannot store: every string and object key in `value` (a parsed
 * body, the query or the path parameters), walked without recursion. PostgreSQL refuses NUL in
 * text ("invalid byte sequence for encoding UTF8"), and a lone surrogate cannot be encoded as
 * UTF-8 at all (drivers silently turn it into U+FFFD), so both are refused up front with a 400
 * naming the field, as `where` says where the value came from.
 */
export function refuseUnusableText(value: unknown, where: string): void {
  const pending: { value: unknown; path: string }[] = [{ value, path: "" }];
  while (pending.length > 0) {
    const { value: current, path } = pending.pop()!;
    if (typeof current === "string") {
      const problem = unusableTextProblem(current);
      if (problem !== null) {
        throw new HttpError(400, "invalid_request", `${path || where}: ${problem}`);
      }
    } else if (Array.isArray(current)) {
      current.forEach((item, index) => {
        pending.push({ value: item, path: path ? `${path}.${index}` : String(index) });
      });
    } else if (current !== null && typeof current === "object") {
      for (const [key, item] of Object.entries(current)) {
        const problem = unusableTextProblem(key);
        if (problem !== null) {
          throw new HttpError(
            400,
            "invalid_request",
            `${path || where}: a key ${problem.replace(/^contains/, "that contains")}`,
          );
        }
        pending.push({ value: item, path: path ? `${path}.${key}` : key });
      }
    }
  }
}

/** The media type a JSON body is sent as unless a route takes others too. */
export const JSON_MEDIA_TYPE = "application/json";

/** A Content-Type header's media type, lower case and without parameters ("" when none). */
export function mediaTypeOf(header: string | undefined): string {
  return (header ?? "").split(";")[0]!.trim().toLowerCase();
}

/**
 * Reads a JSON request body for any route, validated or not: 415 `unsupported_media_type` unless
 * it is sent as one of `mediaTypes` (`application/json` by default), 400 `invalid_json` when it
 * does not parse or nests deeper than `MAX_JSON_DEPTH`, 400 `invalid_request` when a string in
 * it cannot be stored. `allowEmpty` makes an empty body `{}`, whatever its Content-Type says.
 *
 * The media type is what keeps a web page from sending a body at all: a browser sends a
 * cross-origin request without asking the server first (CORS preflight) only as text/plain,
 * form data or a URL-encoded form, so a body the server reads as JSON must not be one of those.
 */
export async function readJsonBody(
  context: Context,
  options: { allowEmpty?: boolean; mediaTypes?: readonly string[] } = {},
): Promise<unknown> {
  // Read in full first (the body limit bounds it): an answer sent while the body is unread can
  // reach the client as a connection reset instead.
  const text = await context.req.text();
  if (options.allowEmpty && text.trim() === "") return {};
  const accepted = options.mediaTypes ?? [JSON_MEDIA_TYPE];
  const type = mediaTypeOf(context.req.header("content-type"));
  if (!accepted.includes(type)) {
    throw new HttpError(
      415,
      "unsupported_media_type",
      `send the body as JSON with "Content-Type: ${accepted.join('" or "Content-Type: ')}", not ${type === "" ? "without a Content-Type" : `as ${type}`}`,
    );
  }
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    throw new HttpError(
      400,
      "invalid_json",
      `request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels; send a flatter JSON document`,
    );
  }
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
  refuseUnusableText(value, "body");
  return value;
}

/**
 * Reads and drops the body of a request to a route that takes none, chunk by chunk without
 * keeping it, so that the answer is not cut off by a connection reset: a body left unread when
 * the answer is sent makes the server close the connection while the client may still be sending.
 */
export async function discardBody(context: Context): Promise<void> {
  const body = context.req.raw.body;
  if (body === null) return;
  for await (const _chunk of body) {
    // Nothing to keep.
  }
}

/** Parses and validates a JSON request body; 400 `invalid_json` or `invalid_request` otherwise. */
export async function parseJsonBody<Schema extends z.ZodType>(
  context: Context,
  schema: Schema,
): Promise<z.output<Schema>> {
  const value = await readJsonBody(context);
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
  const query = context.req.query();
  refuseUnusableText(query, "query");
  const result = schema.safeParse(query);
  if (!result.success) {
    throw new HttpError(400, "invalid_request", describeZodError(result.error), {
      cause: result.error,
    });
  }
  return result.data;
}

/** The route's path parameters, decoded; 400 `invalid_request` naming one that cannot be stored. */
export function parsePathParameters(context: Context): Record<string, string> {
  const parameters = context.req.param() as Record<string, string>;
  refuseUnusableText(parameters, "path");
  return parameters;
}
