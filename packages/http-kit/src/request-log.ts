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
      method: context.req.method,
      path: context.req.path,
      status: context.res.status,
      duration_ms: Math.round((performance.now() - started) * 10) / 10,
      ...extraFields?.(context),
    });
  };
}
