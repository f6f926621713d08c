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
}

export interface RuntimeProbe {
  readonly kind: ContainerRuntimeKind;
  readonly binary: string;
  /** Null when this candidate is a runtime. */
  readonly unavailableReason: string | null;
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
  /** How long each `info` may take. Default 5 s: a daemon that answers slower is not usable. */
  timeoutMs?: number;
  /** Pass RESTRICTED_HOST_PODMAN_FLAGS to Podman (see there). Default false. */
  restrictedHost?: boolean;
}

const INFO_FORMAT: Record<ContainerRuntimeKind, string> = {
  podman: "{{.Version.Version}}|{{.Host.Security.Rootless}}",
  docker: "{{.ServerVersion}}|{{.SecurityOptions}}",
};

async function probe(
  kind: ContainerRuntimeKind,
  options: DetectContainerRuntimeOptions,
): Promise<{ runtime: ContainerRuntime | null; probe: RuntimeProbe }> {
  const binary = options.binaries?.[kind] ?? kind;
  const restricted = kind === "podman" && options.restrictedHost === true;
  const cli: ContainerCli = {
    binary,
    globalArgs: restricted ? RESTRICTED_HOST_PODMAN_FLAGS.globalArgs : [],
  };
  const timeoutMs = options.timeoutMs ?? 5000;
  const result = await runCli(cli, ["info", "--format", INFO_FORMAT[kind]], { timeoutMs });
  const unavailable = (reason: string) => ({
    runtime: null,
    probe: { kind, binary, unavailableReason: `${kind}: ${reason}` },
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
  return {
    runtime: {
      kind,
      binary,
      globalArgs: cli.globalArgs,
      runArgs: restricted ? RESTRICTED_HOST_PODMAN_FLAGS.runArgs : [],
      version,
      rootless,
    },
    probe: { kind, binary, unavailableReason: null },
  };
}

/**
 * Finds a container runtime by a working `info`, never by a binary on PATH: a Docker client
 * without a reachable daemon is not a runtime. Candidates are probed one after another so the
 * first working one wins deterministically; every probe is reported, to explain a fallback.
 */
export async function detectContainerRuntime(
  options: DetectContainerRuntimeOptions = {},
): Promise<ContainerRuntimeDetection> {
  const candidates = options.candidates ?? ["podman", "docker"];
  const probes: RuntimeProbe[] = [];
  let runtime: ContainerRuntime | null = null;
  for (const kind of candidates) {
    const outcome = await probe(kind, options);
    probes.push(outcome.probe);
    if (outcome.runtime !== null && runtime === null) runtime = outcome.runtime;
  }
  return { runtime, probes };
}

/** Like detectContainerRuntime, but a missing runtime is an error that says why each failed. */
export async function requireContainerRuntime(
  options: DetectContainerRuntimeOptions = {},
): Promise<ContainerRuntime> {
  const detection = await detectContainerRuntime(options);
  if (detection.runtime !== null) return detection.runtime;
  const reasons = detection.probes.map((entry) => entry.unavailableReason).join("; ");
  throw new ContainerRuntimeError(
    "no_runtime",
    `no container runtime works on this machine (${reasons}); install Podman or start a Docker daemon, or run with --runtime local`,
  );
}
