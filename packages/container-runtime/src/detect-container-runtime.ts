import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ContainerCli, firstLine, runCli } from "./container-cli.ts";
import { ContainerRuntimeError } from "./container-runtime-error.ts";

export type ContainerRuntimeKind = "podman" | "docker";

/** A CLI whose `info` answered: the only thing this package runs containers through. */
export interface ContainerRuntime extends ContainerCli {
  readonly kind: ContainerRuntimeKind;
  /** Added to every `run` (the ulimits of a restricted host). */
  readonly runArgs: readonly string[];
  /** The engine's version as `info` reports it (the server's, for Docker). */
  readonly version: string;
  /**
   * Rootless engines map container root to the invoking user and other container users to
   * subordinate ids, which changes how a run keeps workspace files owned by the host user.
   */
  readonly rootless: boolean;
  /** Whether RESTRICTED_HOST_PODMAN_FLAGS are passed: asked for, or found needed by trying. */
  readonly restrictedHost: boolean;
}

export interface RuntimeProbe {
  readonly kind: ContainerRuntimeKind;
  readonly binary: string;
  /** Null when this candidate is a runtime. */
  readonly unavailableReason: string | null;
  /** What else detection found (the restricted-host flags were needed, and why); else null. */
  readonly note: string | null;
}

export interface ContainerRuntimeDetection {
  /** The first candidate that answered `info`, or null when none did. */
  readonly runtime: ContainerRuntime | null;
  /** Every candidate tried, in order, with why it is not a runtime. */
  readonly probes: readonly RuntimeProbe[];
}

/**
 * The flags that stand in for /etc/containers/containers.conf on hosts like Deckhand's CI
 * machines: crun refuses their hybrid cgroup layout, and Podman's default open-files and process
 * limits cannot be raised there. Passing them as flags means no machine-wide config is needed.
 */
export const RESTRICTED_HOST_PODMAN_FLAGS = Object.freeze({
  globalArgs: Object.freeze(["--runtime", "runc", "--cgroup-manager", "cgroupfs"]),
  runArgs: Object.freeze(["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]),
});

export interface DetectContainerRuntimeOptions {
  /** Tried in this order; the first that works wins. Default: podman, then docker. */
  candidates?: readonly ContainerRuntimeKind[];
  /** Binary per kind, when not the kind's name on PATH. */
  binaries?: Partial<Record<ContainerRuntimeKind, string>>;
  /**
   * How long each `info` (and each trial container) may take. Default 30 s: Podman's first
   * `info` on a fresh machine or after a reboot sets up its storage and can take many seconds,
   * and a runtime given up too early fails every container step.
   */
  timeoutMs?: number;
  /**
   * Podman's RESTRICTED_HOST_PODMAN_FLAGS (see there): true passes them, false never does. When
   * absent, detection finds out by trying: a container on an empty root file system is started
   * with Podman's defaults and, only when that fails, with the flags.
   */
  restrictedHost?: boolean;
}

/** Default limit of each `info` and trial container. */
const DEFAULT_PROBE_TIMEOUT_MS = 30_000;

const INFO_FORMAT: Record<ContainerRuntimeKind, string> = {
  podman: "{{.Version.Version}}|{{.Host.Security.Rootless}}",
  docker: "{{.ServerVersion}}|{{.SecurityOptions}}",
};

/** The name of a command no root file system has: what a trial container is asked to run. */
const TRIAL_COMMAND = "/deckhand-runtime-trial";

/**
 * Whether the engine can create a container with these flags. The trial runs a command that
 * does not exist on an empty root file system (Podman's `--rootfs`, so no image is needed):
 * exit 127, "command not found", means the container was created and only the command was
 * missing, which is as far as a restricted host's errors (refused rlimits, a cgroup layout the
 * OCI runtime rejects) never get. The directory, and what the engine put in it, is removed.
 */
async function tryContainer(
  cli: ContainerCli,
  runArgs: readonly string[],
  timeoutMs: number,
): Promise<{ works: boolean; reason: string }> {
  const root = await mkdtemp(join(tmpdir(), "deckhand-runtime-trial-"));
  try {
    const result = await runCli(
      cli,
      ["run", "--rm", "--network", "none", ...runArgs, "--rootfs", root, TRIAL_COMMAND],
      { timeoutMs },
    );
    if (result.exitCode === 127) return { works: true, reason: "" };
    const reason = result.timedOut
      ? `a trial container did not finish within ${timeoutMs} ms`
      : firstLine(result.stderr || result.stdout);
    return { works: false, reason };
  } finally {
    await rm(root, { recursive: true, force: true }).catch(() => {});
  }
}

/**
 * Podman's flags on this host: the restricted-host flags when asked for, none when refused, and
 * otherwise what a trial container shows is needed. Null (with the reason) when no container
 * can be started either way.
 */
async function podmanFlags(
  binary: string,
  options: DetectContainerRuntimeOptions,
  timeoutMs: number,
): Promise<
  | { globalArgs: readonly string[]; runArgs: readonly string[]; note: string | null }
  | { failure: string }
> {
  const restricted = {
    globalArgs: RESTRICTED_HOST_PODMAN_FLAGS.globalArgs,
    runArgs: RESTRICTED_HOST_PODMAN_FLAGS.runArgs,
  };
  if (options.restrictedHost === true) return { ...restricted, note: null };
  const plain = await tryContainer({ binary, globalArgs: [] }, [], timeoutMs);
  if (plain.works) return { globalArgs: [], runArgs: [], note: null };
  const refused = `\`podman run\` cannot start a container here (${plain.reason})`;
  if (options.restrictedHost === false) {
    return {
      failure: `${refused}; containerRuntime.restrictedHost is false, so Deckhand does not try runc, cgroupfs and lower ulimits`,
    };
  }
  const withFlags = await tryContainer(
    { binary, globalArgs: restricted.globalArgs },
    restricted.runArgs,
    timeoutMs,
  );
  if (!withFlags.works) {
    return {
      failure: `${refused}, nor with the restricted-host flags (${withFlags.reason}); see docs/operations/container-runtimes.md`,
    };
  }
  const flags = [...restricted.globalArgs, ...restricted.runArgs].join(" ");
  return {
    ...restricted,
    note: `podman: its defaults cannot start a container here (${plain.reason}), so it runs with ${flags}; set containerRuntime.restrictedHost to true to skip this trial`,
  };
}

async function probe(
  kind: ContainerRuntimeKind,
  options: DetectContainerRuntimeOptions,
): Promise<{ runtime: ContainerRuntime | null; probe: RuntimeProbe }> {
  const binary = options.binaries?.[kind] ?? kind;
  // `info` itself needs the global flags on a host whose default OCI runtime cannot work.
  const infoRestricted = kind === "podman" && options.restrictedHost === true;
  const cli: ContainerCli = {
    binary,
    globalArgs: infoRestricted ? RESTRICTED_HOST_PODMAN_FLAGS.globalArgs : [],
  };
  const timeoutMs = options.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const result = await runCli(cli, ["info", "--format", INFO_FORMAT[kind]], { timeoutMs });
  const unavailable = (reason: string) => ({
    runtime: null,
    probe: { kind, binary, unavailableReason: `${kind}: ${reason}`, note: null },
  });
  if (result.spawnError !== null) {
    return unavailable(
      result.spawnError.code === "ENOENT"
        ? `not installed (no \`${binary}\` on PATH)`
        : `\`${binary}\` could not be started: ${result.spawnError.message}`,
    );
  }
  if (result.timedOut) {
    return unavailable(
      `the client is installed but \`${kind} info\` did not answer within ${timeoutMs} ms`,
    );
  }
  if (result.exitCode !== 0) {
    return unavailable(
      `the client is installed but \`${kind} info\` failed: ${firstLine(result.stderr || result.stdout)}`,
    );
  }
  const [version = "", security = ""] = result.stdout.trim().split("|");
  const rootless = kind === "podman" ? security === "true" : security.includes("rootless");
  // Docker has no restricted-host flags (nor `--rootfs` for a trial): its `info` decides.
  const flags =
    kind === "podman"
      ? await podmanFlags(binary, options, timeoutMs)
      : { globalArgs: [], runArgs: [], note: null };
  if ("failure" in flags) return unavailable(flags.failure);
  return {
    runtime: {
      kind,
      binary,
      globalArgs: flags.globalArgs,
      runArgs: flags.runArgs,
      version,
      rootless,
      restrictedHost: flags.runArgs.length > 0,
    },
    probe: { kind, binary, unavailableReason: null, note: flags.note },
  };
}

/**
 * Finds a container runtime by a working `info`, never by a binary on PATH: a Docker client
 * without a reachable daemon is not a runtime. Candidates are probed one after another so the
 * first working one wins deterministically, and none after it is started (a client whose daemon
 * does not answer would hold every run's first container step up to its timeout); every probe
 * made is reported, to explain a fallback.
 */
export async function detectContainerRuntime(
  options: DetectContainerRuntimeOptions = {},
): Promise<ContainerRuntimeDetection> {
  const candidates = options.candidates ?? ["podman", "docker"];
  const probes: RuntimeProbe[] = [];
  for (const kind of candidates) {
    const outcome = await probe(kind, options);
    probes.push(outcome.probe);
    if (outcome.runtime !== null) return { runtime: outcome.runtime, probes };
  }
  return { runtime: null, probes };
}

/**
 * The `no_runtime` error for a detection that found none: every candidate's reason, and what to
 * do (for batch runs, the `local` runtime: `--runtime local` on the command line).
 */
export function noRuntimeError(detection: ContainerRuntimeDetection): ContainerRuntimeError {
  const reasons = detection.probes
    .map((entry) => entry.unavailableReason)
    .filter((reason) => reason !== null);
  return new ContainerRuntimeError(
    "no_runtime",
    `no container runtime works on this machine${reasons.length === 0 ? "" : ` (${reasons.join("; ")})`}; install Podman or start a Docker daemon, or run the steps on this machine (runtime "local", --runtime local)`,
  );
}

/** Like detectContainerRuntime, but a missing runtime is an error that says why each failed. */
export async function requireContainerRuntime(
  options: DetectContainerRuntimeOptions = {},
): Promise<ContainerRuntime> {
  const detection = await detectContainerRuntime(options);
  if (detection.runtime !== null) return detection.runtime;
  throw noRuntimeError(detection);
}
