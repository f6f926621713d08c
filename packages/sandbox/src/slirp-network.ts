// The internet for a sandbox, without the machine's loopback services: slirp4netns gives the
// sandbox's own network namespace a user-mode TCP/IP stack (as rootless Podman does), and
// `--disable-host-loopback` keeps 10.0.2.2 from reaching the host's 127.0.0.1, so a step cannot
// drive the Deckhand server or a database listening on loopback.
import { type ChildProcess, spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import type { Readable, Writable } from "node:stream";
import { SandboxError } from "./sandbox-error.ts";

/** The address slirp4netns answers DNS on; the sandbox's resolv.conf names it. */
export const SLIRP_NAMESERVER = "10.0.2.3";

export interface SlirpAttachOptions {
  slirp4netns: string;
  /** The descriptor (of `child`'s stdio) bubblewrap writes `{"child-pid": N}` to. */
  infoFd: number;
  /** The descriptor bubblewrap waits on before it runs the command. */
  blockFd: number;
  timeoutMs: number;
  /**
   * Starts slirp4netns with these descriptors (`spawn` with this process's environment by
   * default): the launcher passes the way it started the sandbox.
   */
  spawn?: (
    file: string,
    args: readonly string[],
    stdio: readonly ("pipe" | "ignore")[],
  ) => ChildProcess;
}

export interface SlirpNetwork {
  /** Stops slirp4netns; the sandbox's network goes with it. */
  stop(): void;
}

function readChildPid(info: Readable, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = "";
    const timer = setTimeout(
      () => fail(`bubblewrap did not report its child within ${timeoutMs} ms`),
      timeoutMs,
    );
    const fail = (message: string) => {
      clearTimeout(timer);
      info.off("data", onData);
      reject(new SandboxError("network_failed", message));
    };
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      const match = /"child-pid"\s*:\s*(\d+)/.exec(text);
      if (match === null) return;
      clearTimeout(timer);
      info.off("data", onData);
      info.resume();
      resolve(Number(match[1]));
    };
    info.on("data", onData);
    info.once("end", () => fail("bubblewrap exited before it reported its child"));
  });
}

function waitReady(slirp: ChildProcess, timeoutMs: number): Promise<void> {
  const ready = slirp.stdio[3] as Readable;
  let stderr = "";
  slirp.stderr?.on("data", (chunk: Buffer) => {
    if (stderr.length < 2_000) stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    // Once ready, a later exit or error is not a failure to start (and other listeners stay).
    let settled = false;
    const timer = setTimeout(() => fail(`it was not ready within ${timeoutMs} ms`), timeoutMs);
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(new SandboxError("network_failed", `slirp4netns failed: ${why}`));
    };
    ready.once("data", () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve();
    });
    slirp.once("error", (error) => fail(error.message));
    slirp.once("exit", (code) =>
      fail(stderr.trim() || `it exited with code ${code} before it was ready`),
    );
  });
}

/**
 * Gives the sandbox `child` (started with `--unshare-net --info-fd --block-fd`) its network, then
 * lets it run. Throws SandboxError `network_failed` after stopping the sandbox, which never ran
 * its command.
 */
export async function attachSlirpNetwork(
  child: ChildProcess,
  options: SlirpAttachOptions,
): Promise<SlirpNetwork> {
  let sandboxPid: number | null = null;
  try {
    sandboxPid = await readChildPid(child.stdio[options.infoFd] as Readable, options.timeoutMs);
    return await connect(child, sandboxPid, options);
  } catch (error) {
    abandon(child, options.blockFd, sandboxPid);
    throw error;
  }
}

/**
 * Kills the sandbox and lets go of the pipe it is blocked on: a child process reports `close`
 * only when every pipe to it is closed, and this one, written to only to let the command start,
 * would otherwise stay open, leaving whoever waits for `close` waiting forever (and the process
 * in the sandbox blocked for good). The end of that pipe is what lets the command start, and
 * bubblewrap's own death does not stop the process it started inside the namespace; so the pipe
 * goes only once that process (the namespace's first, whose death ends every other in it) has
 * been sent SIGKILL, which it cannot outrun. Without its pid the pipe stays open, as it was.
 */
function abandon(child: ChildProcess, blockFd: number, sandboxPid: number | null): void {
  const stopInside = () => {
    if (sandboxPid === null) return;
    try {
      process.kill(sandboxPid, "SIGKILL");
    } catch {
      // Already gone.
    }
    (child.stdio[blockFd] as Writable | null)?.destroy();
  };
  // bubblewrap first, and the namespace's first process only once bubblewrap is seen to have
  // exited: killed before it, bubblewrap could see that process die and exit with a code of its
  // own before its signal came (on a loaded machine it did), and the sandbox would look as if its
  // command had run and failed instead of having been stopped. Sending the signal is not enough
  // to order them: a sandbox the spawn host started is signalled by a message to the host. The
  // command cannot start meanwhile: it waits on the pipe this process still holds.
  if (child.exitCode === null && child.signalCode === null) {
    child.once("exit", stopInside);
    child.kill("SIGKILL");
    return;
  }
  stopInside();
}

/**
 * Waits until the sandbox's loopback is up. bubblewrap reports its child before that child has
 * configured the namespace's loopback; slirp4netns configuring the namespace at the same time
 * makes bubblewrap fail ("loopback: Failed RTM_NEWADDR") when several sandboxes start at once.
 * The namespace's routing table names 127.0.0.1 once bubblewrap has brought `lo` up, which it
 * does before it waits on the block pipe: the wait cannot deadlock. Reading the table needs no
 * tool inside the sandbox; if it cannot be read, slirp4netns starts as before.
 */
async function loopbackReady(pid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let delayMs = 1; ; delayMs = Math.min(delayMs * 2, 20)) {
    let table: string;
    try {
      table = await readFile(`/proc/${pid}/net/fib_trie`, "utf8");
    } catch {
      return;
    }
    if (table.includes("127.0.0.1")) return;
    if (Date.now() > deadline) {
      throw new SandboxError(
        "network_failed",
        `bubblewrap did not bring the sandbox's loopback up within ${timeoutMs} ms`,
      );
    }
    await new Promise((resolveWait) => setTimeout(resolveWait, delayMs));
  }
}

function spawnHere(
  file: string,
  args: readonly string[],
  stdio: readonly ("pipe" | "ignore")[],
): ChildProcess {
  return spawn(file, [...args], { stdio: [...stdio] });
}

async function connect(
  child: ChildProcess,
  pid: number,
  options: SlirpAttachOptions,
): Promise<SlirpNetwork> {
  await loopbackReady(pid, options.timeoutMs);
  const slirp = (options.spawn ?? spawnHere)(
    options.slirp4netns,
    [
      "--configure",
      "--mtu=65520",
      "--disable-host-loopback",
      "--ready-fd=3",
      // Closed when this process goes, however it goes, so slirp4netns never outlives it.
      "--exit-fd=4",
      String(pid),
      "tap0",
    ],
    ["ignore", "ignore", "pipe", "pipe", "pipe"],
  );
  const exitPipe = slirp.stdio[4] as Writable;
  exitPipe.on("error", () => {});
  const stop = () => {
    exitPipe.destroy();
    if (slirp.exitCode === null && slirp.signalCode === null) slirp.kill("SIGKILL");
  };
  try {
    await waitReady(slirp, options.timeoutMs);
  } catch (error) {
    stop();
    throw error;
  }
  slirp.on("error", () => {});
  const block = child.stdio[options.blockFd] as Writable;
  block.on("error", () => {});
  block.end("1");
  // A sandbox that failed while its network was being set up has already exited: waiting for
  // an exit that has come would leave slirp4netns running (its exit pipe is only closed here).
  if (child.exitCode !== null || child.signalCode !== null) stop();
  else child.once("exit", stop);
  return { stop };
}
