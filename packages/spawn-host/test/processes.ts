// What the spawn host's tests share: waiting for a condition with a deadline a loaded machine
// meets, and whether a process is still there.

/** Generous: the machine running the tests may be loaded. */
const DEADLINE_MS = 60_000;

export async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 20));
  }
}

export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
