import type { Context, MiddlewareHandler } from "hono";

/** One access-log line: only method, path, status and timing, since headers carry tokens. */
export interface RequestLogEntry {
  method: string;
  path: string;
  status: number;
  duration_ms: number;
  [field: string]: unknown;
}

/**
 * Writes one entry per request once it has been answered. `extraFields` adds what an app may
 * safely log about a request (the agent's chat id, say); it must never return a credential.
 */
export function logRequests(
  write: (entry: RequestLogEntry) => void,
  extraFields?: (context: Context) => Record<string, unknown>,
): MiddlewareHandler {
  return async (context, next) => {
    const started = performance.now();
    await next();
    write({
      ...requestLogEntry(context.req.method, context.req.path, context.res.status, started),
      ...extraFields?.(context),
    });
  };
}

/**
 * The access-log line of a request answered with `status`, begun at `started`
 * (`performance.now()`): for `logRequests` and for a handler that answers on Node's response
 * itself, ahead of the app.
 */
export function requestLogEntry(
  method: string,
  path: string,
  status: number,
  started: number,
): RequestLogEntry {
  return {
    method,
    path,
    status,
    duration_ms: Math.round((performance.now() - started) * 10) / 10,
  };
}
