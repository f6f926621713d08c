import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { statSync } from "node:fs";
import { homedir, constants as osConstants } from "node:os";
import { resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { errnoCode, errorMessage } from "@deckhand/errors";
import { HeadTailBuffer, type HeadTailOptions } from "@deckhand/headtail";
import { describeZodError } from "@deckhand/http-kit";
import { type LaunchProfile, ProcessLauncher } from "@deckhand/sandbox";
import {
  ChatIdSchema,
  type ProcessInfo,
  ProcessLimits,
  type ProcessOutputResponse,
  type ProcessSignalName,
  StartProcessRequestSchema,
  WireEnv,
} from "@deckhand/wire";
import { type ChatScope, isVisibleTo, normalizeChatId } from "./chat-scope.ts";
import { ProcessManagerError } from "./process-manager-error.ts";

export type Environment = Record<string, string>;

export interface ProcessManagerOptions {
  /** The agent's configured directory: relative workdirs resolve against it, and it is the
   * default workdir when it exists (the home directory otherwise). */
  defaultWorkdir?: string;
  /** The environment every process starts from; `process.env` by default. */
  baseEnv?: Record<string, string | undefined>;
  /**
   * Receives a copy of the base environment and returns the whole environment to use (so it may
   * also remove variables). When it throws or rejects, the process starts with the base
   * environment and `onWarning` is told.
   */
  envHook?: (env: Environment) => Environment | Promise<Environment>;
  onWarning?: (message: string, details: Record<string, unknown>) => void;
  /**
   * Starts every process: the environment policy and the sandbox. Unconfined by default; the
   * workspace agent gives it the one its process was configured with.
   */
  launcher?: ProcessLauncher;
  /**
   * Where a process started in `workdir` may write and what it may reach; by default `workdir`
   * itself, with no network.
   */
  profile?: (workdir: string) => LaunchProfile;
  /** Most processes running at once; starting one more fails with `too_many_processes`. */
  maxRunning?: number;
  /**
   * How long an exited process stays listed before it is dropped, counted from when its command
   * exited or, if later, from when the last process in its group ended. A process whose group
   * still runs is never dropped: it is the only handle that can signal that group.
   */
  reapAfterMs?: number;
  /** Grace between SIGTERM and SIGKILL when a process group is terminated. */
  terminateGraceMs?: number;
  /**
   * How often to check whether anything still lives in the group of a process whose command has
   * exited. Once the group is seen gone it is never signalled again, because the kernel may then
   * give its id to an unrelated group: this interval bounds how long that can go unnoticed.
   */
  groupPollMs?: number;
  /**
   * How long to keep reading output after the process exits. A backgrounded grandchild can hold
   * the pipe open forever; after this the pipe is closed and the process reported as exited.
   */
  pipeDrainMs?: number;
  /** Longest any wait may block, whatever the caller asks. */
  waitCapMs?: number;
  /** Sizes of each process's head+tail output buffer. */
  buffer?: HeadTailOptions;
  /** Clock in milliseconds since the epoch; tests inject one to age processes. */
  now?: () => number;
}

export interface StartProcessOptions {
  command: string;
  workdir?: string | undefined;
  env?: Record<string, string> | undefined;
  background?: boolean | undefined;
  /** The chat the process is started for: it becomes `DECKHAND_CHAT_ID` and scopes visibility. */
  chat_id?: string | null | undefined;
}

/** What `start` accepts: a start request without `wait_ms`, which is `startAndWait`'s to handle. */
const StartOptionsSchema = StartProcessRequestSchema.omit({ wait_ms: true });

/** What `startAndWait` answers: the process as started and its output when the wait ended. */
export interface StartAndWaitResult {
  info: ProcessInfo;
  /** As `output` answers it, with `timed_out` true when the process still ran at the wait's end. */
  output: ProcessOutputResponse;
}

export interface ListProcessesOptions {
  /** Most processes to return, 1 to `ProcessLimits.maxListLimit`; 10 by default. */
  limit?: number | undefined;
}

export interface OutputOptions {
  /** A `next_cursor` from an earlier read: answer only the output that came after it. */
  cursor?: number | undefined;
}

export interface WaitOptions {
  /** Milliseconds to wait at most; capped by `waitCapMs`. */
  timeoutMs?: number | undefined;
  /** Ends the wait early, e.g. when the HTTP client disconnects. */
  signal?: AbortSignal | undefined;
}

export interface WaitForOutputOptions extends WaitOptions {
  /** Wake as soon as the output grows past this byte offset. */
  cursor: number;
}

/** Why a wait returned. */
export type WaitOutcome = "exited" | "changed" | "timed_out" | "aborted";

export interface ShutdownOptions {
  /** Grace between SIGTERM and SIGKILL; `terminateGraceMs` by default. */
  graceMs?: number;
}

const SIGNALS: Record<ProcessSignalName, NodeJS.Signals> = {
  terminate: "SIGTERM",
  kill: "SIGKILL",
  interrupt: "SIGINT",
};

/**
 * Put before every command so its standard error is the very pipe its standard output writes to,
 * keeping the exact order of the two (two pipes only keep the order within each chunk). It sits
 * on the command's first line so line numbers in the shell's messages stay the user's. A syntax
 * error in that line is reported before the `exec` runs, so the stderr pipe is still read too.
 */
const STDERR_TO_STDOUT = "exec 2>&1; ";

const DEFAULTS = {
  maxRunning: 64,
  reapAfterMs: 5 * 60 * 1000,
  terminateGraceMs: 5000,
  pipeDrainMs: 5000,
  groupPollMs: 1000,
};

/** How often shutdown checks whether the groups it sent SIGTERM to have ended. */
const SHUTDOWN_POLL_MS = 25;

interface ManagedProcess {
  readonly id: string;
  /** Start order; breaks ties between processes started in the same millisecond. */
  readonly sequence: number;
  readonly command: string;
  readonly workdir: string;
  readonly background: boolean;
  readonly chatId: string | null;
  readonly pid: number;
  readonly startedAtMs: number;
  readonly buffer: HeadTailBuffer;
  /** Resolves once the process is reported exited, with its final output in the buffer. */
  readonly exited: Promise<void>;
  /** Waiters to re-check on every output chunk and on exit. */
  readonly listeners: Set<() => void>;
  running: boolean;
  exitCode: number | null;
  signal: string | null;
  exitedAtMs: number | null;
  /** The exit status as soon as the child exits, before its pipes have drained. */
  pendingExitCode: number | null;
  escalation: NodeJS.Timeout | null;
  /**
   * False once the process group (whose id is the shell's pid) has been seen empty; never true
   * again, since the kernel may hand the id to another group from then on.
   */
  groupRunning: boolean;
  /** When the group was seen empty. */
  groupEndedAtMs: number | null;
  /** Checks every `groupPollMs`, from the shell's exit until the group is seen empty. */
  groupWatch: NodeJS.Timeout | null;
}

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number | null {
  if (code !== null) return code;
  if (signal !== null) return 128 + (osConstants.signals[signal] ?? 0);
  return null;
}

function stringEnvironment(env: Record<string, unknown>): Environment {
  const result: Environment = {};
  for (const [name, value] of Object.entries(env)) {
    if (typeof value === "string") result[name] = value;
  }
  return result;
}

/**
 * Whether any process is left in the group. A member that has exited but not yet been reaped by
 * its parent (or by init, for an orphan) still counts until it is.
 */
function isGroupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch (error) {
    // EPERM: members exist that this agent may not signal (one ran a setuid program); the group
    // is not gone, and a real signal will say whether any member can be reached.
    return errnoCode(error) !== "ESRCH";
  }
}

/** Sends a signal to a whole process group; false when the group no longer exists. */
function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch (error) {
    if (errnoCode(error) === "ESRCH") return false;
    throw error;
  }
}

function notify(record: ManagedProcess): void {
  if (record.listeners.size === 0) return;
  for (const listener of [...record.listeners]) listener();
}

/**
 * Starts shell commands in their own process groups, captures their combined output in a
 * bounded head+tail buffer, and answers questions about them scoped by chat. The lifetime of a
 * process is independent of whoever started it; only `signal` and `shutdown` end it early.
 */
export class ProcessManager {
  readonly #processes = new Map<string, ManagedProcess>();
  readonly #defaultWorkdir: string | undefined;
  readonly #baseEnv: Record<string, string | undefined>;
  readonly #envHook: ProcessManagerOptions["envHook"];
  readonly #onWarning: ProcessManagerOptions["onWarning"];
  readonly #launcher: ProcessLauncher;
  readonly #profile: (workdir: string) => LaunchProfile;
  readonly #maxRunning: number;
  readonly #reapAfterMs: number;
  readonly #terminateGraceMs: number;
  readonly #groupPollMs: number;
  readonly #pipeDrainMs: number;
  readonly #waitCapMs: number;
  readonly #bufferOptions: HeadTailOptions | undefined;
  readonly #now: () => number;
  #sequence = 0;
  #running = 0;
  #waiting = 0;
  #shuttingDown = false;

  constructor(options: ProcessManagerOptions = {}) {
    this.#defaultWorkdir = options.defaultWorkdir;
    this.#baseEnv = options.baseEnv ?? process.env;
    this.#envHook = options.envHook;
    this.#onWarning = options.onWarning;
    this.#launcher = options.launcher ?? ProcessLauncher.unconfined();
    this.#profile =
      options.profile ??
      ((workdir) => ({ writable: [workdir], network: { internet: false, modelProxy: false } }));
    this.#maxRunning = options.maxRunning ?? DEFAULTS.maxRunning;
    this.#reapAfterMs = options.reapAfterMs ?? DEFAULTS.reapAfterMs;
    this.#terminateGraceMs = options.terminateGraceMs ?? DEFAULTS.terminateGraceMs;
    this.#groupPollMs = options.groupPollMs ?? DEFAULTS.groupPollMs;
    this.#pipeDrainMs = options.pipeDrainMs ?? DEFAULTS.pipeDrainMs;
    this.#waitCapMs = options.waitCapMs ?? ProcessLimits.waitCapMs;
    this.#bufferOptions = options.buffer;
    this.#now = options.now ?? Date.now;
  }

  /** Processes currently running (including those whose output is still draining). */
  get runningCount(): number {
    return this.#running;
  }

  /** Waits in progress; lets tests and health checks see that abandoned waits are released. */
  get waitingCount(): number {
    return this.#waiting;
  }

  async start(options: StartProcessOptions): Promise<ProcessInfo> {
    return this.#info(await this.#launch(options));
  }

  /**
   * Starts a process and waits until it exits, the signal aborts or the (capped) timeout passes,
   * then answers its output — a foreground command in one call. The wait never stops the process.
   */
  async startAndWait(
    options: StartProcessOptions,
    wait: WaitOptions = {},
  ): Promise<StartAndWaitResult> {
    const record = await this.#launch(options);
    const info = this.#info(record);
    const outcome = await this.#wait(record, wait, () => (record.running ? null : "exited"));
    // The record itself, not a lookup by id: a process reaped right after exiting still answers.
    const output = this.#output(record, {});
    return { info, output: { ...output, timed_out: outcome === "timed_out" && output.running } };
  }

  async #launch(options: StartProcessOptions): Promise<ManagedProcess> {
    this.#assertAcceptingStarts();
    const { chat_id: rawChatId, ...fields } = options;
    const parsed = StartOptionsSchema.safeParse(fields);
    if (!parsed.success) {
      throw new ProcessManagerError("invalid_request", describeZodError(parsed.error), {
        cause: parsed.error,
      });
    }
    const chatId = this.#parseChatId(rawChatId);
    this.#assertCapacity();
    const request = parsed.data;
    const workdir = this.#resolveWorkdir(request.workdir);
    const env = await this.#environment(request.env, chatId);
    // Other starts may have run while this one awaited the env hook.
    this.#assertCapacity();
    this.#assertAcceptingStarts();

    const child = this.#launcher.spawn({
      executable: "/bin/sh",
      args: ["-c", `${STDERR_TO_STDOUT}${request.command}`],
      cwd: workdir,
      environment: env,
      profile: this.#profile(workdir),
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    if (child.pid === undefined) {
      const error = await new Promise<Error>((resolveError) => child.once("error", resolveError));
      throw new ProcessManagerError(
        "internal",
        `cannot start the process in ${workdir}: ${errnoCode(error) ?? error.message}`,
        { cause: error },
      );
    }
    return this.#track(child, child.pid, {
      command: request.command,
      workdir,
      background: request.background ?? false,
      chatId,
    });
  }

  /** Running processes first, then the newest; exited processes past `reapAfterMs` are dropped. */
  list(scope: ChatScope = null, options: ListProcessesOptions = {}): ProcessInfo[] {
    const limit = options.limit ?? ProcessLimits.defaultListLimit;
    if (!Number.isInteger(limit) || limit < 1 || limit > ProcessLimits.maxListLimit) {
      throw new ProcessManagerError(
        "invalid_request",
        `limit must be an integer from 1 to ${ProcessLimits.maxListLimit}, got ${limit}`,
      );
    }
    this.#reap();
    return [...this.#processes.values()]
      .filter((record) => isVisibleTo(scope, record.chatId))
      .sort((left, right) => {
        if (left.running !== right.running) return left.running ? -1 : 1;
        return right.sequence - left.sequence;
      })
      .slice(0, limit)
      .map((record) => this.#info(record));
  }

  get(id: string, scope: ChatScope = null): ProcessInfo {
    return this.#info(this.#find(id, scope));
  }

  /**
   * The output so far: a head+tail snapshot, or with a cursor only what came after it. The
   * process state is read before the buffer, so "not running" always comes with the final output.
   */
  output(id: string, scope: ChatScope = null, options: OutputOptions = {}): ProcessOutputResponse {
    return this.#output(this.#find(id, scope), options);
  }

  #output(record: ManagedProcess, options: OutputOptions): ProcessOutputResponse {
    const running = record.running;
    const exitCode = record.exitCode;
    const groupRunning = this.#isGroupRunning(record);
    if (options.cursor === undefined) {
      const { text, truncation } = record.buffer.snapshot();
      return {
        output: text,
        truncated: truncation,
        running,
        exit_code: exitCode,
        group_running: groupRunning,
        next_cursor: record.buffer.streamBytes,
        missed_bytes: 0,
        timed_out: false,
      };
    }
    this.#assertCursor(record, options.cursor);
    const { text, nextCursor, missedBytes } = record.buffer.readSince(options.cursor);
    return {
      output: text,
      truncated: null,
      running,
      exit_code: exitCode,
      group_running: groupRunning,
      next_cursor: nextCursor,
      missed_bytes: missedBytes,
      timed_out: false,
    };
  }

  /** Blocks until the process exits, the signal aborts, or the (capped) timeout passes. */
  waitForExit(
    id: string,
    scope: ChatScope = null,
    options: WaitOptions = {},
  ): Promise<WaitOutcome> {
    const record = this.#find(id, scope);
    return this.#wait(record, options, () => (record.running ? null : "exited"));
  }

  /** Like `waitForExit`, but also wakes as soon as there is output past `cursor`. */
  waitForOutput(id: string, scope: ChatScope, options: WaitForOutputOptions): Promise<WaitOutcome> {
    const record = this.#find(id, scope);
    this.#assertCursor(record, options.cursor);
    return this.#wait(record, options, () => {
      if (!record.running) return "exited";
      return record.buffer.streamBytes > options.cursor ? "changed" : null;
    });
  }

  /**
   * Signals the whole process group, for as long as anything in it lives: also after the command
   * itself exited, so what it left running (`server &`, jobs of an interrupted shell) can still
   * be stopped. `terminate` sends SIGTERM and, if anything in the group is still alive after
   * `terminateGraceMs`, SIGKILL. Only a group seen empty answers `conflict`.
   */
  signal(id: string, scope: ChatScope, name: ProcessSignalName): void {
    const record = this.#find(id, scope);
    const signal = SIGNALS[name];
    if (signal === undefined) {
      throw new ProcessManagerError(
        "invalid_request",
        `unknown signal "${String(name)}"; use one of ${Object.keys(SIGNALS).join(", ")}`,
      );
    }
    let delivered = false;
    if (record.groupRunning) {
      try {
        delivered = signalGroup(record.pid, signal);
      } catch (error) {
        throw new ProcessManagerError(
          "internal",
          `cannot send ${signal} to process ${record.id}: ${errnoCode(error) ?? String(error)}`,
          { cause: error },
        );
      }
      if (!delivered) this.#markGroupEnded(record);
    }
    if (!delivered) {
      const exitCode = record.exitCode ?? record.pendingExitCode;
      throw new ProcessManagerError(
        "conflict",
        `process ${record.id} has already exited${exitCode === null ? "" : ` (exit code ${exitCode})`} and nothing it started is left in its process group`,
      );
    }
    if (name === "terminate" && record.escalation === null) {
      record.escalation = setTimeout(() => {
        record.escalation = null;
        if (this.#isGroupRunning(record)) this.#signalQuietly(record, "SIGKILL");
      }, this.#terminateGraceMs);
    }
  }

  /**
   * Stops every process group still alive: SIGTERM, up to `graceMs` to exit, then SIGKILL.
   * Resolves when every process has been reported exited. No process starts afterwards.
   */
  async shutdown(options: ShutdownOptions = {}): Promise<void> {
    this.#shuttingDown = true;
    const graceMs = options.graceMs ?? this.#terminateGraceMs;
    const records = [...this.#processes.values()];
    for (const record of records) {
      if (record.escalation !== null) clearTimeout(record.escalation);
      record.escalation = null;
    }
    // Exited processes are included: what they started may live on in their groups.
    const targets = records.filter((record) => record.running || this.#isGroupRunning(record));
    for (const record of targets) this.#signalQuietly(record, "SIGTERM");
    const allExited = Promise.all(targets.map((record) => record.exited));
    const graceEndsAt = Date.now() + graceMs;
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<void>((resolveGrace) => {
      timer = setTimeout(resolveGrace, graceMs);
    });
    await Promise.race([allExited, graceOver]);
    clearTimeout(timer);
    // A group outliving its shell ends without an event (its members are not this process's
    // children), so the rest of the grace is spent polling it.
    while (Date.now() < graceEndsAt && targets.some((record) => this.#isGroupRunning(record))) {
      await sleep(SHUTDOWN_POLL_MS);
    }
    for (const record of targets) {
      if (this.#isGroupRunning(record)) this.#signalQuietly(record, "SIGKILL");
    }
    await allExited;
  }

  /**
   * Whether anything still lives in the record's process group. True while the process counts as
   * running (its output may still be draining), so `group_running` never contradicts `running`;
   * probed after that, and an empty group is remembered.
   */
  #isGroupRunning(record: ManagedProcess): boolean {
    if (record.running) return true;
    if (!record.groupRunning) return false;
    if (isGroupAlive(record.pid)) return true;
    this.#markGroupEnded(record);
    return false;
  }

  #markGroupEnded(record: ManagedProcess): void {
    record.groupRunning = false;
    record.groupEndedAtMs = this.#now();
    if (record.groupWatch !== null) clearInterval(record.groupWatch);
    record.groupWatch = null;
  }

  /** Called when the command exits: follows what it left in its group until that ends too. */
  #watchGroup(record: ManagedProcess): void {
    if (!record.groupRunning) return;
    if (!isGroupAlive(record.pid)) {
      this.#markGroupEnded(record);
      return;
    }
    record.groupWatch = setInterval(() => {
      if (!isGroupAlive(record.pid)) this.#markGroupEnded(record);
    }, this.#groupPollMs);
    // Leftovers in a group must not keep the agent's own process alive.
    record.groupWatch.unref();
  }

  /** For timers and shutdown, where a failure to signal must not throw but still be heard of. */
  #signalQuietly(record: ManagedProcess, signal: NodeJS.Signals): void {
    try {
      signalGroup(record.pid, signal);
    } catch (error) {
      this.#onWarning?.(`cannot send ${signal} to the process group`, {
        id: record.id,
        pid: record.pid,
        error: errorMessage(error),
      });
    }
  }

  #parseChatId(chatId: string | null | undefined): string | null {
    if (chatId === null || chatId === undefined) return null;
    const parsed = ChatIdSchema.safeParse(chatId);
    if (!parsed.success) {
      throw new ProcessManagerError(
        "invalid_request",
        `chat id "${chatId}" is not a UUID; send the chat's UUID or no chat id at all`,
      );
    }
    return normalizeChatId(parsed.data);
  }

  #assertAcceptingStarts(): void {
    if (this.#shuttingDown) {
      throw new ProcessManagerError(
        "conflict",
        "the process manager is shutting down and starts no new processes",
      );
    }
  }

  #assertCapacity(): void {
    if (this.#running >= this.#maxRunning) {
      throw new ProcessManagerError(
        "too_many_processes",
        `${this.#running} processes are running, the most allowed at once; wait for some to exit, or stop some with the terminate or kill signal, before starting another`,
      );
    }
  }

  #assertCursor(record: ManagedProcess, cursor: number): void {
    if (!Number.isInteger(cursor) || cursor < 0 || cursor > record.buffer.streamBytes) {
      throw new ProcessManagerError(
        "invalid_request",
        `cursor ${cursor} is not a position in the output of process ${record.id} (${record.buffer.streamBytes} bytes so far); pass a next_cursor from an earlier read of this process`,
      );
    }
  }

  /**
   * The directory checks stat synchronously: it takes about a microsecond where a promise-based
   * stat costs a thread-pool round trip on every start, and the spawn that follows blocks on the
   * same directory (its chdir) anyway.
   */
  #defaultDirectory(): string {
    if (this.#defaultWorkdir !== undefined && isDirectory(this.#defaultWorkdir)) {
      return resolve(this.#defaultWorkdir);
    }
    return homedir();
  }

  #resolveWorkdir(requested: string | undefined): string {
    if (requested === undefined) return this.#defaultDirectory();
    const path = resolve(this.#defaultWorkdir ?? homedir(), requested);
    let problem: string;
    let cause: unknown;
    try {
      const stats = statSync(path);
      if (stats.isDirectory()) return path;
      problem = "is not a directory";
    } catch (error) {
      const code = errnoCode(error);
      problem = code === "ENOENT" ? "does not exist" : `cannot be used (${code ?? "error"})`;
      cause = error;
    }
    const hint = `pass an existing directory, or omit workdir to run in ${this.#defaultDirectory()}`;
    throw new ProcessManagerError(
      "invalid_request",
      `workdir ${path} ${problem}; ${hint}`,
      cause === undefined ? undefined : { cause },
    );
  }

  async #environment(
    requestEnv: Record<string, string> | undefined,
    chatId: string | null,
  ): Promise<Environment> {
    const base = stringEnvironment(this.#baseEnv);
    let env = base;
    if (this.#envHook !== undefined) {
      try {
        const hooked: unknown = await this.#envHook({ ...base });
        if (hooked === null || typeof hooked !== "object") {
          throw new TypeError(`the env hook returned ${hooked === null ? "null" : typeof hooked}`);
        }
        env = stringEnvironment(hooked as Record<string, unknown>);
      } catch (error) {
        this.#onWarning?.("env hook failed; starting the process with the environment without it", {
          error: errorMessage(error),
        });
      }
    }
    const layered = { ...env, ...requestEnv };
    if (chatId !== null) layered[WireEnv.chatId] = chatId;
    return layered;
  }

  #newId(): string {
    for (;;) {
      const id = randomBytes(6).toString("hex");
      if (!this.#processes.has(id)) return id;
    }
  }

  #track(
    child: ChildProcess,
    pid: number,
    details: { command: string; workdir: string; background: boolean; chatId: string | null },
  ): ManagedProcess {
    let markExited!: () => void;
    const exited = new Promise<void>((resolveExited) => {
      markExited = resolveExited;
    });
    const record: ManagedProcess = {
      id: this.#newId(),
      sequence: ++this.#sequence,
      ...details,
      pid,
      startedAtMs: this.#now(),
      buffer: new HeadTailBuffer(this.#bufferOptions),
      exited,
      listeners: new Set(),
      running: true,
      exitCode: null,
      signal: null,
      exitedAtMs: null,
      pendingExitCode: null,
      escalation: null,
      groupRunning: true,
      groupEndedAtMs: null,
      groupWatch: null,
    };
    this.#processes.set(record.id, record);
    this.#running += 1;

    const onData = (chunk: Buffer) => {
      record.buffer.write(chunk);
      notify(record);
    };
    const onStreamError = (error: Error) => {
      this.#onWarning?.("reading process output failed", { id: record.id, error: error.message });
    };
    child.stdout?.on("data", onData).on("error", onStreamError);
    child.stderr?.on("data", onData).on("error", onStreamError);
    child.on("error", (error) => {
      this.#onWarning?.("process error", { id: record.id, error: error.message });
    });

    let exitStatus: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    let drainTimer: NodeJS.Timeout | undefined;
    let finished = false;
    // The buffer is closed before the process is marked exited: whoever sees "not running"
    // then also sees the final output.
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(drainTimer);
      child.stdout?.destroy();
      child.stderr?.destroy();
      record.buffer.close();
      record.exitCode = exitCodeOf(exitStatus?.code ?? null, exitStatus?.signal ?? null);
      record.signal = exitStatus?.code === null ? (exitStatus?.signal ?? null) : null;
      record.exitedAtMs = this.#now();
      record.running = false;
      this.#running -= 1;
      markExited();
      notify(record);
    };
    child.once("exit", (code, signal) => {
      exitStatus = { code, signal };
      record.pendingExitCode = exitCodeOf(code, signal);
      this.#watchGroup(record);
      drainTimer = setTimeout(finish, this.#pipeDrainMs);
    });
    child.once("close", finish);
    return record;
  }

  #find(id: string, scope: ChatScope): ManagedProcess {
    this.#reap();
    const record = this.#processes.get(id);
    // Another chat's process is reported exactly like a missing one, so ids leak nothing.
    if (record === undefined || !isVisibleTo(scope, record.chatId)) {
      throw new ProcessManagerError(
        "not_found",
        `no process with id "${id}"; list processes to see the ids you can use`,
      );
    }
    return record;
  }

  /**
   * Drops processes `reapAfterMs` after they exited and their group ended. One whose group still
   * runs is kept, whatever its age: dropping it would leave that group beyond any signal.
   */
  #reap(): void {
    const now = this.#now();
    for (const [id, record] of this.#processes) {
      if (record.exitedAtMs === null || now - record.exitedAtMs < this.#reapAfterMs) continue;
      if (this.#isGroupRunning(record)) continue;
      const endedAtMs = Math.max(record.exitedAtMs, record.groupEndedAtMs ?? record.exitedAtMs);
      if (now - endedAtMs >= this.#reapAfterMs) this.#processes.delete(id);
    }
  }

  #wait(
    record: ManagedProcess,
    options: WaitOptions,
    ready: () => WaitOutcome | null,
  ): Promise<WaitOutcome> {
    const immediate = ready();
    if (immediate !== null) return Promise.resolve(immediate);
    if (options.signal?.aborted) return Promise.resolve("aborted");
    const timeoutMs = Math.max(0, Math.min(options.timeoutMs ?? this.#waitCapMs, this.#waitCapMs));
    return new Promise<WaitOutcome>((resolveWait) => {
      let done = false;
      const finish = (outcome: WaitOutcome) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        record.listeners.delete(listener);
        this.#waiting -= 1;
        resolveWait(outcome);
      };
      const listener = () => {
        const outcome = ready();
        if (outcome !== null) finish(outcome);
      };
      const onAbort = () => finish("aborted");
      const timer = setTimeout(() => finish("timed_out"), timeoutMs);
      this.#waiting += 1;
      record.listeners.add(listener);
      options.signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  #info(record: ManagedProcess): ProcessInfo {
    return {
      id: record.id,
      command: record.command,
      workdir: record.workdir,
      background: record.background,
      running: record.running,
      exit_code: record.exitCode,
      signal: record.signal,
      started_at_unix: Math.floor(record.startedAtMs / 1000),
      exited_at_unix: record.exitedAtMs === null ? null : Math.floor(record.exitedAtMs / 1000),
      chat_id: record.chatId,
      group_running: this.#isGroupRunning(record),
    };
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
