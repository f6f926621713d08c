import { spawn } from "node:child_process";
import { errorMessage } from "@deckhand/errors";
import { resolveExecutable } from "@deckhand/shell";
import { SandboxError } from "./sandbox-error.ts";
import type { SandboxMode } from "./sandbox-settings.ts";
import { attachSlirpNetwork } from "./slirp-network.ts";

/** What this machine can confine processes with, found once at start. */
export type SandboxCapability =
  | {
      kind: "bubblewrap";
      bubblewrap: string;
      /**
       * slirp4netns, which gives a sandbox the internet without the machine's loopback services;
       * null when it is missing or does not work (see `internetFallback`).
       */
      slirp4netns: string | null;
      /** Why sandboxes that need the internet share the machine's network, or null. */
      internetFallback: string | null;
    }
  | { kind: "none"; reason: string };

export interface DetectSandboxOptions {
  /** The PATH searched for `bwrap` and `slirp4netns`; this process's by default. */
  path?: string;
  /** How long each probe may take; generous, since a loaded machine starts processes slowly. */
  timeoutMs?: number;
  platform?: NodeJS.Platform;
}

const INSTALL_HINT =
  "install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap) and, for sandboxes with internet access, slirp4netns";

/** The smallest sandbox every confined process gets: its own PID and network namespaces. */
const PROBE_ARGS = [
  "--ro-bind",
  "/",
  "/",
  "--dev",
  "/dev",
  "--proc",
  "/proc",
  "--unshare-pid",
  "--unshare-net",
  "--die-with-parent",
  "--",
  "true",
];

function runProbe(
  executable: string,
  args: readonly string[],
  timeoutMs: number,
): Promise<string | null> {
  return new Promise((resolve) => {
    const child = spawn(executable, [...args], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 4_000) stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("error", (error) => {
      clearTimeout(timer);
      resolve(errorMessage(error));
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(null);
      else if (signal !== null) resolve(`it did not finish within ${timeoutMs} ms`);
      else resolve(stderr.trim() || `it exited with code ${code}`);
    });
  });
}

/** Whether slirp4netns can give a fresh network namespace the internet; null when it can. */
async function probeSlirp(
  bubblewrap: string,
  slirp4netns: string,
  timeoutMs: number,
): Promise<string | null> {
  const child = spawn(
    bubblewrap,
    [...PROBE_ARGS.slice(0, -2), "--info-fd", "3", "--block-fd", "4", "--", "true"],
    { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] },
  );
  const closed = new Promise<number | null>((resolve) => {
    child.once("close", (code) => resolve(code));
    child.once("error", () => resolve(null));
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  try {
    const network = await attachSlirpNetwork(child, {
      slirp4netns,
      infoFd: 3,
      blockFd: 4,
      timeoutMs,
    });
    const code = await closed;
    network.stop();
    return code === 0 ? null : `a sandbox with slirp4netns exited with code ${code}`;
  } catch (error) {
    child.kill("SIGKILL");
    // bubblewrap's own child (PID 1 of the sandbox) outlives it, holding the stderr pipe and
    // waiting on the block fd whose other end is ours: closing our ends lets it run `true` and
    // exit, and the child's "close" come.
    for (const stream of child.stdio) stream?.destroy();
    await closed;
    return errorMessage(error);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What `mode` gives on this machine. `none` and an `auto` without a working bubblewrap answer
 * `kind: "none"` with the reason; `bubblewrap` without one throws SandboxError `unavailable`.
 */
export async function detectSandbox(
  mode: SandboxMode,
  options: DetectSandboxOptions = {},
): Promise<SandboxCapability> {
  if (mode === "none") {
    return { kind: "none", reason: 'sandbox is "none" in config.json' };
  }
  const timeoutMs = options.timeoutMs ?? 30_000;
  const path = options.path ?? process.env.PATH ?? "";
  const linux = (options.platform ?? process.platform) === "linux";
  const found = linux ? await resolveExecutable("bwrap", { path }) : null;
  const slirp4netns = found !== null ? await resolveExecutable("slirp4netns", { path }) : null;
  // A sandbox that slirp4netns networks is also a sandbox: where it works (the usual case), one
  // probe answers both questions, and a start pays for one bubblewrap process instead of two
  // after one another. Only when it fails does bubblewrap alone say which of the two is broken.
  const slirpFailure =
    found !== null && slirp4netns !== null ? await probeSlirp(found, slirp4netns, timeoutMs) : null;
  const reason = await (async (): Promise<string | null> => {
    if (!linux) {
      return "bubblewrap sandboxes need Linux; on this system agents run unsandboxed";
    }
    if (found === null) return `bwrap is not on PATH; ${INSTALL_HINT}`;
    if (slirp4netns !== null && slirpFailure === null) return null;
    const failure = await runProbe(found, PROBE_ARGS, timeoutMs);
    if (failure === null) return null;
    return `bwrap cannot create a sandbox here (${failure}); where unprivileged user namespaces are turned off, allow them (sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile for bwrap on Ubuntu 24.04)`;
  })();
  if (reason !== null) {
    if (mode === "bubblewrap") {
      throw new SandboxError(
        "unavailable",
        `sandbox is "bubblewrap" but ${reason}; or set sandbox to "auto" to run unsandboxed where it cannot work`,
      );
    }
    return { kind: "none", reason };
  }
  const bubblewrap = found!;
  if (slirp4netns === null) {
    return {
      kind: "bubblewrap",
      bubblewrap,
      slirp4netns: null,
      internetFallback:
        "slirp4netns is not on PATH, so steps with network share the machine's network, loopback services included; install slirp4netns",
    };
  }
  return {
    kind: "bubblewrap",
    bubblewrap,
    slirp4netns: slirpFailure === null ? slirp4netns : null,
    internetFallback:
      slirpFailure === null
        ? null
        : `slirp4netns does not work here (${slirpFailure}), so steps with network share the machine's network, loopback services included`,
  };
}
