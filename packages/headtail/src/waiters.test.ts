import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { HeadTailBuffer } from "./head-tail-buffer.ts";

/** Lets every already-settled promise callback run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

function track<T>(promise: Promise<T>) {
  const state: { result?: T } = {};
  void promise.then((result) => {
    state.result = result;
  });
  return state;
}

describe("HeadTailBuffer waiters", () => {
  it("resolves changed at once when the stream is already past the cursor", async () => {
    const buffer = new HeadTailBuffer();
    buffer.write("abc");
    await expect(buffer.waitForChange({ cursor: 2 })).resolves.toBe("changed");
  });

  it("wakes every change waiter together on the next write", async () => {
    const buffer = new HeadTailBuffer();
    const waits = Array.from({ length: 100 }, () => buffer.waitForChange());
    await settle();
    expect(buffer.waiterCount).toBe(100);
    buffer.write("x");
    expect(await Promise.all(waits)).toEqual(Array(100).fill("changed"));
    expect(buffer.waiterCount).toBe(0);
  });

  it("keeps waiting while the stream has not passed the waiter's cursor", async () => {
    const buffer = new HeadTailBuffer();
    const wait = track(buffer.waitForChange({ cursor: 5 }));
    buffer.write("abc");
    await settle();
    expect(wait.result).toBeUndefined();
    buffer.write("def");
    await settle();
    expect(wait.result).toBe("changed");
  });

  it("does not wake on a write that only holds back half a character", async () => {
    const buffer = new HeadTailBuffer();
    const wait = track(buffer.waitForChange());
    buffer.write(new Uint8Array([0xe2, 0x82]));
    await settle();
    expect(wait.result).toBeUndefined();
    buffer.write(new Uint8Array([0xac]));
    await settle();
    expect(wait.result).toBe("changed");
  });

  it("wakes every change and close waiter with closed on close", async () => {
    const buffer = new HeadTailBuffer();
    const changes = Array.from({ length: 50 }, () => buffer.waitForChange());
    const closes = Array.from({ length: 50 }, () => buffer.waitForClose());
    buffer.close();
    expect(await Promise.all(changes)).toEqual(Array(50).fill("closed"));
    expect(await Promise.all(closes)).toEqual(Array(50).fill("closed"));
    expect(buffer.waiterCount).toBe(0);
  });

  it("answers changed on close when closing stored held-back bytes past the cursor", async () => {
    const buffer = new HeadTailBuffer();
    buffer.write(new Uint8Array([0x61, 0xe2]));
    const wait = buffer.waitForChange({ cursor: 1 });
    buffer.close();
    await expect(wait).resolves.toBe("changed");
    expect(buffer.readSince(1).text).toBe("\uFFFD");
  });

  it("resolves closed at once when already closed and nothing is past the cursor", async () => {
    const buffer = new HeadTailBuffer();
    buffer.write("abc");
    buffer.close();
    await expect(buffer.waitForChange()).resolves.toBe("closed");
    await expect(buffer.waitForChange({ cursor: 0 })).resolves.toBe("changed");
    await expect(buffer.waitForClose()).resolves.toBe("closed");
  });

  it("sees a write that happened between a read and the wait through the cursor", async () => {
    const buffer = new HeadTailBuffer();
    const { nextCursor } = buffer.readSince(0);
    buffer.write("arrived in between");
    await expect(buffer.waitForChange({ cursor: nextCursor })).resolves.toBe("changed");
  });

  it("resolves aborted when the signal aborts and forgets the waiter", async () => {
    const buffer = new HeadTailBuffer();
    const controller = new AbortController();
    const change = buffer.waitForChange({ signal: controller.signal });
    const close = buffer.waitForClose(controller.signal);
    expect(buffer.waiterCount).toBe(2);
    controller.abort();
    await expect(change).resolves.toBe("aborted");
    await expect(close).resolves.toBe("aborted");
    expect(buffer.waiterCount).toBe(0);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("resolves aborted at once for a signal that is already aborted", async () => {
    const buffer = new HeadTailBuffer();
    const signal = AbortSignal.abort();
    await expect(buffer.waitForChange({ signal })).resolves.toBe("aborted");
    await expect(buffer.waitForClose(signal)).resolves.toBe("aborted");
    expect(buffer.waiterCount).toBe(0);
  });

  it("leaves no listeners or waiters behind after 10,000 aborted waits", async () => {
    const buffer = new HeadTailBuffer();
    const shared = new AbortController();
    const results: Promise<string>[] = [];
    for (let index = 0; index < 10_000; index += 1) {
      const own = new AbortController();
      results.push(buffer.waitForChange({ signal: own.signal }));
      results.push(buffer.waitForClose(shared.signal));
      own.abort();
      expect(getEventListeners(own.signal, "abort")).toHaveLength(0);
    }
    shared.abort();
    expect(new Set(await Promise.all(results))).toEqual(new Set(["aborted"]));
    expect(buffer.waiterCount).toBe(0);
    expect(getEventListeners(shared.signal, "abort")).toHaveLength(0);
  });

  it("removes its abort listener from a long-lived signal when woken by a write or close", async () => {
    const buffer = new HeadTailBuffer();
    const longLived = new AbortController();
    for (let index = 0; index < 10_000; index += 1) {
      const wait = buffer.waitForChange({ signal: longLived.signal });
      buffer.write("x\n");
      expect(await wait).toBe("changed");
    }
    const close = buffer.waitForClose(longLived.signal);
    buffer.close();
    expect(await close).toBe("closed");
    expect(getEventListeners(longLived.signal, "abort")).toHaveLength(0);
    expect(buffer.waiterCount).toBe(0);
  });

  it("rejects an invalid cursor with invalid_cursor", async () => {
    const buffer = new HeadTailBuffer();
    await expect(buffer.waitForChange({ cursor: -1 })).rejects.toMatchObject({
      name: "HeadTailError",
      code: "invalid_cursor",
    });
  });
});
