// Runs a step's script on this machine with the shell it is given, through the one launcher (its
// environment policy and sandbox), in its own process group, so a timeout or an abort kills
// everything the script started, not only the shell; and so the step dies with the process that
// runs it, even one killed with SIGKILL, instead of working on as an orphan.
import type { Readable } from "node:stream";
import { errnoCode } from "@deckhand/errors";
import type { LaunchProfile, ProcessLauncher } from "@deckhand/sandbox";

export interface LocalStepOptions {
  script: string;
  /** The shell that runs `script` (`localStepShell` chooses it): `<shell> -c <script>`. */
  shell: string;
  cwd: string;
  env: Readonly<Record<string, string>>;
  launcher: ProcessLauncher;
  /** Where the step may write (its checkout) and what it may reach. */
  profile: LaunchProfile;
  signal: AbortSignal;
  onOutput: (stream: "stdout" | "stderr", data: Buffer) => void;
}

export interface LocalStepResult {
  /** Null when the process was killed (by the signal, or from outside). */
  exitCode: number | null;
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch (error) {
    // ESRCH: the group is already gone.
    if (errnoCode(error) !== "ESRCH") throw error;
  }
}

/**
 * The step's shell, as `sh -c WATCHED sh SHELL SCRIPT`. A watcher in the step's process group
 * reads file descriptor 3, a pipe whose other end only this process holds: when this process
 * exits, however it dies (a `kill -9` of an executor, the OOM killer), the read ends and the
 * watcher kills the whole group. Then the step's shell replaces this one (same pid, so still the
 * group's leader), without descriptor 3, and runs the script.
 */
const WATCHED = `(cat <&3 >/dev/null 2>&1; kill -9 0) </dev/null >/dev/null 2>&1 &
exec "$1" -c "$2" 3<&-`;

export function runLocalStep(options: LocalStepOptions): Promise<LocalStepResult> {
  return new Promise((resolve, reject) => {
    if (options.signal.aborted) {
      resolve({ exitCode: null });
      return;
    }
    const child = options.launcher.spawn({
      executable: "sh",
      args: ["-c", WATCHED, "sh", options.shell, options.script],
      cwd: options.cwd,
      environment: options.env,
      profile: options.profile,
      detached: true,
      stdio: ["ignore", "pipe", "pipe", "pipe"],
      // Its pid is read from "spawn" on: the launcher may have the spawn host start it, which
      // spares this process (the one holding the database) a fork per step.
      pidFromSpawnEvent: true,
    });
    // Read (nothing ever comes) so the pipe's end is noticed and "close" below is not held up.
    const lifeline = child.stdio[3] as Readable | null;
    lifeline?.on("error", () => {});
    lifeline?.resume();
    // An abort before the process has started kills its group once it has.
    const abort = () => {
      if (child.pid !== undefined) killGroup(child.pid);
      else child.once("spawn", () => killGroup(child.pid!));
    };
    options.signal.addEventListener("abort", abort, { once: true });
    child.stdout!.on("data", (data: Buffer) => options.onOutput("stdout", data));
    child.stderr!.on("data", (data: Buffer) => options.onOutput("stderr", data));
    child.on("error", (error) => {
      options.signal.removeEventListener("abort", abort);
      reject(error);
    });
    let exitCode: number | null = null;
    // The step ends when its shell exits. Processes it left in the background still hold the
    // output pipes open, so they are killed here; otherwise "close" would wait for them.
    child.on("exit", (code) => {
      exitCode = code;
      if (child.pid !== undefined) killGroup(child.pid);
    });
    child.on("close", () => {
      options.signal.removeEventListener("abort", abort);
      resolve({ exitCode: options.signal.aborted ? null : exitCode });
    });
  });
}
