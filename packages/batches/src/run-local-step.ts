// Runs a step's script on this machine with `sh`, in its own process group, so a timeout or an
// abort kills everything the script started, not only the shell.
import { spawn } from "node:child_process";
import { errnoCode } from "@deckhand/errors";

export interface LocalStepOptions {
  script: string;
  cwd: string;
  env: Readonly<Record<string, string>>;
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

export function runLocalStep(options: LocalStepOptions): Promise<LocalStepResult> {
  return new Promise((resolve, reject) => {
    if (options.signal.aborted) {
      resolve({ exitCode: null });
      return;
    }
    const child = spawn("sh", ["-c", options.script], {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const abort = () => {
      if (child.pid !== undefined) killGroup(child.pid);
    };
    options.signal.addEventListener("abort", abort, { once: true });
    child.stdout.on("data", (data: Buffer) => options.onOutput("stdout", data));
    child.stderr.on("data", (data: Buffer) => options.onOutput("stderr", data));
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
