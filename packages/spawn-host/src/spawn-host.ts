// Starting a process from the process that holds the embedded database is expensive: libuv
// starts a child with fork() on Linux and waits, blocking the event loop, until the child has
// exec'd, and fork() copies the parent's page tables, which grow with its resident memory
// (about 450 MiB with PGlite open). The spawn host is a small Node process, started once on
// first use, that runs short commands for it: the parent sends the final file, arguments,
// environment and directory over IPC and receives the output, paying a message each way instead
// of a fork. The host is started with an empty environment: each command carries its own.
import {
  type ChildProcess,
  type ExecFileException,
  execFile as execFileDirect,
  spawn,
} from "node:child_process";
import type { Socket } from "node:net";
import { SPAWN_HOST_SOURCE } from "./host-source.ts";
import { HostedChildProcess } from "./hosted-child-process.ts";

export interface HostedExecOptions {
  cwd: string;
  /** The command's whole environment (the host's own is empty). */
  env: Readonly<Record<string, string | undefined>>;
  /** Written to standard input, which is closed afterwards (and at once without it). */
  input?: string;
  /** Bound on standard output and on standard error, each, as `execFile`'s `maxBuffer`. */
  maxBuffer: number;
  /** The command is sent `killSignal` after this long, as `execFile`'s `timeout`. */
  timeoutMs: number;
  killSignal: NodeJS.Signals;
  /** Stops the command as `execFile`'s `signal` does (an `AbortError`). */
  signal?: AbortSignal;
}

/** What `execFile`'s callback receives, its output decoded as UTF-8. */
export interface HostedExecResult {
  error: ExecFileException | null;
  stdout: string;
  stderr: string;
}

export interface HostedSpawnOptions {
  cwd: string;
  /** The process's whole environment (the host's own is empty). */
  env: Readonly<Record<string, string | undefined>>;
  /** Its own process group, as `spawn`'s `detached`. */
  detached: boolean;
  /** Each descriptor a pipe to this process or nothing; a pipe is handed over by the host. */
  stdio: readonly ("pipe" | "ignore")[];
}

export interface SpawnHostOptions {
  /** The Node.js that runs the host; this one by default. */
  nodeExecutable?: string;
  /** The host is stopped after running nothing for this long, and started again when needed. */
  idleMs?: number;
}

/**
 * Long enough that a batch run or a session's turns keep one host; an idle server does not keep
 * a process it does not use (about 8 MiB of its own memory, the rest Node's shared pages).
 */
const DEFAULT_IDLE_MS = 10_000;

/** The error a command gets when the host exits while it runs (it may have run in part). */
export const SPAWN_HOST_EXITED = "ESPAWNHOSTEXITED";

interface ExecRequest {
  type: "exec";
  id: number;
  file: string;
  args: readonly string[];
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  input?: string;
  maxBuffer: number;
  timeoutMs: number;
  killSignal: NodeJS.Signals;
  aborted: boolean;
}

type Reply =
  | {
      type: "done";
      id: number;
      stdout: string;
      stderr: string;
      error: Record<string, unknown> | null;
    }
  | { type: "thrown"; id: number; error: Record<string, unknown> };

/** What the host says of a process it started with "spawn". */
type SpawnReport =
  | { type: "spawned"; id: number; pid: number }
  | { type: "pipe"; id: number; fd: number }
  | { type: "exit"; id: number; code: number | null; signal: NodeJS.Signals | null }
  | { type: "spawn-failed"; id: number; error: Record<string, unknown> };

/** What the host sends: answers, reports on processes, and once, that it takes commands. */
type HostMessage = Reply | SpawnReport | { type: "ready" };

interface Running {
  file: string;
  detached: boolean;
  process: HostedChildProcess;
}

interface Pending {
  file: string;
  args: readonly string[];
  options: HostedExecOptions;
  settle: (result: HostedExecResult) => void;
  /** What `execFile` threw, as it would have thrown here. */
  fail: (error: Error) => void;
  forgetAbort: () => void;
}

/**
 * Runs commands through one long-lived host process, started on first use. When the host
 * cannot be started, commands run directly, as `execFile` runs them; when it exits (killed,
 * crashed), the commands it was running fail with `SPAWN_HOST_EXITED` and the next command
 * starts a new one. The host never keeps this process alive.
 */
export class SpawnHost {
  readonly #node: string;
  readonly #idleMs: number;
  #idleTimer: NodeJS.Timeout | undefined;
  #child: ChildProcess | null = null;
  /** Whether `#child` has said it is ready to take commands. */
  #childReady = false;
  /** Callers of `ready()` waiting for the host being started. */
  #readyWaiters: ((ready: boolean) => void)[] = [];
  #unavailable = false;
  #nextId = 0;
  readonly #pending = new Map<number, Pending>();
  /** Processes started with `spawn` that have not exited. */
  readonly #running = new Map<number, Running>();

  constructor(options: SpawnHostOptions = {}) {
    this.#node = options.nodeExecutable ?? process.execPath;
    this.#idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
  }

  /** The host's process id once it runs; for tests and diagnostics. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** `execFile(file, args, …)` with UTF-8 output, run by the host. */
  execFile(
    file: string,
    args: readonly string[],
    options: HostedExecOptions,
  ): Promise<HostedExecResult> {
    const child = this.#host();
    // Until the host has started (a Node process: tens of milliseconds), commands run from here
    // rather than wait for it: a short command such as a cached preview that needs one git
    // process would otherwise pay the host's start on top of git's.
    if (child === null || !this.#childReady) return execDirectly(file, args, options);
    return new Promise((settle, fail) => {
      const id = this.#nextId++;
      const abort = () => child.send({ type: "abort", id });
      options.signal?.addEventListener("abort", abort, { once: true });
      const forgetAbort = () => options.signal?.removeEventListener("abort", abort);
      this.#pending.set(id, { file, args, options, settle, fail, forgetAbort });
      this.#busy(child);
      const request: ExecRequest = {
        type: "exec",
        id,
        file,
        args,
        cwd: options.cwd,
        env: options.env,
        ...(options.input !== undefined ? { input: options.input } : {}),
        maxBuffer: options.maxBuffer,
        timeoutMs: options.timeoutMs,
        killSignal: options.killSignal,
        aborted: options.signal?.aborted ?? false,
      };
      child.send(request);
    });
  }

  /**
   * `spawn(file, args, …)` by the host, whose pipes are then handed over: the returned process's
   * pid is known from its "spawn" event on (not at once), and its streams may be used at once.
   * Until the host is ready, or without one, the process is spawned here as `spawn` does.
   */
  spawn(file: string, args: readonly string[], options: HostedSpawnOptions): ChildProcess {
    const child = this.#host();
    if (child === null || !this.#childReady) {
      return spawn(file, [...args], {
        cwd: options.cwd,
        env: options.env,
        detached: options.detached,
        stdio: [...options.stdio],
      });
    }
    const id = this.#nextId++;
    // A process that exited is no longer signalled: its pid may be another's by then.
    const hosted = new HostedChildProcess(options.stdio, (signal) => {
      if (this.#running.has(id)) child.send({ type: "kill", id, signal });
    });
    this.#running.set(id, { file, detached: options.detached, process: hosted });
    this.#busy(child);
    child.send({
      type: "spawn",
      id,
      file,
      args,
      cwd: options.cwd,
      env: options.env,
      detached: options.detached,
      stdio: options.stdio,
    });
    return hosted;
  }

  /**
   * Starts the host if it is not running and resolves once it takes commands (true), or once it
   * is known it cannot (false: it could not start, or it exited first).
   */
  ready(): Promise<boolean> {
    const child = this.#host();
    if (child === null) return Promise.resolve(false);
    if (this.#childReady) return Promise.resolve(true);
    // Someone waits for it: the host's start keeps this process alive until it is ready.
    reference(child, true);
    return new Promise((resolveReady) => this.#readyWaiters.push(resolveReady));
  }

  #settleReady(ready: boolean): void {
    for (const waiter of this.#readyWaiters.splice(0)) waiter(ready);
  }

  /** Stops the host; a later command starts a new one. */
  close(): void {
    clearTimeout(this.#idleTimer);
    this.#child?.kill("SIGKILL");
  }

  #host(): ChildProcess | null {
    if (this.#unavailable) return null;
    if (this.#child !== null) return this.#child;
    const child = spawn(this.#node, ["-e", SPAWN_HOST_SOURCE], {
      cwd: "/",
      env: {},
      stdio: ["ignore", "ignore", "inherit", "ipc"],
      serialization: "advanced",
    });
    let started = false;
    child.once("spawn", () => {
      started = true;
    });
    child.on("message", (message: HostMessage, handle?: Socket) => {
      if (message.type === "done" || message.type === "thrown") {
        this.#settle(message);
        return;
      }
      if (message.type !== "ready") {
        this.#report(message, handle);
        return;
      }
      if (this.#child !== child) return;
      this.#childReady = true;
      this.#settleReady(true);
      if (this.#isIdle()) this.#idle(child);
    });
    // Writes to a channel that just closed fail; the disconnect below settles what was sent.
    child.on("error", () => {
      if (started) return;
      // The host never ran: nothing was started, so the commands sent to it run directly.
      this.#unavailable = true;
      this.#forget(child, (pending) => {
        execDirectly(pending.file, pending.args, pending.options).then(
          pending.settle,
          pending.fail,
        );
      });
    });
    child.once("disconnect", () => {
      this.#forget(child, (pending) =>
        pending.settle({ error: hostExitedError(pending.file), stdout: "", stderr: "" }),
      );
    });
    this.#child = child;
    // Not kept alive by this process while it starts; its idle time counts from when it is ready.
    reference(child, false);
    return child;
  }

  #settle(reply: Reply): void {
    const pending = this.#pending.get(reply.id);
    if (pending === undefined) return;
    this.#pending.delete(reply.id);
    pending.forgetAbort();
    if (this.#isIdle() && this.#child !== null) this.#idle(this.#child);
    if (reply.type === "thrown") {
      pending.fail(revive(reply.error));
      return;
    }
    const error = reply.error === null ? null : revive(reply.error);
    pending.settle({ error, stdout: reply.stdout, stderr: reply.stderr });
  }

  #report(report: SpawnReport, handle: Socket | undefined): void {
    const running = this.#running.get(report.id);
    if (running === undefined) {
      handle?.destroy();
      return;
    }
    const hosted = running.process;
    if (report.type === "spawned") hosted.started(report.pid);
    else if (report.type === "pipe" && handle !== undefined) hosted.pipe(report.fd, handle);
    else if (report.type === "exit" || report.type === "spawn-failed") {
      this.#running.delete(report.id);
      if (this.#isIdle() && this.#child !== null) this.#idle(this.#child);
      if (report.type === "exit") hosted.exited(report.code, report.signal);
      else hosted.failed(revive(report.error));
    }
  }

  /** A command or process is under way: the host stays, and keeps this process alive. */
  #busy(child: ChildProcess): void {
    clearTimeout(this.#idleTimer);
    if (this.#pending.size + this.#running.size === 1) reference(child, true);
  }

  #isIdle(): boolean {
    return this.#pending.size === 0 && this.#running.size === 0;
  }

  /**
   * Nothing runs: the host no longer keeps this process alive, and is stopped if nothing is
   * asked of it for a while. This side decides, so no command is ever sent to a host that is
   * on its way out; the host exits when its channel closes.
   */
  #idle(child: ChildProcess): void {
    reference(child, false);
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      if (this.#child !== child || !this.#isIdle()) return;
      this.#child = null;
      this.#childReady = false;
      this.#settleReady(false);
      child.disconnect();
    }, this.#idleMs);
    this.#idleTimer.unref();
  }

  /** Drops a host that is gone and hands each command it had to `handle`. */
  #forget(child: ChildProcess, handle: (pending: Pending) => void): void {
    if (this.#child !== child) return;
    this.#child = null;
    this.#childReady = false;
    this.#settleReady(false);
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const entry of pending) {
      entry.forgetAbort();
      handle(entry);
    }
    const running = [...this.#running.values()];
    this.#running.clear();
    for (const entry of running) abandon(entry);
  }
}

/**
 * A process whose host died: no exit will be reported for it, so it is stopped (its group too
 * when it has its own) rather than left running unseen, and reported killed.
 */
function abandon({ file, detached, process: hosted }: Running): void {
  if (hosted.pid === undefined) {
    hosted.failed(hostExitedError(file));
    return;
  }
  for (const target of detached ? [-hosted.pid, hosted.pid] : [hosted.pid]) {
    try {
      process.kill(target, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  hosted.abandoned();
  hosted.exited(null, "SIGKILL");
}

/** The host keeps this process alive only while it runs a command for it. */
function reference(child: ChildProcess, referenced: boolean): void {
  if (referenced) {
    child.ref();
    child.channel?.ref();
  } else {
    child.unref();
    child.channel?.unref();
  }
}

/** An error with the fields the host sent (code, killed, signal, name, …). */
function revive(fields: Record<string, unknown>): ExecFileException {
  return Object.assign(new Error(String(fields.message)), fields) as ExecFileException;
}

function hostExitedError(file: string): ExecFileException {
  return Object.assign(
    new Error(
      `the helper process that runs ${file} exited before ${file} finished; run the command again`,
    ),
    { code: SPAWN_HOST_EXITED },
  );
}

/** What the host does, done here: the fallback when there is no host. */
function execDirectly(
  file: string,
  args: readonly string[],
  options: HostedExecOptions,
): Promise<HostedExecResult> {
  return new Promise((settle) => {
    const child = execFileDirect(
      file,
      args,
      {
        cwd: options.cwd,
        env: options.env,
        encoding: "utf8",
        maxBuffer: options.maxBuffer,
        timeout: options.timeoutMs,
        killSignal: options.killSignal,
        ...(options.signal ? { signal: options.signal } : {}),
      },
      (error, stdout, stderr) => settle({ error, stdout, stderr }),
    );
    child.stdin?.on("error", () => {});
    child.stdin?.end(options.input);
  });
}

let shared: SpawnHost | undefined;

/** This process's spawn host, shared by every package that runs commands through one. */
export function sharedSpawnHost(): SpawnHost {
  shared ??= new SpawnHost();
  return shared;
}
