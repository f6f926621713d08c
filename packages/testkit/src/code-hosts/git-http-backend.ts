// Git's own smart HTTP server (`git http-backend`, run as a CGI program per request) behind a
// node:http handler, so tests push and fetch over real http with a token, as against a code host.
import { spawn } from "node:child_process";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** Whether a request's Authorization header carries the token (Basic with it as the password, or Bearer). */
export function carriesToken(authorization: string | undefined, token: string): boolean {
  if (authorization === undefined) return false;
  const [scheme = "", value = ""] = authorization.split(" ", 2);
  if (/^bearer$/i.test(scheme) || /^token$/i.test(scheme)) return value === token;
  if (/^basic$/i.test(scheme)) {
    const decoded = Buffer.from(value, "base64").toString("utf8");
    return decoded.slice(decoded.indexOf(":") + 1) === token;
  }
  return false;
}

/** The user name of a Basic Authorization header, for REMOTE_USER. */
function basicUser(authorization: string | undefined): string | undefined {
  if (authorization === undefined || !/^basic /i.test(authorization)) return undefined;
  const decoded = Buffer.from(authorization.slice(6), "base64").toString("utf8");
  return decoded.slice(0, decoded.indexOf(":"));
}

/** A path that is git's smart HTTP protocol: `.../info/refs?service=`, `git-upload-pack`, `git-receive-pack`. */
export function isGitHttpPath(path: string): boolean {
  return /\/(?:info\/refs|git-upload-pack|git-receive-pack)$/.test(path);
}

export interface GitHttpRequestRecord {
  method: string;
  path: string;
  service: string | undefined;
  status: number;
}

export interface GitHttpBackendOptions {
  /** The directory the repositories' paths are below (GIT_PROJECT_ROOT). */
  projectRoot: string;
  /** The token a request must carry. */
  token: string;
  /** Called once per request, after it was answered. */
  onRequest?: (record: GitHttpRequestRecord) => void;
}

/**
 * Answers one smart HTTP request with `git http-backend`: checks the token (401 with a Basic
 * challenge otherwise, which is what makes git send its credentials), passes the request as
 * CGI variables and its body on stdin, and relays the CGI answer (a `Status:` header, headers,
 * then the body).
 */
export function handleGitHttp(
  request: IncomingMessage,
  response: ServerResponse,
  options: GitHttpBackendOptions,
): void {
  const url = new URL(request.url ?? "/", "http://fake");
  const service = url.searchParams.get("service") ?? url.pathname.split("/").pop();
  const record = (status: number) =>
    options.onRequest?.({ method: request.method ?? "GET", path: url.pathname, service, status });
  if (!carriesToken(request.headers.authorization, options.token)) {
    response.writeHead(401, { "www-authenticate": 'Basic realm="fake code host"' });
    response.end("authentication required\n");
    record(401);
    return;
  }
  const environment: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    GIT_PROJECT_ROOT: options.projectRoot,
    GIT_HTTP_EXPORT_ALL: "1",
    // With a REMOTE_USER, http-backend allows pushes (http.receivepack defaults to it).
    REMOTE_USER: basicUser(request.headers.authorization) ?? "deckhand",
    REMOTE_ADDR: request.socket.remoteAddress ?? "127.0.0.1",
    REQUEST_METHOD: request.method ?? "GET",
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.replace(/^\?/, ""),
    CONTENT_TYPE: request.headers["content-type"] ?? "",
    GIT_CONFIG_NOSYSTEM: "1",
    HOME: options.projectRoot,
  };
  if (request.headers["content-encoding"]) {
    environment.HTTP_CONTENT_ENCODING = request.headers["content-encoding"];
  }
  const protocol = request.headers["git-protocol"];
  if (typeof protocol === "string") environment.GIT_PROTOCOL = protocol;
  const child = spawn("git", ["http-backend"], { env: environment, stdio: "pipe" });
  request.pipe(child.stdin);
  child.stdin.on("error", () => {});
  let buffered = Buffer.alloc(0);
  let headersDone = false;
  let status = 200;
  child.stdout.on("data", (chunk: Buffer) => {
    if (headersDone) {
      response.write(chunk);
      return;
    }
    buffered = Buffer.concat([buffered, chunk]);
    const end = buffered.indexOf("\r\n\r\n");
    if (end === -1) return;
    const headers: Record<string, string> = {};
    for (const line of buffered.subarray(0, end).toString("latin1").split("\r\n")) {
      const colon = line.indexOf(":");
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === "status") status = Number.parseInt(value, 10);
      else headers[name] = value;
    }
    headersDone = true;
    response.writeHead(status, headers);
    response.write(buffered.subarray(end + 4));
  });
  child.on("close", () => {
    if (!headersDone) response.writeHead(500).end("git http-backend wrote no answer\n");
    else response.end();
    record(headersDone ? status : 500);
  });
  child.on("error", () => {
    if (!response.headersSent) response.writeHead(500);
    response.end();
  });
}

export interface GitHttpServer {
  /** `http://127.0.0.1:<port>`; a repository `<root>/acme/api.git` is at `<url>/acme/api.git`. */
  url: string;
  requests: GitHttpRequestRecord[];
  close(): Promise<void>;
}

/** A loopback server of the bare repositories below `projectRoot`, for the token given. */
export async function startGitHttpServer(options: {
  projectRoot: string;
  token: string;
}): Promise<GitHttpServer> {
  const requests: GitHttpRequestRecord[] = [];
  const server: Server = createServer((request, response) => {
    handleGitHttp(request, response, { ...options, onRequest: (record) => requests.push(record) });
  });
  await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolveClose) => {
        server.closeAllConnections();
        server.close(() => resolveClose());
      }),
  };
}
