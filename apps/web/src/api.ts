import {
  type RouteResult,
  type ServerOperationId,
  type ServerRouteOf,
  WireHeader,
} from "@deckhand/wire";
import { reportTrouble } from "./connection.ts";
import { storedToken } from "./token.ts";

export { storedToken, storeToken } from "./token.ts";

/** What a route answers, as `@deckhand/wire` describes it: `Answer<"listBatchRuns">`. */
export type Answer<Id extends ServerOperationId> = RouteResult<ServerRouteOf<Id>>;

/**
 * What a request that got no answer says, instead of the browser's "Failed to fetch": a read
 * comes back by itself, a change was not made.
 */
export function unreachableMessage(method: string): string {
  return method === "GET"
    ? "The server cannot be reached right now; this loads again once it is back."
    : "Not done: the server cannot be reached right now. Try again once it is back (Deckhand reconnects on its own).";
}

/** An API answer other than 2xx, with the server's own message (its `{error: {code, message}}`). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

type UnauthorizedListener = () => void;
const unauthorizedListeners = new Set<UnauthorizedListener>();

/** Called whenever the server answers 401: the UI then asks for a token. */
export function onUnauthorized(listener: UnauthorizedListener): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

export function announceUnauthorized(): void {
  for (const listener of unauthorizedListeners) listener();
}

export interface ApiOptions {
  /** Extra request headers (`If-Match`, say). */
  headers?: Record<string, string>;
  /** The body's media type; JSON by default. */
  contentType?: string;
}

/** Sends a request to the server API on this origin, with the stored token as a bearer token. */
async function send(
  method: string,
  path: string,
  body: unknown,
  options: ApiOptions,
): Promise<{ ok: boolean; status: number; text: string }> {
  const headers: Record<string, string> = { ...options.headers };
  const token = storedToken();
  if (token) headers[WireHeader.authorization] = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = options.contentType ?? "application/json";
  let response: Response;
  let text: string;
  try {
    response = await fetch(path, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    text = await response.text();
  } catch {
    // No answer at all (the browser's "Failed to fetch"): the server is away. The banner says
    // so and the page reloads what it shows once it is back; the caller says what was not done.
    reportTrouble();
    throw new ApiError(0, "unreachable", unreachableMessage(method));
  }
  if (!response.ok) {
    if (response.status === 401) announceUnauthorized();
    if (response.status === 503) reportTrouble();
    let error: { code?: string; message?: string } | undefined;
    try {
      error = (JSON.parse(text) as { error?: { code?: string; message?: string } } | null)?.error;
    } catch {
      error = undefined;
    }
    throw new ApiError(
      response.status,
      error?.code ?? "http_error",
      error?.message ?? `${method} ${path} answered ${response.status}`,
    );
  }
  return { ok: response.ok, status: response.status, text };
}

/** Calls a JSON route of the server API. */
export async function api<Body>(
  method: string,
  path: string,
  body?: unknown,
  options: ApiOptions = {},
): Promise<Body> {
  const { text } = await send(method, path, body, options);
  return (text ? JSON.parse(text) : null) as Body;
}

/** Calls a route that answers plain text (a provider's diagnostic, say). */
export async function apiText(path: string, options: ApiOptions = {}): Promise<string> {
  return (await send("GET", path, undefined, options)).text;
}

/** One helper turns any thrown value into text, in the browser as on the server. */
export { errorMessage as messageOf } from "@deckhand/errors";
