// What the commands that call a running server's API share: where the server is (`--server`,
// else DECKHAND_SERVER_URL, else the default listen address) and what a failed call tells the
// person at the terminal to do next.
import { SERVER_DEFAULT_LISTEN } from "@deckhand/server-app";
import type { ServerApiError } from "@deckhand/server-client";
import { WireEnv } from "@deckhand/wire";

/**
 * Where the CLI finds a running server when `--server` is not given. Only the CLI reads it, so
 * it is not a wire contract (yet); it would move to WireEnv once another component reads it.
 */
export const SERVER_URL_ENV = "DECKHAND_SERVER_URL";

/**
 * The server's URL without a trailing slash; `invalid` builds the usage error when what was given
 * is not an http(s) URL.
 */
export function serverUrlOf(
  flag: string | undefined,
  env: Record<string, string | undefined>,
  invalid: (message: string) => Error,
): string {
  const server = flag ?? env[SERVER_URL_ENV] ?? `http://${SERVER_DEFAULT_LISTEN}`;
  if (!/^https?:\/\/[^/]/.test(server)) {
    throw invalid(
      `--server must be an http(s) URL such as http://${SERVER_DEFAULT_LISTEN}, got "${server}"`,
    );
  }
  return server.replace(/\/+$/, "");
}

/** What the person at the terminal reads for a failed call, with what to do next. */
export function explainServerFailure(error: ServerApiError): string {
  if (error.code === "unreachable") {
    return `${error.message}; start it with "deckhand up", or pass --server`;
  }
  if (error.status === 401) {
    return `${error.message}; set ${WireEnv.adminToken} to the server's admin token`;
  }
  return error.message;
}
