import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";

export interface SpawnedService {
  child: ChildProcess;
  url: string;
  /** Every line written to stdout and stderr so far. */
  output: string[];
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts a Deckhand service process (agent, server) and resolves once it logged, as a JSON line,
 * the message `readyMessage` with the `url` it listens on. Rejects with everything it printed
 * when it exits first or takes longer than `timeoutMs`.
 */
export async function spawnService(
  command: string,
  args: string[],
  options: {
    readyMessage: string;
    cwd?: string;
    env?: NodeJS.ProcessEnv;
    timeoutMs?: number;
  },
): Promise<SpawnedService> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  const exited = once(child, "exit").then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${command} did not start in time; it printed:\n${output.join("\n")}`));
    }, options.timeoutMs ?? 60_000);
    let pending = "";
    const onData = (chunk: Buffer) => {
      pending += chunk.toString("utf8");
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        output.push(line);
        try {
          const entry = JSON.parse(line) as { msg?: string; url?: string };
          if (entry.msg === options.readyMessage && entry.url) {
            clearTimeout(timer);
            resolve(entry.url);
          }
        } catch {
          // Not a log line (for example a usage message); kept in `output`.
        }
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(
        new Error(`${command} exited (${code ?? signal}) before listening:\n${output.join("\n")}`),
      );
    });
  });
  return { child, url, output, exited };
}

/** True while a process with this pid exists. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls until `condition` holds or `timeoutMs` passes; returns whether it held. */
export async function eventually(condition: () => boolean, timeoutMs = 30_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return condition();
}
