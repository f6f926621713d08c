// The fetch every client library is given. It reads the token when a request is sent and adds
// it as the last step, so no library holds it (nothing of theirs can log it or put it in an
// error), and sends each attempt through the connection's RequestPolicy.
import { rememberSecrets } from "@deckhand/secrets";
import { CodeHostError } from "./code-host-error.ts";
import { type CodeHostConnection, connectionName } from "./connection.ts";
import type { RequestPolicy } from "./request-policy.ts";

/** What the clients need of fetch; the global fetch satisfies it. */
export type FetchFunction = (
  input: string | URL | Request,
  init?: RequestInit,
) => Promise<Response>;

/**
 * The token of a connection, read from the environment variable it names, now. It is
 * remembered as a secret of the process, so every redaction site hides it from then on.
 */
export function readConnectionToken(
  connection: CodeHostConnection,
  environment: Readonly<Record<string, string | undefined>> = process.env,
): string {
  const token = environment[connection.tokenEnv];
  if (token === undefined || token.trim() === "") {
    throw new CodeHostError(
      "token_missing",
      `the token for ${connectionName(connection)} is missing: set the environment variable ${connection.tokenEnv}`,
      { connection: connectionName(connection) },
    );
  }
  rememberSecrets([token]);
  return token;
}

function basic(user: string, token: string): string {
  const encoded = Buffer.from(`${user}:${token}`).toString("base64");
  // The encoded pair is as good as the token; it is a secret too.
  rememberSecrets([encoded]);
  return `Basic ${encoded}`;
}

/** The header that carries the token to the API of a connection's type. */
export function authorizationHeader(connection: CodeHostConnection, token: string): string {
  switch (connection.type) {
    case "github":
    case "gitlab":
      // GitLab takes personal, project and group access tokens as Bearer tokens too.
      return `Bearer ${token}`;
    case "gitea":
      return `token ${token}`;
    case "bitbucket-cloud":
      return connection.authUser === undefined
        ? `Bearer ${token}`
        : basic(connection.authUser, token);
  }
}

export interface HostFetchOptions {
  connection: CodeHostConnection;
  policy: RequestPolicy;
  /** Where the token is read from; process.env by default. */
  environment?: Readonly<Record<string, string | undefined>>;
  /** The fetch that sends; the global one by default. */
  fetch?: FetchFunction;
}

interface PreparedRequest {
  url: string;
  method: string;
  headers: Headers;
  body: ArrayBuffer | string | undefined;
  signal: AbortSignal | undefined;
}

async function prepare(input: string | URL | Request, init: RequestInit = {}) {
  if (input instanceof Request) {
    const headers = new Headers(input.headers);
    if (init.headers)
      for (const [name, value] of new Headers(init.headers)) headers.set(name, value);
    const method = (init.method ?? input.method).toUpperCase();
    // A Request's body can be read once; it is kept so that a retry can send it again.
    const body =
      method === "GET" || method === "HEAD" || input.body === null
        ? undefined
        : await input.arrayBuffer();
    return { url: input.url, method, headers, body, signal: init.signal ?? input.signal };
  }
  const method = (init.method ?? "GET").toUpperCase();
  const body = init.body;
  if (body !== undefined && body !== null && typeof body !== "string") {
    if (!(body instanceof ArrayBuffer) && !ArrayBuffer.isView(body)) {
      // Streams and form data cannot be replayed; nothing here sends them.
      throw new CodeHostError("unexpected_response", "request bodies must be text or bytes");
    }
  }
  const prepared: PreparedRequest = {
    url: String(input),
    method,
    headers: new Headers(init.headers),
    body:
      body === undefined || body === null
        ? undefined
        : typeof body === "string"
          ? body
          : ArrayBuffer.isView(body)
            ? (body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer)
            : (body as ArrayBuffer),
    signal: init.signal ?? undefined,
  };
  return prepared;
}

/**
 * A fetch for one connection's clients: each call goes through the connection's policy, and
 * each attempt gets the token, read then from the environment, in the header the host expects.
 */
export function createHostFetch(options: HostFetchOptions): FetchFunction {
  const send = options.fetch ?? fetch;
  return async (input, init) => {
    const request = await prepare(input, init);
    return options.policy.send({ method: request.method, url: request.url }, () => {
      const headers = new Headers(request.headers);
      headers.set(
        "authorization",
        authorizationHeader(
          options.connection,
          readConnectionToken(options.connection, options.environment),
        ),
      );
      return send(request.url, {
        method: request.method,
        headers,
        ...(request.body === undefined ? {} : { body: request.body }),
        ...(request.signal === undefined ? {} : { signal: request.signal }),
      });
    });
  };
}
