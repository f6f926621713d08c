import { ServerPath, serverPath, WireSubprotocol } from "@deckhand/wire";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { EventStream, type StreamState } from "./event-stream.ts";

/**
 * The browser's WebSocket as EventStream uses it: built with a URL and protocols, frames to
 * `onmessage`, a drop to `onclose`. Nothing here can serve a real one to the page's class
 * (Node has the client, not a server), so each socket is driven by the test as the server would.
 */
class ServedSocket {
  static opened: ServedSocket[] = [];
  readonly url: URL;
  readonly protocols: string[];
  onmessage: ((message: { data: string }) => void) | null = null;
  onclose: (() => void) | null = null;
  closedByPage: { code: number | undefined; reason: string | undefined } | null = null;

  constructor(url: URL | string, protocols: string[]) {
    this.url = new URL(url);
    this.protocols = protocols;
    ServedSocket.opened.push(this);
  }

  /** A frame from the server. */
  send(frame: unknown): void {
    this.onmessage?.({ data: JSON.stringify(frame) });
  }

  /** The connection drops (the server went away, a proxy cut it). */
  drop(): void {
    this.onclose?.();
  }

  close(code?: number, reason?: string): void {
    this.closedByPage = { code, reason };
    this.onclose?.();
  }
}

const PATH = serverPath(ServerPath.sessionStream, { session_id: "s1" });

function event(id: number) {
  return { type: "event", event: { id } };
}

/** A stream on a page at 127.0.0.1:4000 with a token, recording what it delivers. */
function openStream() {
  const delivered: number[] = [];
  const states: StreamState[] = [];
  const stream = new EventStream<{ id: number }>(
    { path: PATH, subprotocol: WireSubprotocol.sessionStream },
    { onEvent: (delivery) => delivered.push(delivery.id), onState: (state) => states.push(state) },
  );
  return { stream, delivered, states };
}

/** The `after` the page asked for on its nth connection (0-based), once it has made it. */
async function afterAsked(connection: number): Promise<string | null> {
  await vi.waitFor(() => expect(ServedSocket.opened.length).toBeGreaterThan(connection), {
    timeout: 10_000,
  });
  return ServedSocket.opened[connection]!.url.searchParams.get("after");
}

beforeEach(() => {
  ServedSocket.opened = [];
  vi.stubGlobal("WebSocket", ServedSocket);
  vi.stubGlobal("window", { location: { href: "http://127.0.0.1:4000/sessions/s1" } });
  vi.stubGlobal("sessionStorage", { getItem: () => "token-1" });
  // A drop makes the page ask the server's health: it answers that all is well.
  vi.stubGlobal("fetch", async () =>
    Response.json({ status: "ok", database: { ok: true }, queue: { ok: true } }),
  );
});

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("EventStream", () => {
  it("asks for every event at first, over ws, with its subprotocol and the token beside it", async () => {
    const { stream } = openStream();
    const socket = ServedSocket.opened[0]!;
    expect(socket.url.href).toBe("ws://127.0.0.1:4000/api/sessions/s1/stream?after=0");
    expect(socket.protocols).toEqual([WireSubprotocol.sessionStream, "bearer.token-1"]);
    stream.close();
    expect(socket.closedByPage).toEqual({ code: 1000, reason: "page left" });
  });

  it("resumes a dropped connection after the last event it delivered, and delivers none twice", async () => {
    const { stream, delivered, states } = openStream();
    const first = ServedSocket.opened[0]!;
    first.send(event(1));
    first.send(event(2));
    first.send({ type: "ready", last_event_id: 2 });
    first.send(event(3));
    first.drop();
    expect(await afterAsked(1)).toBe("3");
    // A server may send again what the page has (an event stored as the page asked).
    const second = ServedSocket.opened[1]!;
    second.send(event(3));
    second.send(event(4));
    second.send({ type: "ready", last_event_id: 4 });
    expect(delivered).toEqual([1, 2, 3, 4]);
    expect(stream.lastEventId).toBe(4);
    expect(states).toEqual(["connecting", "live", "reconnecting", "reconnecting", "live"]);
    stream.close();
  });

  it("asks from the start again when its connection dropped before any event arrived", async () => {
    const { stream, delivered } = openStream();
    ServedSocket.opened[0]!.drop();
    // Nothing was delivered, so nothing may be skipped: the whole log is asked for again.
    expect(await afterAsked(1)).toBe("0");
    ServedSocket.opened[1]!.send(event(1));
    ServedSocket.opened[1]!.drop();
    expect(await afterAsked(2)).toBe("1");
    expect(delivered).toEqual([1]);
    stream.close();
  });
});
