/** The part of a `ws` WebSocket the keep-alive needs, so this package does not depend on `ws`. */
export interface PingableSocket {
  ping(): void;
  terminate(): void;
  on(event: "pong" | "close", listener: () => void): unknown;
}

/**
 * Pings a WebSocket every `intervalMs` and terminates it when the previous ping got no pong: a
 * peer that vanished without closing (a laptop lid, a dropped NAT entry) is noticed within two
 * intervals instead of holding its subscription forever. Stops by itself when the socket closes.
 */
export function keepWebSocketAlive(socket: PingableSocket, intervalMs: number): void {
  let alive = true;
  socket.on("pong", () => {
    alive = true;
  });
  const ping = setInterval(() => {
    if (!alive) {
      socket.terminate();
      return;
    }
    alive = false;
    socket.ping();
  }, intervalMs);
  ping.unref();
  socket.on("close", () => clearInterval(ping));
}
