import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HttpError } from "./http-error.ts";

/**
 * The request body limit both Deckhand HTTP servers apply unless configured otherwise: 10 MiB.
 * The largest body the APIs take is a chat message (at most 1,000,000 characters, so at most
 * about 6 MB of JSON even when every character is escaped), and the workspace agent's file
 * writes are source files; 10 MiB leaves room for both while a client cannot make the process
 * hold hundreds of megabytes for one request.
 */
export const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;

function describeBytes(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

/**
 * Refuses a body larger than `maxBytes` with 413 `body_too_large` before it is buffered: at once
 * when Content-Length says so, otherwise as soon as the streamed body passes the limit. The
 * answer closes the connection, so the rest of the body is not read.
 */
export function limitBody(options: BodyLimitOptions): MiddlewareHandler {
  return bodyLimit({
    maxSize: options.maxBytes,
    onError: (context) => {
      context.header("Connection", "close");
      throw bodyTooLarge(options);
    },
  });
}

export interface BodyLimitOptions {
  maxBytes: number;
  /** The setting that raises the limit, named in the refusal. */
  setting?: string;
}

/**
 * The 413 `body_too_large` of a body over the limit, for `limitBody` and for a handler that
 * reads Node's request itself (its answer closes the connection too).
 */
export function bodyTooLarge(options: BodyLimitOptions): HttpError {
  const advice = options.setting
    ? `send less, or raise ${options.setting}`
    : "send less, in several requests if need be";
  return new HttpError(
    413,
    "body_too_large",
    `request body is larger than the ${describeBytes(options.maxBytes)} this server accepts; ${advice}`,
  );
}
