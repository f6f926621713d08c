// A step's output as it happens: stdout from the container's log (`follow`), stderr from the
// file the pod writes on the shared volume. Both count the bytes they passed on, so once the
// container has ended whatever a broken log stream missed is read back and only the rest given.
import { open } from "node:fs/promises";
import { Writable } from "node:stream";
import type { CoreV1Api, Log } from "@kubernetes/client-node";

/** Streams one container's log from the start, once, and can complete it after the end. */
export class LogFollower {
  readonly #log: Log;
  readonly #core: CoreV1Api;
  readonly #target: { namespace: string; pod: string; container: string };
  readonly #onData: (data: Buffer) => void;
  #received = 0;
  /** Set once the stream's data is no longer wanted (read back whole, or the step is over). */
  #detached = false;
  #ended: Promise<void> | null = null;

  constructor(
    log: Log,
    core: CoreV1Api,
    target: { namespace: string; pod: string; container: string },
    onData: (data: Buffer) => void,
  ) {
    this.#log = log;
    this.#core = core;
    this.#target = target;
    this.#onData = onData;
  }

  get started(): boolean {
    return this.#ended !== null;
  }

  /**
   * Opens the follow stream (once the container has started: the server refuses a waiting one).
   * Resolves when it is open; `ended` settles when it closes, which it does when the container
   * exits.
   */
  async start(): Promise<void> {
    if (this.#ended !== null) return;
    let finish: () => void = () => {};
    this.#ended = new Promise((resolve) => {
      finish = resolve;
    });
    const sink = new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        if (!this.#detached) {
          this.#received += chunk.length;
          this.#onData(chunk);
        }
        callback();
      },
    });
    sink.on("finish", finish);
    sink.on("close", finish);
    sink.on("error", finish);
    try {
      const { namespace, pod, container } = this.#target;
      // Its AbortController is not used: aborting makes the client's response stream emit an
      // error nobody listens to. The stream ends when the container does (or its pod is deleted);
      // until then data that is no longer wanted is dropped.
      await this.#log.log(namespace, pod, container, sink, { follow: true });
    } catch (error) {
      this.#ended = null;
      finish();
      throw error;
    }
  }

  /** Waits for the stream to end by itself, at most `timeoutMs`. */
  async ended(timeoutMs: number): Promise<void> {
    if (this.#ended === null) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.#ended,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }

  /**
   * After the container ended: reads its whole log and passes on what the stream did not (it was
   * never opened, or broke off). The stream is detached first so nothing arrives twice.
   */
  async complete(): Promise<void> {
    this.#detached = true;
    const { namespace, pod, container } = this.#target;
    const whole = await this.#core.readNamespacedPodLog({ name: pod, namespace, container });
    const bytes = Buffer.from(whole, "utf8");
    if (bytes.length > this.#received) {
      const rest = bytes.subarray(this.#received);
      this.#received = bytes.length;
      this.#onData(rest);
    }
  }

  stop(): void {
    this.#detached = true;
  }
}

/** Passes on what is appended to a file, polled, until stopped; then reads it to its end. */
export class FileTail {
  readonly #path: string;
  readonly #onData: (data: Buffer) => void;
  readonly #intervalMs: number;
  #offset = 0;
  #timer: NodeJS.Timeout | null = null;
  #reading: Promise<void> = Promise.resolve();

  constructor(path: string, onData: (data: Buffer) => void, intervalMs = 250) {
    this.#path = path;
    this.#onData = onData;
    this.#intervalMs = intervalMs;
  }

  start(): void {
    this.#timer = setInterval(() => {
      this.#reading = this.#reading.then(() => this.#read());
    }, this.#intervalMs);
  }

  /** Stops polling and passes on whatever is left. */
  async finish(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#reading = this.#reading.then(() => this.#read());
    await this.#reading;
  }

  async #read(): Promise<void> {
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(this.#path, "r");
    } catch {
      return;
    }
    try {
      const buffer = Buffer.alloc(64 * 1024);
      for (;;) {
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, this.#offset);
        if (bytesRead === 0) break;
        this.#offset += bytesRead;
        this.#onData(Buffer.from(buffer.subarray(0, bytesRead)));
      }
    } finally {
      await handle.close();
    }
  }
}
