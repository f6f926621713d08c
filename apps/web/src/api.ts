import {
  type RouteResult,
  type ServerOperationId,
  type ServerRouteOf,
  WireHeader,
} from "@deckhand/wire";

/** What a route answers, as `@deckhand/wire` describes it: `Answer<"listBatchRuns">`. */
export type Answer<Id extends ServerOperationId> = RouteResult<ServerRouteOf<Id>>;

/** Where the admin (or API) token lives: this tab only, gone when the tab closes. */
const TOKEN_KEY = "deckhand.token";

export function storedToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function storeToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
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
  const response = await fetch(path, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  if (!response.ok) {
    if (response.status === 401) announceUnauthorized();
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
