import type { MiddlewareHandler } from "hono";

/** The policy of a server that serves no pages, only JSON: nothing may load, nothing may frame it. */
export const NO_CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'";

/**
 * Sets the headers that keep a browser from misusing what the server answers, on every answer:
 * `contentSecurityPolicy` (what a page of the server may load and who may frame it; an answer
 * that set its own, with a nonce say, keeps it),
 * `X-Content-Type-Options: nosniff` (a JSON answer is never run as a script or style),
 * `Referrer-Policy: no-referrer` (no URL of the server leaks to a link's target), `X-Frame-Options:
 * DENY` for browsers that predate `frame-ancestors`, and `Cross-Origin-Resource-Policy` and
 * `Cross-Origin-Opener-Policy: same-origin`, so another site's page can neither embed an answer
 * nor keep a handle on a window of the server's.
 */
export function securityHeaders(contentSecurityPolicy: string): MiddlewareHandler {
  const apply = securityHeaderSetter(contentSecurityPolicy);
  return async (context, next) => {
    await next();
    try {
      apply(context.res.headers);
    } catch {
      // An answer passed through from fetch (a forwarded upstream's) has immutable headers.
      const response = new Response(context.res.body, context.res);
      apply(response.headers);
      context.res = response;
    }
  };
}

/** Where `securityHeaders` sets its headers: a web `Headers` or a Node response's head. */
export interface HeaderTarget {
  has(name: string): boolean;
  set(name: string, value: string): void;
}

/**
 * Sets the headers `securityHeaders` sets, on any answer's head: the same rules for a handler
 * that writes Node's response itself (the model proxy's streams) as for the app's answers.
 */
export function securityHeaderSetter(
  contentSecurityPolicy: string,
): (target: HeaderTarget) => void {
  const headers: [string, string][] = [
    ["Content-Security-Policy", contentSecurityPolicy],
    ["X-Content-Type-Options", "nosniff"],
    ["Referrer-Policy", "no-referrer"],
    ["X-Frame-Options", "DENY"],
    ["Cross-Origin-Resource-Policy", "same-origin"],
    ["Cross-Origin-Opener-Policy", "same-origin"],
  ];
  return (target) => {
    for (const [name, value] of headers) {
      if (name === "Content-Security-Policy" && target.has(name)) continue;
      target.set(name, value);
    }
  };
}
