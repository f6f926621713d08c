// Waiting for a condition in the end-to-end suites: never a fixed sleep, always a deadline that
// names what did not happen.

/** Polls `check` until it returns something other than undefined or false, and returns that. */
export async function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  timeoutMs = 60_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, intervalMs));
  }
}
