// A process the spawn host started for this one, seen here as a `ChildProcess`: its pipes are
// handed over by the host once it runs, so the streams a caller attaches to at once are stand-ins
// that the real pipes are joined to when they arrive; its pid is known from its "spawn" event on.
import { ChildProcess } from "node:child_process";
import type { Socket } from "node:net";
import { Duplex } from "node:stream";

/**
 * One of the process's pipes, usable before the host has handed it over: what is written waits
 * for it, what it reads arrives once it is here. Destroyed early, the pipe is closed on arrival.
 */
export class HandedOverPipe extends Duplex {
  #socket: Socket | null = null;
  /** A write or the end given before the pipe arrived, run once it has. */
  #waiting: (() => void) | null = null;

  constructor() {
    // Half open, the stand-in of an output pipe would never close: it ends with its data.
    super({ allowHalfOpen: false });
  }

  /** Joins the pipe the host handed over. */
  attach(socket: Socket): void {
    this.#socket = socket;
    if (this.destroyed) {
      socket.destroy();
      return;
    }
    socket.on("data", (chunk: Buffer) => {
      if (!this.push(chunk)) socket.pause();
    });
    socket.once("end", () => {
      this.push(null);
      // As a socket does: an end with nothing left unread is reported even to no reader, so a
      // pipe nobody reads (a sandbox's block pipe, an unread stderr) closes and "close" comes.
      this.read(0);
    });
    socket.on("error", (error) => this.destroy(error));
    const waiting = this.#waiting;
    this.#waiting = null;
    waiting?.();
  }

  override _read(): void {
    this.#socket?.resume();
  }

  override _write(
    chunk: Buffer,
    encoding: BufferEncoding,
    callback: (error?: Error | null) => void,
  ): void {
    const write = () => this.#socket!.write(chunk, encoding, callback);
    if (this.#socket === null) this.#waiting = write;
    else write();
  }

  /** Whether the host has handed the pipe over. */
  get attached(): boolean {
    return this.#socket !== null;
  }

  override _final(callback: (error?: Error | null) => void): void {
    // An output pipe's socket ends itself once its data has; only a pipe still open is ended.
    const end = () => {
      const socket = this.#socket!;
      if (!socket.destroyed && !socket.writableEnded) socket.end();
      callback();
    };
    if (this.#socket === null) this.#waiting = end;
    else end();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#socket?.destroy();
    callback(error);
  }
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * The parent's side of a hosted process. It emits what a `ChildProcess` emits: "spawn" (its pid
 * is then set), "error" when it could not start, "exit" with its code or signal, and "close"
 * once it has exited and its output pipes are closed.
 */
export class HostedChildProcess extends ChildProcess {
  readonly #pipes: (HandedOverPipe | null)[];
  readonly #signal: (signal: NodeJS.Signals | number) => void;
  /** Output pipes (every one but standard input, as Node counts them) not yet closed, and exit. */
  #closesNeeded = 1;

  constructor(
    stdio: readonly ("pipe" | "ignore")[],
    signal: (signal: NodeJS.Signals | number) => void,
  ) {
    super();
    // The base made a process handle of its own for a spawn that never happens here.
    const self = this as unknown as { _handle: { close(): void } | null };
    self._handle?.close();
    self._handle = null;
    this.#signal = signal;
    this.#pipes = stdio.map((kind) => (kind === "pipe" ? new HandedOverPipe() : null));
    const fields = this as Mutable<ChildProcess>;
    fields.stdio = this.#pipes as unknown as ChildProcess["stdio"];
    fields.stdin = this.#pipes[0] ?? null;
    fields.stdout = this.#pipes[1] ?? null;
    fields.stderr = this.#pipes[2] ?? null;
    this.#pipes.forEach((pipe, fd) => {
      if (pipe === null || fd === 0) return;
      this.#closesNeeded++;
      pipe.once("close", () => this.#closed());
    });
  }

  override kill(signal: NodeJS.Signals | number = "SIGTERM"): boolean {
    if (this.exitCode !== null || this.signalCode !== null) return false;
    this.#signal(signal);
    (this as Mutable<ChildProcess>).killed = true;
    return true;
  }

  override ref(): void {}

  override unref(): void {}

  /** The host started it. */
  started(pid: number): void {
    (this as Mutable<ChildProcess>).pid = pid;
    this.emit("spawn");
  }

  /** The host handed over the pipe of descriptor `fd`. */
  pipe(fd: number, socket: Socket): void {
    const pipe = this.#pipes[fd];
    if (pipe) pipe.attach(socket);
    else socket.destroy();
  }

  /** It could not start: no pipe will come. */
  failed(error: Error): void {
    this.emit("error", error);
    for (const pipe of this.#pipes) pipe?.destroy();
    this.#closed();
  }

  exited(code: number | null, signal: NodeJS.Signals | null): void {
    const fields = this as Mutable<ChildProcess>;
    fields.exitCode = code;
    fields.signalCode = signal;
    this.emit("exit", code, signal);
    this.#closed();
  }

  /** It is gone with the host, whose pipes may never come: the stand-ins end now. */
  abandoned(): void {
    for (const pipe of this.#pipes) {
      if (pipe !== null && !pipe.attached) pipe.destroy();
    }
  }

  #closed(): void {
    this.#closesNeeded--;
    if (this.#closesNeeded === 0) this.emit("close", this.exitCode, this.signalCode);
  }
}
