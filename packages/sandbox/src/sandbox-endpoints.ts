// The outside ends of a sandbox's network: Unix sockets in a private directory, bound into each
// sandbox that needs them. One serves the model proxy and nothing else of the server; one per
// allow list is an HTTP proxy that opens connections only to allowed hosts. Every check happens
// here, outside the sandbox, where the sandboxed process cannot change it.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, request, type Server } from "node:http";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getRequestListener } from "@hono/node-server";
import { HostAllowList } from "./host-allow-list.ts";
import { SLIRP_NAMESERVER } from "./slirp-network.ts";

/** The model proxy as the server serves it, for the sandboxes' socket. */
export interface ModelProxyEndpoint {
  /** The port agents are told the proxy is on (the server's); null until it listens. */
  port(): number | null;
  /** Answers model-proxy requests; anything else is answered 404 before it gets here. */
  fetch(request: Request): Response | Promise<Response>;
  /** The path every model-proxy route starts with (`/model-provider`). */
  pathPrefix: string;
}

function refuse(socket: Socket, status: number, reason: string): void {
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n${reason}: the Deckhand sandbox allows only the hosts in sandbox.allowHosts of config.json\n`,
  );
}

/** `host:port` of a CONNECT target or an absolute URL, or null when it is neither. */
function destination(target: string, defaultPort: number): { host: string; port: number } | null {
  try {
    const url = new URL(target.includes("://") ? target : `http://${target}`);
    if (url.hostname === "") return null;
    return { host: url.hostname, port: url.port === "" ? defaultPort : Number(url.port) };
  } catch {
    return null;
  }
}

/** How a URL or a proxy request names this machine's loopback. */
export const LOOPBACK_NAMES: ReadonlySet<string> = new Set([
  "127.0.0.1",
  "localhost",
  "::1",
  "[::1]",
]);

/**
 * An HTTP proxy (CONNECT and absolute-URL requests) that reaches only `allow`, and the model
 * proxy: a client that sends every request through its proxy variables (curl does) reaches the
 * model proxy's own address here, where its routes and nothing else of the server are served.
 */
function egressProxy(allow: HostAllowList, modelProxy: ModelProxyRoute | null): Server {
  const server = createServer((incoming, outgoing) => {
    const target = destination(incoming.url ?? "", 80);
    if (target === null || !(incoming.url ?? "").startsWith("http://")) {
      outgoing.writeHead(400).end("send absolute http:// URLs or CONNECT through this proxy\n");
      return;
    }
    const port = modelProxy?.port() ?? null;
    if (modelProxy !== null && LOOPBACK_NAMES.has(target.host) && target.port === port) {
      incoming.url = new URL(incoming.url!).pathname + new URL(incoming.url!).search;
      modelProxy.serve(incoming, outgoing);
      return;
    }
    if (!allow.allows(target.host, target.port)) {
      outgoing.writeHead(403).end(`${target.host}:${target.port} is not in sandbox.allowHosts\n`);
      return;
    }
    const forwarded = request(incoming.url!, {
      method: incoming.method,
      headers: incoming.headers,
    });
    forwarded.on("response", (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    });
    forwarded.on("error", () => outgoing.destroy());
    incoming.pipe(forwarded);
  });
  server.on("connect", (incoming: IncomingMessage, client: Socket, head: Buffer) => {
    const target = destination(incoming.url ?? "", 443);
    if (target === null) return refuse(client, 400, "Bad Request");
    if (!allow.allows(target.host, target.port)) return refuse(client, 403, "Forbidden");
    const upstream = connect(target.port, target.host, () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
    upstream.on("error", () => refuse(client, 502, "Bad Gateway"));
    client.on("error", () => upstream.destroy());
  });
  return server;
}

/** The model proxy as a Node request listener, and the port it is known by. */
interface ModelProxyRoute {
  port(): number | null;
  serve: ReturnType<typeof getRequestListener>;
}

/** Only the model proxy's own routes; 404 for the rest of the server. */
function modelProxyListener(proxy: ModelProxyEndpoint): ReturnType<typeof getRequestListener> {
  return getRequestListener(async (incoming) => {
    const path = new URL(incoming.url).pathname;
    if (path !== proxy.pathPrefix && !path.startsWith(`${proxy.pathPrefix}/`)) {
      return new Response("only the model proxy is reachable from a sandbox\n", { status: 404 });
    }
    return proxy.fetch(incoming);
  });
}

/** The sockets and files sandboxes bind in, made when first needed and removed by `close`. */
export class SandboxEndpoints {
  readonly #modelProxy: ModelProxyEndpoint | null;
  readonly #allowHosts: readonly string[];
  #directory: string | null = null;
  #modelProxySocket: string | null = null;
  readonly #egressSockets = new Map<string, string>();
  readonly #servers: Server[] = [];
  #resolvConf: string | null = null;
  #emptyFile: string | null = null;

  constructor(options: { modelProxy: ModelProxyEndpoint | null; allowHosts: readonly string[] }) {
    this.#modelProxy = options.modelProxy;
    this.#allowHosts = options.allowHosts;
  }

  get modelProxyPort(): number | null {
    return this.#modelProxy?.port() ?? null;
  }

  #privateDirectory(): string {
    if (this.#directory === null) {
      this.#directory = mkdtempSync(join(tmpdir(), "deckhand-sandbox-"));
      chmodSync(this.#directory, 0o700);
    }
    return this.#directory;
  }

  #listen(server: Server, name: string): string {
    const path = join(this.#privateDirectory(), name);
    server.listen(path);
    server.unref();
    this.#servers.push(server);
    return path;
  }

  /** The model proxy's socket, or null when this server has no model proxy. */
  modelProxySocket(): string | null {
    if (this.#modelProxy === null) return null;
    if (this.#modelProxySocket === null) {
      this.#modelProxySocket = this.#listen(
        createServer(modelProxyListener(this.#modelProxy)),
        "model-proxy.sock",
      );
    }
    return this.#modelProxySocket;
  }

  /**
   * The HTTP proxy's socket for the configured allow list plus `extraHosts`, or null when both
   * are empty (the sandbox then reaches nothing but the model proxy).
   */
  egressSocket(extraHosts: readonly string[] = []): string | null {
    const hosts = [...new Set([...this.#allowHosts, ...extraHosts])].sort();
    if (hosts.length === 0) return null;
    const key = hosts.join(" ");
    let socket = this.#egressSockets.get(key);
    if (socket === undefined) {
      const proxy = this.#modelProxy;
      socket = this.#listen(
        egressProxy(
          new HostAllowList(hosts),
          proxy === null ? null : { port: () => proxy.port(), serve: modelProxyListener(proxy) },
        ),
        `egress-${this.#egressSockets.size}.sock`,
      );
      this.#egressSockets.set(key, socket);
    }
    return socket;
  }

  /** A resolv.conf naming slirp4netns's DNS, for sandboxes with the internet. */
  resolvConf(): string {
    if (this.#resolvConf === null) {
      this.#resolvConf = join(this.#privateDirectory(), "resolv.conf");
      writeFileSync(this.#resolvConf, `nameserver ${SLIRP_NAMESERVER}\n`);
    }
    return this.#resolvConf;
  }

  /** An empty file, bound read-only over each hidden file. */
  emptyFile(): string {
    if (this.#emptyFile === null) {
      this.#emptyFile = join(this.#privateDirectory(), "empty");
      writeFileSync(this.#emptyFile, "", { mode: 0o444 });
    }
    return this.#emptyFile;
  }

  async close(): Promise<void> {
    await Promise.all(
      this.#servers.splice(0).map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections?.();
          }),
      ),
    );
    if (this.#directory !== null) rmSync(this.#directory, { recursive: true, force: true });
    this.#directory = null;
    this.#modelProxySocket = null;
    this.#egressSockets.clear();
    this.#resolvConf = null;
    this.#emptyFile = null;
  }
}
