import { createHash, timingSafeEqual } from "node:crypto";
import { WireHeader } from "@deckhand/wire";
import type { MiddlewareHandler } from "hono";
import { HttpError } from "./http-error.ts";

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/**
 * Compares in constant time. Hashing first gives both sides the same length, so neither the
 * comparison nor an early length check tells an attacker how much of the token was right.
 */
export function tokenMatches(expected: string, presented: string): boolean {
  return timingSafeEqual(digest(expected), digest(presented));
}

/** The token of an `Authorization: Bearer <token>` header, or null. */
export function bearerTokenOf(header: string | undefined): string | null {
  const match = header ? /^Bearer\s+(.+)$/i.exec(header) : null;
  return match ? match[1]!.trim() : null;
}

export interface BearerAuthOptions {
  /** The token every request must present. */
  token?: string;
  /**
   * Decides whether a presented token is good, for servers with more than one (stored API
   * tokens); it runs only when `token` does not match. Must compare in constant time.
   */
  verify?: (presented: string) => boolean | Promise<boolean>;
  /** How the 401 message names the token, e.g. "admin token". */
  tokenName: string;
  /** The env variable the operator set the token in, named in the 401 message. */
  envName: string;
  /** Only requests whose path this accepts need the token; all of them by default. */
  appliesTo?: (path: string) => boolean;
}

/**
 * Requires `Authorization: Bearer <token>`: 401 `unauthorized` with `WWW-Authenticate: Bearer`
 * otherwise, and a message that never echoes what was sent.
 */
export function bearerAuth(options: BearerAuthOptions): MiddlewareHandler {
  return async (context, next) => {
    if (options.appliesTo && !options.appliesTo(context.req.path)) return next();
    const presented = bearerTokenOf(context.req.header(WireHeader.authorization));
    const accepted =
      presented !== null &&
      ((options.token !== undefined && tokenMatches(options.token, presented)) ||
        (options.verify !== undefined && (await options.verify(presented))));
    if (!accepted) {
      context.header("WWW-Authenticate", "Bearer");
      throw new HttpError(
        401,
        "unauthorized",
        `missing or wrong ${options.tokenName}; send "${WireHeader.authorization}: Bearer <token>" with the token from ${options.envName}`,
      );
    }
    await next();
  };
}
