import type { ChildProcess } from "node:child_process";
import { type LaunchProfile, ProcessLauncher } from "@deckhand/sandbox";
import {
  agentEnvironmentPolicy,
  agentEnvironment as inheritedEnvironment,
} from "@deckhand/secrets";
import { TailBuffer } from "./stderr-tail.ts";

/** How to start an ACP agent: what @deckhand/providers' `resolve()` returns for it. */
export interface AcpLaunch {
  /** The executable's absolute path (or a name found on PATH). */
  executable: string;
  args: readonly string[];
  /** Set over the inherited environment. */
  env: Readonly<Record<string, string>>;
  /** Removed from the inherited environment first (variables the provider sets up itself). */
  unset: readonly string[];
  /**
   * What the agent inherits: the server's environment as its agent-environment policy leaves it
   * (see @deckhand/secrets). Without it, the default policy applied to this process's
   * environment, so an agent never inherits Deckhand's own credentials or well-known keys.
   */
  inherit?: Readonly<Record<string, string>>;
  /**
   * Its sandbox besides the worktree it works in (state directories, login, network), as the
   * providers resolve it; no network at all when absent.
   */
  profile?: LaunchProfile;
  /** Starts it: the server's environment policy and sandbox; unconfined when absent. */
  launcher?: ProcessLauncher;
}

export interface AgentExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all (`ENOENT`, `EACCES`). */
  spawnError: string | null;
}

/** A running agent process: its stdio, how it ended, and the tail of what it wrote to stderr. */
export interface AgentProcess {
  readonly child: ChildProcess;
  readonly pid: number | null;
  /** Resolves once, when the process has exited or failed to start. */
  readonly exited: Promise<AgentExit>;
  exit(): AgentExit | null;
  stderrTail(): string;
  /** Ends stdin, sends SIGTERM to the group, then SIGKILL after `graceMs`. */
  stop(graceMs: number): Promise<void>;
}

/** The agent's environment: what it inherits, minus `unset`, plus `env`. */
export function agentEnvironment(launch: AcpLaunch): Record<string, string> {
  const env = { ...(launch.inherit ?? inheritedEnvironment(agentEnvironmentPolicy())) };
  for (const name of launch.unset) delete env[name];
  return { ...env, ...launch.env };
}

/** Signals the agent's whole process group, so wrappers (npx, shell scripts) die with it. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    if (process.platform === "win32") child.kill(signal);
    else process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

export function describeExit(exit: AgentExit): string {
  if (exit.spawnError !== null) return `could not be started (${exit.spawnError})`;
  return exit.code !== null ? `exited with code ${exit.code}` : `was killed by ${exit.signal}`;
}

/** Starts the agent in `cwd`, in its own process group, with piped stdio. */
export function spawnAgentProcess(launch: AcpLaunch, cwd: string): AgentProcess {
  const stderr = new TailBuffer();
  const profile = launch.profile ?? {
    writable: [],
    network: { internet: false, modelProxy: false },
  };
  const child = (launch.launcher ?? ProcessLauncher.unconfined()).spawn({
    executable: launch.executable,
    args: launch.args,
    cwd,
    environment: agentEnvironment(launch),
    // The worktree is the one place of the project it may change.
    profile: { ...profile, writable: [cwd, ...profile.writable] },
    stdio: ["pipe", "pipe", "pipe"],
    // Its own process group, so stopping it reaches everything it started.
    detached: process.platform !== "win32",
  });
  let exit: AgentExit | null = null;
  const exited = new Promise<AgentExit>((resolve) => {
    child.once("exit", (code, signal) => {
      exit ??= { code, signal, spawnError: null };
      resolve(exit);
    });
    child.once("error", (error: NodeJS.ErrnoException) => {
      // An error after a successful spawn (a failed kill) is not an exit.
      if (child.pid !== undefined && error.code !== "ENOENT") return;
      exit ??= { code: null, signal: null, spawnError: error.code ?? error.message };
      resolve(exit);
    });
  });
  child.stderr!.on("data", (chunk: Buffer) => stderr.push(chunk));
  // A write to a dead agent must not become an uncaught EPIPE.
  child.stdin!.on("error", () => {});

  return {
    child,
    pid: child.pid ?? null,
    exited,
    exit: () => exit,
    stderrTail: () => stderr.text(),
    async stop(graceMs) {
      if (exit !== null) {
        // The leader is gone; children it left behind in the group still get a SIGKILL.
        signalGroup(child, "SIGKILL");
        return;
      }
      child.stdin?.end();
      signalGroup(child, "SIGTERM");
      const done = await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)]);
      signalGroup(child, "SIGKILL");
      if (!done) await Promise.race([exited, sleep(graceMs)]);
    },
  };
}
