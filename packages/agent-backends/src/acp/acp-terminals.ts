import * as acp from "@agentclientprotocol/sdk";
import type { ProcessClient } from "@deckhand/process-manager";
import { quoteShellWord } from "@deckhand/shell";
import type { ProcessOutputResponse } from "@deckhand/wire";
import { agentPath, toRequestError } from "./acp-files.ts";

/** A process ended by a signal reports 128 + its number as exit code (process API contract). */
const SIGNAL_EXIT_BASE = 128;

interface Terminal {
  processId: string;
  /** ACP's `outputByteLimit`: the output the agent sees keeps at most this many bytes. */
  outputByteLimit: number | null;
  /** The exit status, once seen, so a released terminal's answer needs no lookup. */
  exitStatus: acp.TerminalExitStatus | null;
}

/** The last `limit` bytes of `text`, starting on a character boundary, as ACP asks. */
export function keepTail(text: string, limit: number): { text: string; cut: boolean } {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= limit) return { text, cut: false };
  let start = bytes.length - limit;
  while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start += 1;
  return { text: bytes.subarray(start).toString("utf8"), cut: true };
}

/** The shell command line a `terminal/create` asks for. */
export function terminalCommandLine(command: string, args: readonly string[] | undefined): string {
  // Without arguments, agents send a whole command line (`npm test -- --watch=false`), as Zed
  // runs it; with arguments, `command` is the program and every word is passed as given.
  if (args === undefined || args.length === 0) return command;
  return [command, ...args].map(quoteShellWord).join(" ");
}

/**
 * ACP terminals served through the workspace agent's process API: a terminal is a process of
 * the chat, started in the background in the worktree. Output keeps the process API's head+tail
 * truncation and the agent's byte limit; kill signals the process group; release forgets the
 * terminal and kills it if it still runs.
 */
export class AcpTerminals {
  readonly #processes: ProcessClient;
  readonly #worktreePath: string;
  readonly #terminals = new Map<string, Terminal>();
  #nextId = 1;

  constructor(processes: ProcessClient, worktreePath: string) {
    this.#processes = processes;
    this.#worktreePath = worktreePath;
  }

  get size(): number {
    return this.#terminals.size;
  }

  #terminal(terminalId: string): Terminal {
    const terminal = this.#terminals.get(terminalId);
    if (!terminal) {
      throw new acp.RequestError(-32002, `Resource not found: no terminal "${terminalId}"`);
    }
    return terminal;
  }

  async create(params: acp.CreateTerminalRequest): Promise<acp.CreateTerminalResponse> {
    try {
      const workdir = agentPath(this.#worktreePath, params.cwd ?? this.#worktreePath);
      const env: Record<string, string> = {};
      for (const variable of params.env ?? []) env[variable.name] = variable.value;
      const started = await this.#processes.start({
        command: terminalCommandLine(params.command, params.args),
        workdir,
        background: true,
        ...(Object.keys(env).length === 0 ? {} : { env }),
      });
      const terminalId = `term-${this.#nextId++}-${started.id}`;
      this.#terminals.set(terminalId, {
        processId: started.id,
        outputByteLimit: params.outputByteLimit ?? null,
        exitStatus: null,
      });
      return { terminalId };
    } catch (error) {
      throw toRequestError(error, `run ${params.command}`);
    }
  }

  async #exitStatus(
    terminal: Terminal,
    answer: ProcessOutputResponse,
  ): Promise<acp.TerminalExitStatus | null> {
    if (answer.running) return null;
    if (terminal.exitStatus !== null) return terminal.exitStatus;
    let signal: string | null = null;
    if (answer.exit_code !== null && answer.exit_code > SIGNAL_EXIT_BASE) {
      // Only the process list tells an exit by signal from an exit code above 128.
      const { processes } = await this.#processes.list({ limit: 100 });
      signal = processes.find((info) => info.id === terminal.processId)?.signal ?? null;
    }
    terminal.exitStatus =
      signal === null ? { exitCode: answer.exit_code, signal: null } : { exitCode: null, signal };
    return terminal.exitStatus;
  }

  async output(params: acp.TerminalOutputRequest): Promise<acp.TerminalOutputResponse> {
    const terminal = this.#terminal(params.terminalId);
    try {
      const answer = await this.#processes.output(terminal.processId);
      const exitStatus = await this.#exitStatus(terminal, answer);
      const kept =
        terminal.outputByteLimit === null
          ? { text: answer.output, cut: false }
          : keepTail(answer.output, terminal.outputByteLimit);
      return {
        output: kept.text,
        truncated: kept.cut || answer.truncated !== null,
        ...(exitStatus === null ? {} : { exitStatus }),
      };
    } catch (error) {
      throw toRequestError(error, `read terminal ${params.terminalId}`);
    }
  }

  async waitForExit(
    params: acp.WaitForTerminalExitRequest,
    signal?: AbortSignal,
  ): Promise<acp.WaitForTerminalExitResponse> {
    const terminal = this.#terminal(params.terminalId);
    try {
      const answer = await this.#processes.waitForExit(
        terminal.processId,
        signal === undefined ? {} : { signal },
      );
      return (await this.#exitStatus(terminal, answer)) ?? {};
    } catch (error) {
      throw toRequestError(error, `wait for terminal ${params.terminalId}`);
    }
  }

  async kill(params: acp.KillTerminalRequest): Promise<acp.KillTerminalResponse> {
    const terminal = this.#terminal(params.terminalId);
    await this.#kill(terminal, params.terminalId);
    return {};
  }

  async #kill(terminal: Terminal, terminalId: string): Promise<void> {
    try {
      await this.#processes.signal(terminal.processId, "kill");
    } catch (error) {
      // 409: it already exited, which is what a kill wants.
      if ((error as { status?: number }).status === 409) return;
      throw toRequestError(error, `kill terminal ${terminalId}`);
    }
  }

  async release(params: acp.ReleaseTerminalRequest): Promise<acp.ReleaseTerminalResponse> {
    const terminal = this.#terminal(params.terminalId);
    this.#terminals.delete(params.terminalId);
    if (terminal.exitStatus === null) await this.#kill(terminal, params.terminalId);
    return {};
  }

  /** Kills and forgets every terminal (the agent died or the backend is going away). */
  async releaseAll(): Promise<void> {
    const terminals = [...this.#terminals.entries()];
    this.#terminals.clear();
    await Promise.allSettled(
      terminals.map(([terminalId, terminal]) =>
        terminal.exitStatus === null ? this.#kill(terminal, terminalId) : Promise.resolve(),
      ),
    );
  }
}
