import { spawn } from "node:child_process";

/** Enough of a runtime to run its CLI: which binary, and the flags that go before a subcommand. */
export interface ContainerCli {
  readonly binary: string;
  readonly globalArgs: readonly string[];
}

export interface CliResult {
  /** Null when the process did not exit by itself (killed on timeout) or could not start. */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** Set when the binary could not be started at all (ENOENT, EACCES). */
  spawnError: NodeJS.ErrnoException | null;
}

/** Short answers only (info, inspect, kill): anything past this is dropped. */
const MAX_CAPTURE = 1024 * 1024;

/**
 * Runs one CLI subcommand with arguments as an array, never through a shell, and collects its
 * (short) output. Used for everything except `run`, whose output streams.
 */
export function runCli(
  cli: ContainerCli,
  args: readonly string[],
  options: { timeoutMs: number; env?: NodeJS.ProcessEnv },
): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(cli.binary, [...cli.globalArgs, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: options.env ?? process.env,
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let captured = 0;
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      if (captured >= MAX_CAPTURE) return;
      captured += chunk.length;
      into.push(chunk);
    };
    child.stdout.on("data", collect(stdout));
    child.stderr.on("data", collect(stderr));
    let timedOut = false;
    let spawnError: NodeJS.ErrnoException | null = null;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, options.timeoutMs);
    child.on("error", (error) => {
      spawnError = error;
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({
        exitCode: timedOut || spawnError !== null ? null : code,
        stdout: Buffer.concat(stdout).toString("utf8"),
        stderr: Buffer.concat(stderr).toString("utf8"),
        timedOut,
        spawnError,
      });
    });
  });
}

/** The first non-empty line of a CLI's error output, for one-line reasons. */
export function firstLine(text: string): string {
  const line = text
    .split("\n")
    .map((part) => part.trim())
    .find((part) => part.length > 0);
  return line ?? "(no output)";
}
