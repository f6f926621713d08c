// An executor's steps reach the model proxy of the server it works for. Sandboxed, they cannot
// reach the network on their own, so the executor serves the proxy's routes to them as the server
// does its own: each request is passed on to the server, its body streamed, nothing else of the
// server's API reachable.
import { LOOPBACK_NAMES, type ModelProxyEndpoint } from "./sandbox-endpoints.ts";

/** Hop-by-hop headers a forwarded request must not carry on (RFC 9110 section 7.6.1). */
const HOP_BY_HOP = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"];

/**
 * The model proxy of the server at `serverUrl`, for the sandboxes of an executor. It serves
 * sandboxes on the server's own port when the server is on this machine's loopback (the address
 * agents are told); for a server elsewhere, null: its host is then added to what sandboxes may
 * reach through their HTTP proxy (see `remoteModelProxyHosts`).
 */
export function remoteModelProxy(
  serverUrl: string,
  pathPrefix: string,
  fetchImplementation: typeof fetch = fetch,
): ModelProxyEndpoint | null {
  const server = new URL(serverUrl);
  if (server.protocol !== "http:" || !LOOPBACK_NAMES.has(server.hostname)) return null;
  const port = Number(server.port === "" ? 80 : server.port);
  return {
    pathPrefix,
    port: () => port,
    fetch: async (request) => {
      const incoming = new URL(request.url);
      const headers = new Headers(request.headers);
      for (const name of HOP_BY_HOP) headers.delete(name);
      headers.delete("host");
      const hasBody = request.method !== "GET" && request.method !== "HEAD";
      return fetchImplementation(new URL(`${incoming.pathname}${incoming.search}`, server), {
        method: request.method,
        headers,
        redirect: "manual",
        ...(hasBody ? { body: request.body, duplex: "half" } : {}),
      } as RequestInit);
    },
  };
}

/**
 * What sandboxes of an executor must reach beyond their allow list for the model proxy: the
 * server's `host:port` when it is not on this machine's loopback (served then by `remoteModelProxy`).
 */
export function remoteModelProxyHosts(serverUrl: string): string[] {
  const server = new URL(serverUrl);
  if (server.protocol === "http:" && LOOPBACK_NAMES.has(server.hostname)) return [];
  const port = server.port === "" ? (server.protocol === "https:" ? 443 : 80) : server.port;
  return [`${server.hostname}:${port}`];
}
