import type { AddressInfo } from "node:net";
import { type ServerType, serve } from "@hono/node-server";

export interface Listening {
  server: ServerType;
  /** The port actually bound (useful with port 0). */
  port: number;
  /** `http://host:port`, IPv6 hosts in brackets. */
  url: string;
}

/**
 * Serves a fetch handler on host:port and resolves once it listens. A failure to listen (port
 * taken, address unavailable) rejects with whatever `describeFailure` makes of it, so each app
 * can raise its own error type.
 */
export function listen(
  fetch: (request: Request) => Response | Promise<Response>,
  address: { host: string; port: number },
  describeFailure: (error: Error) => Error,
): Promise<Listening> {
  return new Promise((resolveListening, reject) => {
    const server = serve({ fetch, hostname: address.host, port: address.port }, () => {
      const port = (server.address() as AddressInfo).port;
      const host = address.host.includes(":") ? `[${address.host}]` : address.host;
      resolveListening({ server, port, url: `http://${host}:${port}` });
    });
    server.once("error", (error) => reject(describeFailure(error)));
  });
}
