// The small router the fake code hosts share: routes as `/repos/:owner/:repo/pulls/*rest`
// patterns, matched against the decoded path segments.
import type { FakeCodeHostModel } from "./fake-code-host-model.ts";

export interface FakeAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface FakeRouteRequest {
  method: string;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
}

export interface FakeRouteContext {
  model: FakeCodeHostModel;
  /** The host's web address, for the URLs answers carry. */
  webUrl: string;
}

export interface FakeRoute {
  method: string;
  pattern: string;
  handle(request: FakeRouteRequest, context: FakeRouteContext): FakeAnswer;
}

export function route(method: string, pattern: string, handle: FakeRoute["handle"]): FakeRoute {
  return { method, pattern, handle };
}

/** Matches a pattern to a raw path; each segment is decoded, `*name` takes the rest. */
export function matchRoute(pattern: string, path: string): Record<string, string> | undefined {
  const wanted = pattern.split("/").filter((part) => part !== "");
  const given = path
    .split("/")
    .filter((part) => part !== "")
    .map((part) => decodeURIComponent(part));
  const params: Record<string, string> = {};
  for (let index = 0; index < wanted.length; index += 1) {
    const part = wanted[index]!;
    if (part.startsWith("*")) {
      if (index >= given.length) return undefined;
      params[part.slice(1)] = given.slice(index).join("/");
      return params;
    }
    const value = given[index];
    if (value === undefined) return undefined;
    if (part.startsWith(":")) params[part.slice(1)] = value;
    else if (part !== value) return undefined;
  }
  return wanted.length === given.length ? params : undefined;
}

export const notFound = (message = "Not Found"): FakeAnswer => ({
  status: 404,
  body: { message },
});

export function fieldOf(body: unknown, name: string): unknown {
  return typeof body === "object" && body !== null
    ? (body as Record<string, unknown>)[name]
    : undefined;
}

export function stringField(body: unknown, name: string): string | undefined {
  const value = fieldOf(body, name);
  return typeof value === "string" ? value : undefined;
}
