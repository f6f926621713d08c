// The one way Deckhand starts a process for an agent or a step: an environment the policy has
// been applied to, and, where bubblewrap works, a sandbox in which the process sees its own
// processes only, writes only where its profile says, never sees Deckhand's data or the user's
// credentials, and reaches the network only as its profile allows.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, realpathSync, statSync } from "node:fs";
import { isAbsolute, join, relative, sep } from "node:path";
import {
  type AgentEnvironmentPolicy,
  agentEnvironment,
  agentEnvironmentPolicy,
} from "@deckhand/secrets";
import { type HostedSpawnOptions, type SpawnHost, sharedSpawnHost } from "@deckhand/spawn-host";
import type { SandboxKind } from "@deckhand/wire";
import { isPathInsideRoot } from "@deckhand/workspace-files";
import { bubblewrapArguments, type SandboxBind, type SandboxView } from "./bubblewrap-arguments.ts";
import type { SandboxCapability } from "./detect-sandbox.ts";
import { worktreeGitDirectories } from "./git-directories.ts";
import { defaultHiddenPaths, existingHiddenPaths } from "./hidden-paths.ts";
import {
  FORWARDER_SOURCE,
  type ForwarderConfig,
  INNER_SOCKET_DIRECTORY,
} from "./network-forwarder.ts";
import { type ModelProxyEndpoint, SandboxEndpoints } from "./sandbox-endpoints.ts";
import { DEFAULT_SANDBOX_SETTINGS, type SandboxSettings } from "./sandbox-settings.ts";
import { attachSlirpNetwork } from "./slirp-network.ts";

/** What a process may reach over the network. */
export interface NetworkAccess {
  /** The internet, never the machine's loopback services (batch `run:` steps). */
  internet: boolean;
  /** The model proxy, on the sandbox's loopback at the port the server listens on. */
  modelProxy: boolean;
  /** Hosts reachable through the sandbox's HTTP proxy besides the configured `allowHosts`. */
  allowHosts?: readonly string[];
}

/** Where a process may write and what it may reach. */
export interface LaunchProfile {
  /** Writable directories: the worktree or workspace, the agent's state; made when missing. */
  writable: readonly string[];
  /** Shown read-only even where a hidden path holds them (a repository's git directory). */
  readable?: readonly string[];
  network: NetworkAccess;
}

export interface LaunchRequest {
  executable: string;
  args: readonly string[];
  cwd: string;
  /**
   * The process's environment, usually `inheritedEnvironment()` with the caller's variables on
   * top. Any variable holding one of Deckhand's own secret values is removed again here, whatever
   * its name, so a caller that passes too much still passes no secret.
   */
  environment: Readonly<Record<string, string>>;
  /** Set after the policy: the only credentials a process is given (its scoped model token). */
  grants?: Readonly<Record<string, string>>;
  profile: LaunchProfile;
  /** stdin, stdout, stderr and any further descriptors, as `child_process.spawn` takes them. */
  stdio?: readonly ("pipe" | "ignore" | "inherit")[];
  /** Its own process group, so a group signal reaches everything it started. */
  detached?: boolean;
  /**
   * The caller reads `pid` only from the process's "spawn" event on (an abort before it waits
   * for it), and its stdio holds no "inherit": the process may then be started by the spawn host
   * instead of by a fork of this process, its pipes handed over.
   */
  pidFromSpawnEvent?: boolean;
}

/** Something to tell an operator once (a sandbox that could not be set up for one process). */
export type LaunchWarning = (message: string, error: unknown) => void;

export interface ProcessLauncherOptions {
  capability: SandboxCapability;
  settings?: SandboxSettings;
  policy?: AgentEnvironmentPolicy;
  /** What processes inherit before the policy; this process's environment by default. */
  sourceEnvironment?: Readonly<Record<string, string | undefined>>;
  /** Deckhand's own places no sandboxed process sees (the data directory, config files). */
  hidden?: readonly string[];
  /** The user's home, for the built-in list of credential paths. */
  home?: string;
  modelProxy?: ModelProxyEndpoint | null;
  /** The Node.js that runs the network forwarder inside sandboxes; this one by default. */
  nodeExecutable?: string;
  /**
   * Starts the processes of requests with `pidFromSpawnEvent` (and their sandbox's slirp4netns);
   * this process's shared host by default, null for a fork of this process every time.
   */
  spawnHost?: SpawnHost | null;
  onWarning?: LaunchWarning;
}

/** How long slirp4netns may take to give a sandbox its network on a busy machine. */
const NETWORK_TIMEOUT_MS = 30_000;

export class ProcessLauncher {
  readonly #capability: SandboxCapability;
  readonly #settings: SandboxSettings;
  readonly #policy: AgentEnvironmentPolicy;
  readonly #source: Readonly<Record<string, string | undefined>>;
  readonly #hidden: readonly string[];
  readonly #endpoints: SandboxEndpoints;
  readonly #node: string;
  readonly #onWarning: LaunchWarning;
  readonly #spawnHost: SpawnHost | null;

  constructor(options: ProcessLauncherOptions) {
    this.#capability = options.capability;
    this.#settings = options.settings ?? DEFAULT_SANDBOX_SETTINGS;
    this.#policy = options.policy ?? agentEnvironmentPolicy();
    this.#source = options.sourceEnvironment ?? process.env;
    this.#hidden = [
      ...(options.hidden ?? []),
      ...this.#settings.hide,
      ...defaultHiddenPaths(options.home),
    ];
    this.#endpoints = new SandboxEndpoints({
      modelProxy: options.modelProxy ?? null,
      allowHosts: this.#settings.allowHosts,
    });
    this.#node = options.nodeExecutable ?? process.execPath;
    this.#onWarning = options.onWarning ?? (() => {});
    this.#spawnHost = options.spawnHost === undefined ? sharedSpawnHost() : options.spawnHost;
  }

  /**
   * A launcher that confines nothing and applies the default environment policy: what a package
   * used on its own starts its processes with. Deckhand's apps give theirs a sandbox.
   */
  static unconfined(policy?: AgentEnvironmentPolicy): ProcessLauncher {
    return new ProcessLauncher({
      capability: { kind: "none", reason: "no sandbox was configured for this launcher" },
      ...(policy ? { policy } : {}),
    });
  }

  get sandbox(): SandboxKind {
    return this.#capability.kind;
  }

  /** Why processes run unconfined, or null when they are sandboxed. */
  get unconfinedReason(): string | null {
    return this.#capability.kind === "none" ? this.#capability.reason : null;
  }

  /** The environment policy every launch applies. */
  get policy(): AgentEnvironmentPolicy {
    return this.#policy;
  }

  /**
   * The network of a local batch `run:` step: the internet (never the machine's loopback
   * services) unless `stepNetwork` is `none`, as container steps have theirs.
   */
  stepNetwork(): NetworkAccess {
    return { internet: this.#settings.stepNetwork === "full", modelProxy: false };
  }

  /** What a process inherits of the server's environment once the policy is applied. */
  inheritedEnvironment(): Record<string, string> {
    return agentEnvironment(this.#policy, this.#source);
  }

  /** `environment` without Deckhand's secret values, then the grants on top. */
  #environment(request: LaunchRequest): Record<string, string> {
    const environment: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.environment)) {
      if (this.#policy.secretValues.some((secret) => value.includes(secret))) continue;
      environment[name] = value;
    }
    return { ...environment, ...request.grants };
  }

  spawn(request: LaunchRequest): ChildProcess {
    const environment = this.#environment(request);
    const stdio = [...(request.stdio ?? ["pipe", "pipe", "pipe"])];
    const spawnProcess = this.#spawner(request);
    if (this.#capability.kind === "none") {
      return spawnProcess(request.executable, request.args, {
        cwd: request.cwd,
        env: environment,
        stdio,
        detached: request.detached ?? false,
      });
    }
    return this.#spawnSandboxed(request, environment, stdio, this.#capability, spawnProcess);
  }

  /**
   * Who starts the request's processes: the spawn host when the caller allows it (a fork of this
   * process, which may hold the embedded database, blocks its event loop for milliseconds), this
   * process otherwise. The host itself spawns here until it is ready, or when it cannot start.
   */
  #spawner(request: LaunchRequest): SpawnProcess {
    const host = this.#spawnHost;
    if (host === null || request.pidFromSpawnEvent !== true) return spawnHere;
    return (file, args, options) => {
      const { stdio: descriptors } = options;
      // An inherited descriptor would be the host's, not this process's.
      if (!onlyPipes(descriptors)) return spawnHere(file, args, options);
      return host.spawn(file, args, { ...options, stdio: descriptors });
    };
  }

  #spawnSandboxed(
    request: LaunchRequest,
    environment: Record<string, string>,
    stdio: ("pipe" | "ignore" | "inherit")[],
    capability: Extract<SandboxCapability, { kind: "bubblewrap" }>,
    spawnProcess: SpawnProcess,
  ): ChildProcess {
    const { network } = request.profile;
    const writable = [...request.profile.writable, ...this.#settings.writable];
    for (const path of writable) {
      if (!existsSync(path)) mkdirSync(path, { recursive: true });
    }
    const binds: SandboxBind[] = [];
    const listen: ForwarderConfig["listen"] = [];
    const proxyPort = this.#endpoints.modelProxyPort;
    const modelSocket = network.modelProxy ? this.#endpoints.modelProxySocket() : null;
    const slirp = network.internet ? capability.slirp4netns : null;
    // Without slirp4netns a sandbox with the internet shares the machine's network, and reaches
    // the model proxy on loopback as it is.
    const isolated = !network.internet || slirp !== null;
    if (isolated && modelSocket !== null && proxyPort !== null) {
      const inner = join(INNER_SOCKET_DIRECTORY, "model-proxy.sock");
      binds.push({ outer: modelSocket, inner, writable: true });
      listen.push({ port: proxyPort, socket: inner });
    }
    const egress = network.internet ? null : this.#endpoints.egressSocket(network.allowHosts);
    if (egress !== null) {
      const inner = join(INNER_SOCKET_DIRECTORY, "egress.sock");
      const port = egressPort(proxyPort);
      binds.push({ outer: egress, inner, writable: true });
      listen.push({ port, socket: inner });
      const proxyUrl = `http://127.0.0.1:${port}`;
      // Everything through the proxy, loopback included: it serves the model proxy's address
      // itself, and an allowed service on the machine's loopback is reached only through it.
      for (const name of ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"]) {
        environment[name] = proxyUrl;
      }
      delete environment.NO_PROXY;
      delete environment.no_proxy;
    }
    if (slirp !== null) {
      binds.push({
        outer: this.#endpoints.resolvConf(),
        inner: "/etc/resolv.conf",
        writable: false,
      });
    }
    const hidden = existingHiddenPaths(this.#hidden);
    const extraFds = stdio.length - 3;
    const infoFd = slirp !== null ? stdio.length : undefined;
    const blockFd = slirp !== null ? stdio.length + 1 : undefined;
    const executables =
      listen.length === 0 ? [request.executable] : [this.#node, request.executable];
    const view: SandboxView = {
      writable,
      readable: [
        ...(request.profile.readable ?? []),
        ...writable.flatMap(worktreeGitDirectories),
        ...installationsUnderMaskedTmp(executables, request.args),
      ],
      hiddenDirectories: hidden.directories,
      hiddenFiles: hidden.files,
      emptyFile: this.#endpoints.emptyFile(),
      protectedPaths: writable.map((path) => join(path, ".git")).filter((path) => existsSync(path)),
      binds,
      network: isolated ? "isolated" : "host",
      cwd: request.cwd,
      ...(infoFd !== undefined ? { infoFd } : {}),
      ...(blockFd !== undefined ? { blockFd } : {}),
    };
    const command =
      listen.length === 0
        ? [request.executable, ...request.args]
        : [
            this.#node,
            "-e",
            FORWARDER_SOURCE,
            JSON.stringify({
              listen,
              extraFds,
              nodeOptions: environment.NODE_OPTIONS ?? null,
            } satisfies ForwarderConfig),
            request.executable,
            ...request.args,
          ];
    if (listen.length > 0) delete environment.NODE_OPTIONS;
    const child = spawnProcess(
      capability.bubblewrap,
      [...bubblewrapArguments(view), "--", ...command],
      {
        cwd: request.cwd,
        env: environment,
        stdio: slirp !== null ? [...stdio, "pipe", "pipe"] : stdio,
        detached: request.detached ?? false,
      },
    );
    if (slirp !== null) this.#attachNetwork(child, slirp, infoFd!, blockFd!, spawnProcess);
    return child;
  }

  #attachNetwork(
    child: ChildProcess,
    slirp4netns: string,
    infoFd: number,
    blockFd: number,
    spawnProcess: SpawnProcess,
  ): void {
    // A process the host starts has its pid from its "spawn" event; one that never started has
    // none, and an "error" of its own.
    if (child.pid === undefined) {
      child.once("spawn", () =>
        this.#attachNetwork(child, slirp4netns, infoFd, blockFd, spawnProcess),
      );
      return;
    }
    attachSlirpNetwork(child, {
      slirp4netns,
      infoFd,
      blockFd,
      timeoutMs: NETWORK_TIMEOUT_MS,
      spawn: (file, args, stdio) =>
        // slirp4netns gets this process's environment, as a process spawned here inherits it.
        spawnProcess(file, args, { cwd: "/", env: process.env, detached: false, stdio }),
    }).catch((error: unknown) => {
      // The command never ran: stop the sandbox waiting for its network.
      this.#onWarning("a sandbox's network could not be set up; its process was stopped", error);
      try {
        process.kill(child.pid!, "SIGKILL");
      } catch {
        // Already gone.
      }
    });
  }

  /** Stops the sockets sandboxes reach the model proxy and allowed hosts through. */
  close(): Promise<void> {
    return this.#endpoints.close();
  }
}

/** `spawn` with the options every launch gives, here or in the spawn host. */
type SpawnProcess = (
  file: string,
  args: readonly string[],
  options: Omit<HostedSpawnOptions, "stdio"> & {
    stdio: readonly ("pipe" | "ignore" | "inherit")[];
  },
) => ChildProcess;

function onlyPipes(
  stdio: readonly ("pipe" | "ignore" | "inherit")[],
): stdio is readonly ("pipe" | "ignore")[] {
  return !stdio.includes("inherit");
}

function spawnHere(...[file, args, options]: Parameters<SpawnProcess>): ChildProcess {
  return spawn(file, [...args], { ...options, stdio: [...options.stdio] });
}

/** The directory every sandbox replaces with an empty one of its own. */
const MASKED_TMP = "/tmp";

/**
 * What to show, read-only, of the program a sandbox runs when it is installed under /tmp, which
 * every sandbox masks with its own: a Node unpacked there, or a checkout there with its toolchain
 * and scripts, could not be started otherwise ("bwrap: execvp .../node: No such file or
 * directory", or the script not found). The executables (the command's and the forwarder's Node)
 * and the files the command line names are resolved, and for each that lies under /tmp its
 * installation, the entry of /tmp that holds it, is shown: a Node needs its `lib/`, a script the
 * packages it imports. Bare names, directories (a state directory, a worktree) and paths that do
 * not exist need nothing; nothing else of /tmp is shown.
 */
function installationsUnderMaskedTmp(
  executables: readonly string[],
  args: readonly string[],
): string[] {
  const installations = new Set<string>();
  for (const path of [...executables, ...args]) {
    if (!isAbsolute(path) || !isExistingFile(path)) continue;
    for (const candidate of new Set([path, realOrSame(path)])) {
      const installation = tmpEntryOf(candidate);
      if (installation !== null) installations.add(installation);
    }
  }
  return [...installations];
}

/** The entry of /tmp that holds `path` (`/tmp/a` for `/tmp/a/b/c`); null outside /tmp. */
function tmpEntryOf(path: string): string | null {
  if (path === MASKED_TMP || !isPathInsideRoot(MASKED_TMP, path)) return null;
  const [entry] = relative(MASKED_TMP, path).split(sep);
  return join(MASKED_TMP, entry!);
}

function realOrSame(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function isExistingFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The sandbox's HTTP proxy port: any port but the model proxy's, on the sandbox's own loopback. */
function egressPort(modelProxyPort: number | null): number {
  return modelProxyPort === 3128 ? 3129 : 3128;
}
