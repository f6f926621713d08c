// One client of the server API, derived from the route table in @deckhand/wire the way tRPC's
// client is derived from its router: a member per operation id, whose input (path parameters,
// query, body) and answer are typed from the route's own schemas. The table is data at run time
// too, so the members are built from it rather than guessed by a Proxy: a route added to the
// table is a method here, and a renamed one is a compile error at every call site.
//
// The members are built from the table's index (`@deckhand/wire/no-schemas`: each route's method
// and path, without its schemas), and the table itself, whose schemas check every answer, is
// loaded when the first request is out: building every schema of the API costs more than a
// short command's request (tens of milliseconds in a bundle, a few hundred from the sources),
// and this way it is done while the server works on the answer.
import type {
  ErrorResponseSchema,
  PathParameterNames,
  ServerOperationId,
  ServerRoute,
  ServerRouteOf,
} from "@deckhand/wire";
import {
  type ServerRouteIndexEntry,
  serverPath,
  serverRouteIndex,
  WireHeader,
} from "@deckhand/wire/no-schemas";
import type { z } from "zod";
import { answeredError, jsonOf, ServerApiError, unreachableReason } from "./server-api-error.ts";

/** A route's path parameters by name; none for a path without any. */
export type RouteParams<Route extends ServerRoute> = [PathParameterNames<Route["path"]>] extends [
  never,
]
  ? { params?: never }
  : { params: { [Name in PathParameterNames<Route["path"]>]: string } };

/**
 * A route's query as its handler reads it (`{wait: true, cursor: 5}`); it is sent as text
 * (`?wait=true&cursor=5`), which the route's schema reads back into the same values.
 */
export type RouteQuery<Route extends ServerRoute> = Route extends {
  query: infer Query extends z.ZodType;
}
  ? Record<never, never> extends z.output<Query>
    ? { query?: z.output<Query> }
    : { query: z.output<Query> }
  : { query?: never };

/** A route's request body, as the caller writes it (its schema's input). */
export type RouteBody<Route extends ServerRoute> = Route extends {
  body: infer Body extends z.ZodType;
}
  ? { body: z.input<Body> }
  : { body?: never };

/** Where a route is: its path parameters and query. */
export type RouteLocation<Route extends ServerRoute> = RouteParams<Route> & RouteQuery<Route>;

/** Everything a call of a route sends. */
export type RouteCallInput<Route extends ServerRoute> = RouteLocation<Route> & RouteBody<Route>;

/** What a call of a route answers: its success schema's value, text for a text route, null for 204. */
export type RouteAnswer<Route extends ServerRoute> = Route["success"]["schema"] extends z.ZodType
  ? z.output<Route["success"]["schema"]>
  : null;

/** A browser's cache modes (Node's fetch types have none: it keeps no HTTP cache). */
export type CacheMode =
  | "default"
  | "no-store"
  | "reload"
  | "no-cache"
  | "force-cache"
  | "only-if-cached";

/** Per call: more headers (`If-Match`), a signal that aborts it, the browser's cache mode. */
export interface CallOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  cache?: CacheMode;
  /**
   * Called once the request is on its way (with the Node transport, once it is written to its
   * socket): work that holds the thread, such as loading modules, is best started then, while
   * the server works, rather than before the request leaves.
   */
  onSent?: () => void;
}

/** One request as a transport sends it. */
export interface TransportRequest {
  method: string;
  /** The absolute URL (or, in a page, one relative to its origin). */
  url: string;
  /** Lower-case names. */
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  cache?: CacheMode;
  /** To be called once the request is on its way (see `CallOptions.onSent`). */
  onSent(): void;
}

/** A transport's answer: its status and its body as text. */
export interface TransportAnswer {
  status: number;
  text: string;
}

/**
 * Sends one request; throws (with the network error as its `cause`) when there is no answer.
 * `fetch` by default; `@deckhand/server-client/node-http` has one over `node:http`.
 */
export type ServerTransport = (request: TransportRequest) => Promise<TransportAnswer>;

/** A route's URL (a `ws:` one for a WebSocket route when the client has an absolute base URL). */
export interface RouteLink<Route extends ServerRoute> {
  url: Record<never, never> extends RouteLocation<Route>
    ? (location?: RouteLocation<Route>) => string
    : (location: RouteLocation<Route>) => string;
}

/** Calls a route; the input may be left out when the route needs none. */
export type RouteCall<Route extends ServerRoute> = (Record<
  never,
  never
> extends RouteCallInput<Route>
  ? (input?: RouteCallInput<Route>, options?: CallOptions) => Promise<RouteAnswer<Route>>
  : (input: RouteCallInput<Route>, options?: CallOptions) => Promise<RouteAnswer<Route>>) &
  RouteLink<Route>;

/**
 * The client: a member per operation id of the route table. A WebSocket route has only its URL
 * (the stream is read by whoever opens it).
 */
export type ServerClient = {
  readonly [Id in ServerOperationId]: ServerRouteOf<Id> extends { websocket: true }
    ? RouteLink<ServerRouteOf<Id>>
    : RouteCall<ServerRouteOf<Id>>;
};

/** One request, as `onError` sees it. */
export interface ServerRequest {
  operationId: ServerOperationId;
  /** `GET`, `POST`, ... */
  method: string;
  /** The path with its query, without the base URL. */
  path: string;
}

export interface ServerClientOptions {
  /** The server, e.g. `http://127.0.0.1:7420`; empty (the default) for the page's own origin. */
  baseUrl?: string;
  /** The bearer token, or a function that reads it for each request. */
  token?: string | null | (() => string | null | undefined);
  /** The fetch that sends; the global one by default (a test passes its own). */
  fetch?: typeof fetch;
  /** What sends instead of fetch, when given (e.g. `nodeHttpTransport`). */
  transport?: ServerTransport;
  /**
   * Whether each answer is checked with its route's schema (the default); one that does not fit
   * is an `unexpected_answer`. Unchecked, the answer is the JSON the server sent.
   */
  validateAnswers?: boolean;
  /** Sees each error before it is thrown and may return another to throw in its place. */
  onError?: (error: ServerApiError, request: ServerRequest) => ServerApiError | undefined;
}

/** What a call gets at run time: the typed input, seen through the route's general shape. */
interface LooseInput {
  params?: Record<string, string>;
  query?: Record<string, unknown>;
  body?: unknown;
}

/** The route table's schemas, by operation id, and the error answer's. */
interface RouteSchemas {
  routes: ReadonlyMap<string, ServerRoute>;
  errorResponse: typeof ErrorResponseSchema;
}

let routeSchemasLoading: Promise<RouteSchemas> | undefined;

/** Loads the route table once per process (or page); a failed load is tried again next time. */
function loadRouteSchemas(): Promise<RouteSchemas> {
  routeSchemasLoading ??= import("@deckhand/wire").then(
    (wire) => ({
      routes: new Map(
        (wire.serverRoutes as readonly ServerRoute[]).map((route) => [route.operationId, route]),
      ),
      errorResponse: wire.ErrorResponseSchema,
    }),
    (error: unknown) => {
      routeSchemasLoading = undefined;
      throw error;
    },
  );
  return routeSchemasLoading;
}

/** The path and query of a route for an input; query values are sent as text. */
function locate(route: ServerRouteIndexEntry, input: LooseInput): string {
  const path = serverPath(route.path, input.params ?? {});
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(input.query ?? {})) {
    if (value !== undefined) query.set(name, String(value));
  }
  const search = query.toString();
  return search === "" ? path : `${path}?${search}`;
}

function isJsonMediaType(contentType: string | undefined): boolean {
  return contentType === undefined || /[/+]json\b/.test(contentType);
}

/** The transport over a fetch: its request is on its way once fetch is called. */
function fetchTransport(send: typeof fetch): ServerTransport {
  return async (request) => {
    const init: RequestInit & { cache?: CacheMode } = {
      method: request.method,
      headers: request.headers,
    };
    if (request.body !== undefined) init.body = request.body;
    if (request.signal !== undefined) init.signal = request.signal;
    if (request.cache !== undefined) init.cache = request.cache;
    const answered = send(request.url, init);
    // Fetch says nothing when the request leaves; in a browser it leaves from another thread.
    request.onSent();
    const response = await answered;
    return { status: response.status, text: await response.text() };
  };
}

/** Builds the client from the route table. */
export function createServerClient(options: ServerClientOptions = {}): ServerClient {
  const baseUrl = (options.baseUrl ?? "").replace(/\/+$/, "");
  // Read at each call, so a test's stubbed global fetch is the one used, and called unbound:
  // a browser's fetch refuses to be called as a method of another object.
  const send: ServerTransport =
    options.transport ?? fetchTransport(options.fetch ?? ((input, init) => fetch(input, init)));
  const validate = options.validateAnswers ?? true;
  const where =
    baseUrl !== ""
      ? baseUrl
      : ((globalThis as { location?: { origin?: string } }).location?.origin ?? "this origin");

  const tokenNow = (): string | null | undefined =>
    typeof options.token === "function" ? options.token() : options.token;

  const fail = (error: ServerApiError, request: ServerRequest): ServerApiError =>
    options.onError?.(error, request) ?? error;

  const unexpected = (request: ServerRequest, status: number, detail: string) =>
    new ServerApiError(
      status,
      "unexpected_answer",
      `the server at ${where} answered ${request.method} ${request.path} with something that is not a Deckhand API answer (${detail}); is it a Deckhand server of the same version?`,
    );

  /** The answer's value, for a success status or one the route answers with its schema too. */
  const answerOf = (
    route: ServerRoute,
    request: ServerRequest,
    status: number,
    text: string,
    errorResponse: typeof ErrorResponseSchema,
  ): unknown => {
    const schema = route.success.schema;
    if (schema === null) return null;
    let value: unknown = text;
    if (isJsonMediaType(route.success.contentType)) {
      value = text === "" ? null : jsonOf(text);
      if (value === undefined) throw unexpected(request, status, "not JSON");
      if (status !== route.success.status && errorResponse.safeParse(value).success) {
        throw answeredError(request, status, text, errorResponse);
      }
    }
    if (!validate) return value;
    const checked = schema.safeParse(value);
    if (checked.success) return checked.data;
    const issue = checked.error.issues[0];
    throw unexpected(
      request,
      status,
      issue === undefined ? "invalid" : `${issue.path.join(".") || "the body"}: ${issue.message}`,
    );
  };

  const call = async (
    entry: ServerRouteIndexEntry,
    input: LooseInput,
    callOptions: CallOptions,
  ): Promise<unknown> => {
    const request: ServerRequest = {
      operationId: entry.operationId as ServerOperationId,
      method: entry.method.toUpperCase(),
      path: locate(entry, input),
    };
    // A plain record, not `Headers`: in Node that class is undici's, which a transport other
    // than fetch need not load.
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(callOptions.headers ?? {})) {
      headers[name.toLowerCase()] = value;
    }
    const token = tokenNow();
    if (token) headers[WireHeader.authorization.toLowerCase()] = `Bearer ${token}`;
    // Built while the request is out (loading them holds the thread, so not before it has
    // left); awaited once the answer is in.
    let schemas: Promise<RouteSchemas> | undefined;
    const sending: TransportRequest = {
      method: request.method,
      url: `${baseUrl}${request.path}`,
      headers,
      onSent: () => {
        if (schemas !== undefined) return;
        schemas = loadRouteSchemas();
        schemas.catch(() => {});
        callOptions.onSent?.();
      },
    };
    if (entry.body) {
      // The server refuses a body it reads as JSON unless it is labelled so (415).
      headers["content-type"] = entry.bodyContentType ?? "application/json";
      sending.body = JSON.stringify(input.body);
    }
    if (callOptions.signal !== undefined) sending.signal = callOptions.signal;
    if (callOptions.cache !== undefined) sending.cache = callOptions.cache;
    let response: TransportAnswer;
    try {
      // A transport that throws at once is a rejection like any other.
      response = await (async () => send(sending))();
    } catch (error) {
      if (callOptions.signal?.aborted) throw error;
      const reason = unreachableReason(error);
      throw fail(
        new ServerApiError(
          0,
          "unreachable",
          `cannot reach the Deckhand server at ${where} (${reason})`,
          {
            cause: error,
          },
        ),
        request,
      );
    }
    // A transport that never said the request left (or an answer before it did) loads them now.
    sending.onSent();
    const { routes, errorResponse } = await (schemas ?? loadRouteSchemas());
    const { status, text } = response;
    const route = routes.get(entry.operationId);
    if (route === undefined) {
      throw new Error(`the route table has no ${entry.operationId}: rebuild @deckhand/wire`);
    }
    const alsoAnswered = route.success.alsoAnswers?.[status] !== undefined;
    const ok = status >= 200 && status <= 299;
    if (!ok && !alsoAnswered) {
      throw fail(answeredError(request, status, text, errorResponse), request);
    }
    try {
      return answerOf(route, request, status, text, errorResponse);
    } catch (error) {
      if (error instanceof ServerApiError) throw fail(error, request);
      throw error;
    }
  };

  const client: Record<string, unknown> = {};
  for (const route of serverRouteIndex) {
    const url = (location: LooseInput = {}) =>
      `${route.websocket ? baseUrl.replace(/^http/, "ws") : baseUrl}${locate(route, location)}`;
    client[route.operationId] = route.websocket
      ? { url }
      : Object.assign(
          (input: LooseInput = {}, callOptions: CallOptions = {}) =>
            call(route, input, callOptions),
          { url },
        );
  }
  return client as ServerClient;
}
