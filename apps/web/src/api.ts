import { createServerClient, ServerApiError } from "@deckhand/server-client";
import { reportTrouble } from "./connection.ts";
import { storedToken } from "./token.ts";

export { storedToken, storeToken } from "./token.ts";

/**
 * What a request that got no answer says, instead of the browser's "Failed to fetch": a read
 * comes back by itself, a change was not made.
 */
export function unreachableMessage(method: string): string {
  return method === "GET"
    ? "The server cannot be reached right now; this loads again once it is back."
    : "Not done: the server cannot be reached right now. Try again once it is back (Deckhand reconnects on its own).";
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

/**
 * The server API on this page's origin, with the stored token as a bearer token. A 401 asks for
 * a token; no answer at all, or a 503, may mean the server is away: the banner checks, and the
 * page loads again once it is back, while the caller says what was not done.
 *
 * Answers are not checked against their schemas here: the UI reads what its own server sends,
 * and checking a long chat's messages or a large diff again on the page's one thread would cost
 * the responsiveness its budgets hold it to.
 */
export const server = createServerClient({
  token: storedToken,
  validateAnswers: false,
  onError: (error, request) => {
    if (error.status === 401) announceUnauthorized();
    if (error.status === 0 || error.status === 503) reportTrouble();
    if (error.status !== 0) return undefined;
    return new ServerApiError(0, "unreachable", unreachableMessage(request.method), {
      cause: error,
    });
  },
});

/** One helper turns any thrown value into text, in the browser as on the server. */
export { errorMessage as messageOf } from "@deckhand/errors";
