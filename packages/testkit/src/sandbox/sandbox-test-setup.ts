import { spawnSync } from "node:child_process";

export interface SandboxTestSetup {
  /** Whether bubblewrap makes sandboxes on this machine; the sandbox tests skip without it. */
  available: boolean;
  /** Why not, for the skip message. */
  reason: string | null;
}

/**
 * Whether the sandbox tests can run here. In CI (`CI` set) a machine without a working
 * bubblewrap is an error, not a skip: `.ci/run` installs it, and the tests must really run.
 */
export function sandboxTestSetup(): SandboxTestSetup {
  const probe = spawnSync(
    "bwrap",
    [
      "--ro-bind",
      "/",
      "/",
      "--dev",
      "/dev",
      "--proc",
      "/proc",
      "--unshare-pid",
      "--unshare-net",
      "true",
    ],
    { stdio: ["ignore", "ignore", "pipe"], encoding: "utf8" },
  );
  const reason =
    probe.error !== undefined
      ? `bwrap: ${probe.error.message}`
      : probe.status !== 0
        ? `bwrap failed: ${probe.stderr.trim()}`
        : null;
  if (reason !== null && process.env.CI) {
    throw new Error(
      `the sandbox tests need bubblewrap (${reason}); scripts/sandbox.sh installs it and CI must run it`,
    );
  }
  return { available: reason === null, reason };
}
