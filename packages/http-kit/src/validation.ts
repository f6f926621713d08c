import type { Context } from "hono";
import type { z } from "zod";
import { HttpError } from "./http-error.ts";

/** One line per problem: `field.path: message`, so a user sees every mistake at once. */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.map(String).join(".");
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join("; ");
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
