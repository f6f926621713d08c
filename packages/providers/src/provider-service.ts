import { errorMessage } from "@deckhand/errors";
import type { ProcessLauncher } from "@deckhand/sandbox";
import type { AgentEnvironmentPolicy } from "@deckhand/secrets";
import type { ProvidersConfigResponse, ProvidersSnapshot } from "@deckhand/wire";
import type { ConfigSnapshot } from "./config-file.ts";
import { MemoryProbeStore, type ProbeStore } from "./probe-store.ts";
import { providerDiagnostic } from "./provider-diagnostic.ts";
import { type Installed, ProviderLaunches } from "./provider-launches.ts";
import {
  DEFAULT_COMMANDS_WAIT_MS,
  DEFAULT_PROBE_TTL_MS,
  DEFAULT_SNAPSHOT_WAIT_MS,
  type ProbeModelProxy,
  ProviderProbes,
} from "./provider-probes.ts";
import {
  type ResolvedProvider,
  type ResolveOptions,
  resolveProvider,
} from "./provider-resolution.ts";
import { ProviderSnapshots } from "./provider-snapshot.ts";
import {
  configResponse,
  type PatchConfigOptions,
  ProvidersConfigStore,
  unknownProvider,
} from "./providers-config-store.ts";
import { ProvidersError } from "./providers-error.ts";
import { type ProvidersLogger, silentLogger } from "./providers-logger.ts";
import type { AgentStartTimeoutSettings } from "./start-timeouts.ts";

export interface ProviderServiceOptions {
  /** The providers config file, e.g. `<data-dir>/providers.json`; it need not exist. */
  configPath: string;
  /** Where probe results persist; in memory when omitted. */
  probeStore?: ProbeStore;
  /** Whether the native agent has a model upstream; a function when it can change at runtime. */
  modelUpstreamConfigured: boolean | (() => boolean);
  /**
   * The models Deckhand's native agent may be asked for, its default first: they are its
   * `models` in the snapshot (it has no probe to learn them from).
   */
  nativeModels?: readonly string[];
  /**
   * Lends probes the model proxy for agent types it serves. Without it, agents are probed as
   * sessions start them when no upstream serves their type: with their own login.
   */
  modelProxy?: ProbeModelProxy;
  /**
   * The models the upstream of an agent type serves, its default first (the server's
   * `modelUpstreams.<type>.models`); agents pointed at the proxy that offer only models they are
   * told of (opencode) are told these.
   */
  upstreamModels?: (agentType: string) => readonly string[];
  /**
   * The project whose `node_modules/.bin` is searched before PATH when a call names none; relative
   * commands resolve against it, else against the config file's directory.
   */
  projectDir?: string;
  /**
   * The checkout of a project, for `snapshot({projectId})`; null when there is no such project.
   * Without it, snapshots for a project are refused.
   */
  projectDirectory?: (projectId: string) => Promise<string | null>;
  /** The environment agents inherit and PATH is read from; `process.env` by default. */
  env?: Record<string, string | undefined>;
  /** Starts probes: the server's environment policy and sandbox; unconfined by default. */
  launcher?: ProcessLauncher;
  /**
   * Variables never passed to a probed agent, on top of Deckhand's own tokens: pass the names
   * of the model upstreams' key variables, so agents never see a real API key.
   */
  withheldEnv?: readonly string[];
  /**
   * What probed agents inherit of `env` (see @deckhand/secrets); by default the default policy
   * with `withheldEnv` as Deckhand's own secrets.
   */
  agentEnvironment?: AgentEnvironmentPolicy;
  logger?: ProvidersLogger;
  /**
   * How long agents may take to start, for probes and for sessions (`resolve()` returns them):
   * the server's `agentStartTimeouts` of config.json. Default `DEFAULT_AGENT_START_TIMEOUTS`.
   */
  startTimeouts?: AgentStartTimeoutSettings;
  /** How long a snapshot waits for a running probe; default `DEFAULT_SNAPSHOT_WAIT_MS`. */
  snapshotWaitMs?: number;
  commandsWaitMs?: number;
  /** How long a probe result is trusted (24 h by default). */
  ttlMs?: number;
  now?: () => Date;
  /** Reported to agents as `clientInfo.version`. */
  clientVersion?: string;
}

export interface SnapshotOptions {
  /** Also look commands up in this project (see `projectDirectory`). */
  projectId?: string;
}

export interface RefreshOptions {
  /** The providers to probe; every enabled, installed ACP provider when omitted. */
  ids?: readonly string[];
  /** Probe even when the cached result is still fresh. */
  force?: boolean;
}

/** A provider as the config file has it, without looking for its command or probing it. */
export interface ListedProvider {
  id: string;
  label: string;
  transport: "native" | "acp";
  enabled: boolean;
}

export interface ProviderService {
  /** Every provider with its status; complete when returned (see the providers spec). */
  snapshot(options?: SnapshotOptions): Promise<ProvidersSnapshot>;
  /** Every provider of the config, cheaply (no command lookup, no probe): to check names. */
  list(): Promise<ListedProvider[]>;
  getConfig(): Promise<ProvidersConfigResponse>;
  /** Applies a JSON merge patch to the config file, atomically and one at a time. */
  patchConfig(patch: unknown, options?: PatchConfigOptions): Promise<ProvidersConfigResponse>;
  refresh(options?: RefreshOptions): Promise<ProvidersSnapshot>;
  /** Plain text for a human: resolved command, version output, last probe error and stderr. */
  diagnostic(id: string): Promise<string>;
  /** How to start a provider, pointed at the model-provider proxy when `proxy` is given. */
  resolve(id: string, options?: ResolveOptions): Promise<ResolvedProvider>;
  /**
   * Reads the config file now, so its problems are logged at startup rather than on the first
   * request, and starts probing in the background every provider without a fresh cached result,
   * so the first snapshot does not wait a whole probe. Resolves once the file is read.
   */
  warmUp(): Promise<void>;
  /** Cancels running probes and waits for their agents to stop. */
  close(): Promise<void>;
}

/**
 * The provider registry as the server and executors use it: the config file (ProvidersConfigStore),
 * how agents are found and started (ProviderLaunches), their probes and the probe cache
 * (ProviderProbes), the snapshot (ProviderSnapshots), the diagnostic and resolution.
 */
export class ProviderCatalog implements ProviderService {
  readonly #options: ProviderServiceOptions;
  readonly #logger: ProvidersLogger;
  readonly #configFile: ProvidersConfigStore;
  readonly #launches: ProviderLaunches;
  readonly #probes: ProviderProbes;
  readonly #snapshots: ProviderSnapshots;
  /** The snapshot `warmUp` started, which `close` waits for. */
  #warming: Promise<void> | null = null;

  constructor(options: ProviderServiceOptions) {
    this.#options = options;
    const logger = options.logger ?? silentLogger;
    this.#logger = logger;
    const launches = new ProviderLaunches(options);
    this.#launches = launches;
    const probes = new ProviderProbes({
      store: options.probeStore ?? new MemoryProbeStore(),
      launches,
      logger,
      modelProxy: options.modelProxy,
      ttlMs: options.ttlMs ?? DEFAULT_PROBE_TTL_MS,
      snapshotWaitMs: options.snapshotWaitMs ?? DEFAULT_SNAPSHOT_WAIT_MS,
      commandsWaitMs: options.commandsWaitMs ?? DEFAULT_COMMANDS_WAIT_MS,
      now: options.now ?? (() => new Date()),
      clientVersion: options.clientVersion,
    });
    this.#probes = probes;
    this.#configFile = new ProvidersConfigStore(options.configPath, logger);
    this.#snapshots = new ProviderSnapshots({
      configPath: options.configPath,
      nativeModels: options.nativeModels,
      upstreamConfigured: () => this.#upstreamConfigured(),
      launches,
      probes,
    });
  }

  async snapshot(snapshotOptions: SnapshotOptions = {}): Promise<ProvidersSnapshot> {
    const { projectId } = snapshotOptions;
    if (projectId === undefined) return this.#snapshots.build(await this.#configFile.read());
    const projectDir = this.#options.projectDirectory
      ? await this.#options.projectDirectory(projectId)
      : null;
    if (projectDir === null) {
      throw new ProvidersError("unknown_project", `no project "${projectId}"`);
    }
    return this.#snapshots.build(await this.#configFile.read(), projectDir);
  }

  async list(): Promise<ListedProvider[]> {
    const config = await this.#configFile.read();
    return config.providers.map(({ id, label, transport, enabled }) => ({
      id,
      label,
      transport,
      enabled,
    }));
  }

  async getConfig(): Promise<ProvidersConfigResponse> {
    return configResponse(await this.#configFile.read());
  }

  patchConfig(patch: unknown, options: PatchConfigOptions = {}): Promise<ProvidersConfigResponse> {
    return this.#configFile.patch(patch, options);
  }

  async refresh(refreshOptions: RefreshOptions = {}): Promise<ProvidersSnapshot> {
    const config = await this.#configFile.read();
    const ids = refreshOptions.ids ?? config.providers.map((provider) => provider.id);
    for (const id of ids) {
      if (!config.providers.some((provider) => provider.id === id)) {
        throw unknownProvider(id, config);
      }
    }
    const chosen = config.providers.filter(
      (provider) => ids.includes(provider.id) && provider.enabled,
    );
    const installed = await Promise.all(chosen.map((provider) => this.#launches.install(provider)));
    await this.#probes.refresh(installed, refreshOptions.force);
    return this.#snapshots.build(await this.#configFile.read());
  }

  async diagnostic(id: string): Promise<string> {
    const { config, installed } = await this.#find(id);
    const { fingerprint } = installed;
    const record = fingerprint
      ? await this.#probes.recordFor(id, fingerprint)
      : await this.#probes.known(id);
    return providerDiagnostic({
      id,
      config,
      installed,
      record,
      entry: this.#snapshots.entry(installed, record),
      launches: this.#launches,
    });
  }

  async resolve(id: string, resolveOptions: ResolveOptions = {}): Promise<ResolvedProvider> {
    const { proxy, projectDir } = resolveOptions;
    const { installed } = await this.#find(id, projectDir);
    return resolveProvider(id, {
      installed,
      proxy,
      launches: this.#launches,
      upstreamConfigured: () => this.#upstreamConfigured(),
      notInstalled: () => this.#snapshots.entry(installed, null).last_error,
    });
  }

  async warmUp(): Promise<void> {
    const config = await this.#configFile.read();
    // Probes never throw; what could fail here is the store, which only costs a later probe.
    this.#warming ??= this.#snapshots.build(config).then(
      () => {},
      (error: unknown) =>
        this.#logger.warn(
          "warming the providers snapshot failed; it is built on the next request",
          { error: errorMessage(error) },
        ),
    );
  }

  async close(): Promise<void> {
    await this.#probes.close(this.#warming ? [this.#warming] : []);
  }

  #upstreamConfigured(): boolean {
    const configured = this.#options.modelUpstreamConfigured;
    return typeof configured === "function" ? configured() : configured;
  }

  async #find(
    id: string,
    projectDir: string | undefined = this.#options.projectDir,
  ): Promise<{ config: ConfigSnapshot; installed: Installed }> {
    const { config, provider } = await this.#configFile.find(id);
    return { config, installed: await this.#launches.install(provider, projectDir) };
  }
}

export function createProviderService(options: ProviderServiceOptions): ProviderService {
  return new ProviderCatalog(options);
}
