import {
  type SessionEvent,
  type SessionStreamFrame,
  SessionStreamFrameSchema,
  WireHeader,
  WireSubprotocol,
} from "@deckhand/wire";
import WebSocket from "ws";

/** A session-stream client that records every frame and can wait for one. */
export class SessionStreamClient {
  readonly frames: SessionStreamFrame[] = [];
  readonly raw: string[] = [];
  readonly socket: WebSocket;
  readonly opened: Promise<void>;
  readonly closed: Promise<{ code: number }>;
  #waiters: (() => void)[] = [];

  constructor(
    baseUrl: string,
    path: string,
    options: { after?: number; token?: string; tokenAs?: "header" | "subprotocol" } = {},
  ) {
    const url = `${baseUrl.replace(/^http/, "ws")}${path}${options.after !== undefined ? `?after=${options.after}` : ""}`;
    const viaHeader = options.token && options.tokenAs !== "subprotocol";
    this.socket = new WebSocket(
      url,
      options.token && options.tokenAs === "subprotocol"
        ? [WireSubprotocol.sessionStream, `${WireSubprotocol.bearerPrefix}${options.token}`]
        : [],
      viaHeader ? { headers: { [WireHeader.authorization]: `Bearer ${options.token}` } } : {},
    );
    this.opened = new Promise((resolveOpen, rejectOpen) => {
      this.socket.once("open", () => resolveOpen());
      this.socket.once("unexpected-response", (_request, response) =>
        rejectOpen(new Error(`upgrade refused with ${response.statusCode}`)),
      );
      this.socket.once("error", rejectOpen);
    });
    this.closed = new Promise((resolveClose) =>
      this.socket.once("close", (code) => resolveClose({ code })),
    );
    this.socket.on("message", (data) => {
      const text = data.toString();
      this.raw.push(text);
      this.frames.push(SessionStreamFrameSchema.parse(JSON.parse(text)));
      for (const wake of this.#waiters.splice(0)) wake();
    });
  }

  events(): SessionEvent[] {
    return this.frames.flatMap((frame) => (frame.type === "event" ? [frame.event] : []));
  }

  lastEventId(): number {
    return this.events().at(-1)?.id ?? 0;
  }

  async waitFor(
    predicate: (client: SessionStreamClient) => boolean,
    timeoutMs = 60_000,
  ): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this)) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new Error(
          `stream wait timed out; frames: ${JSON.stringify(this.frames).slice(0, 2000)}`,
        );
      }
      await new Promise<void>((resolveWait) => {
        const timer = setTimeout(resolveWait, Math.min(remaining, 200));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolveWait();
        });
      });
    }
  }

  async close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return;
    this.socket.close();
    await this.closed;
  }
}
