import { EventEmitter } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { keepWebSocketAlive } from "./keep-alive.ts";

class FakeSocket extends EventEmitter {
  pings = 0;
  terminated = false;
  ping(): void {
    this.pings += 1;
  }
  terminate(): void {
    this.terminated = true;
  }
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("keepWebSocketAlive", () => {
  it("pings every interval and keeps a socket that answers", () => {
    const socket = new FakeSocket();
    keepWebSocketAlive(socket, 1_000);
    for (let round = 0; round < 3; round += 1) {
      vi.advanceTimersByTime(1_000);
      socket.emit("pong");
    }
    expect(socket.pings).toBe(3);
    expect(socket.terminated).toBe(false);
  });

  it("terminates a socket whose last ping got no pong", () => {
    const socket = new FakeSocket();
    keepWebSocketAlive(socket, 1_000);
    vi.advanceTimersByTime(1_000);
    expect(socket.terminated).toBe(false);
    vi.advanceTimersByTime(1_000);
    expect(socket.terminated).toBe(true);
    expect(socket.pings).toBe(1);
  });

  it("stops pinging once the socket closes", () => {
    const socket = new FakeSocket();
    keepWebSocketAlive(socket, 1_000);
    socket.emit("close");
    vi.advanceTimersByTime(5_000);
    expect(socket.pings).toBe(0);
  });
});
