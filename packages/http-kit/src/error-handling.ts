import type { ErrorResponse } from "@deckhand/wire";
import type { Context, Hono } from "hono";
import { HttpError } from "./http-error.ts";

export interface ErrorHandlingOptions {
  /** Called with every unexpected error (not an HttpError) before the 500 is sent. */
  onUnexpectedError?: (error: unknown, context: Context) => void;
  /** Scrubs every error message before it is sent (secrets a bad request echoed back). */
  redact?: (message: string) => string;
}

/**
 * Turns any thrown value into `{error: {code, message}}`. Unexpected errors become a 500
 * whose message never includes the error's own text, which could carry secrets.
 */
export function errorResponse(
  context: Context,
  error: unknown,
  options: ErrorHandlingOptions = {},
): Response {
  const answer = errorAnswer(error, {
    ...(options.redact ? { redact: options.redact } : {}),
    onUnexpectedError: (unexpected) => options.onUnexpectedError?.(unexpected, context),
  });
  return context.json(answer.body, answer.status);
}

/**
 * The status and body `errorResponse` answers an error with, for a handler that writes Node's
 * response itself: an HttpError's own, anything else a 500 that says nothing of the error.
 */
export function errorAnswer(
  error: unknown,
  options: {
    onUnexpectedError?: (error: unknown) => void;
    redact?: (message: string) => string;
  } = {},
): { status: HttpError["status"] | 500; body: ErrorResponse } {
  // isInstance, not instanceof: an HttpError from a second copy of http-kit (another bundle) is
  // still the answer its thrower chose, not an unexpected error.
  if (HttpError.isInstance(error)) {
    const message = options.redact ? options.redact(error.message) : error.message;
    return { status: error.status, body: { error: { code: error.code, message } } };
  }
  options.onUnexpectedError?.(error);
  return {
    status: 500,
    body: {
      error: { code: "internal", message: "internal error; the server log has the details" },
    },
  };
}

/** Installs the shared error and not-found handlers on an app. */
export function installErrorHandling(app: Hono, options: ErrorHandlingOptions = {}): void {
  app.onError((error, context) => errorResponse(context, error, options));
  app.notFound((context) => {
    const body: ErrorResponse = {
      error: {
        code: "not_found",
        message: (options.redact ?? ((text: string) => text))(
          `no route for ${context.req.method} ${context.req.path}`,
        ),
      },
    };
    return context.json(body, 404);
  });
}
