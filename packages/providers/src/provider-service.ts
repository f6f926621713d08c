import { errorMessage } from "@deckhand/errors";
import type { LaunchProfile, ProcessLauncher } from "@deckhand/sandbox";
import type { AgentEnvironmentPolicy } from "@deckhand/secrets";
import type { ProviderEntry, ProvidersConfigResponse, ProvidersSnapshot } from "@deckhand/wire";
import type { ConfigSnapshot, ConfiguredProvider } from "./config-file.ts";
import { MemoryProbeStore, type ProbeRecord, type ProbeStore } from "./probe-store.ts";
import { providerDiagnostic } from "./provider-diagnostic.ts";
import { type AgentLaunch, type Installed, ProviderLaunches } from "./provider-launches.ts";
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
import type { ModelProxyContext } from "./registry.ts";
import type { AgentStartTimeoutSettings, AgentStartTimeouts } from "./start-timeouts.ts";

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

export function createProviderService(options: ProviderServiceOptions): ProviderService {
  const store = options.probeStore ?? new MemoryProbeStore();
  const logger = options.logger ?? silentLogger;
  const launches = new ProviderLaunches(options);
  const _launcher = launches.launcher;
  const _launchOf = (
    provider: ConfiguredProvider,
    executable: string,
    proxy?: ModelProxyContext,
  ): AgentLaunch => launches.launch(provider, executable, proxy);
  const _environmentOf = (launch: AgentLaunch) => launches.environment(launch);
  const _profileOf = (installed: Installed, proxied: boolean): LaunchProfile =>
    launches.profile(installed, proxied);
  const _loginAdvice = (provider: ConfiguredProvider): string => launches.loginAdvice(provider);
  const _startTimeoutsOf = (id: string): AgentStartTimeouts => launches.startTimeouts(id);
  const upstreamConfigured = () =>
    typeof options.modelUpstreamConfigured === "function"
      ? options.modelUpstreamConfigured()
      : options.modelUpstreamConfigured;

  const probes = new ProviderProbes({
    store,
    launches,
    logger,
    modelProxy: options.modelProxy,
    ttlMs: options.ttlMs ?? DEFAULT_PROBE_TTL_MS,
    snapshotWaitMs: options.snapshotWaitMs ?? DEFAULT_SNAPSHOT_WAIT_MS,
    commandsWaitMs: options.commandsWaitMs ?? DEFAULT_COMMANDS_WAIT_MS,
    now: options.now ?? (() => new Date()),
    clientVersion: options.clientVersion,
  });
  let warming: Promise<void> | null = null;
  const configFile = new ProvidersConfigStore(options.configPath, logger);
  const readConfig = (): Promise<ConfigSnapshot> => configFile.read();

  const install = (
    provider: ConfiguredProvider,
    projectDir: string | undefined = options.projectDir,
  ): Promise<Installed> => launches.install(provider, projectDir);

  const snapshots = new ProviderSnapshots({
    configPath: options.configPath,
    nativeModels: options.nativeModels,
    upstreamConfigured,
    launches,
    probes,
  });
  const entry = (installed: Installed, record: ProbeRecord | null): ProviderEntry =>
    snapshots.entry(installed, record);
  const buildSnapshot = (config: ConfigSnapshot, projectDir?: string) =>
    snapshots.build(config, projectDir);

  async function find(
    id: string,
    projectDir: string | undefined = options.projectDir,
  ): Promise<{ config: ConfigSnapshot; installed: Installed }> {
    const { config, provider } = await configFile.find(id);
    return { config, installed: await install(provider, projectDir) };
  }

  return {
    async snapshot(snapshotOptions = {}) {
      const { projectId } = snapshotOptions;
      if (projectId === undefined) return buildSnapshot(await readConfig());
      const projectDir = options.projectDirectory
        ? await options.projectDirectory(projectId)
        : null;
      if (projectDir === null) {
        throw new ProvidersError("unknown_project", `no project "${projectId}"`);
      }
      return buildSnapshot(await readConfig(), projectDir);
    },

    async list() {
      const config = await readConfig();
      return config.providers.map(({ id, label, transport, enabled }) => ({
        id,
        label,
        transport,
        enabled,
      }));
    },

    async getConfig() {
      return configResponse(await readConfig());
    },

    patchConfig(patch, patchOptions = {}) {
      return configFile.patch(patch, patchOptions);
    },

    async refresh(refreshOptions = {}) {
      const config = await readConfig();
      const ids = refreshOptions.ids ?? config.providers.map((provider) => provider.id);
      for (const id of ids) {
        if (!config.providers.some((provider) => provider.id === id)) {
          throw unknownProvider(id, config);
        }
      }
      const chosen = config.providers.filter(
        (provider) => ids.includes(provider.id) && provider.enabled,
      );
      const installed = await Promise.all(chosen.map((provider) => install(provider)));
      await probes.refresh(installed, refreshOptions.force);
      return buildSnapshot(await readConfig());
    },

    async diagnostic(id) {
      const { config, installed } = await find(id);
      const { fingerprint } = installed;
      const record = fingerprint ? await probes.recordFor(id, fingerprint) : await probes.known(id);
      return providerDiagnostic({
        id,
        config,
        installed,
        record,
        entry: entry(installed, record),
        launches,
      });
    },

    async resolve(id, resolveOptions = {}) {
      const { proxy, projectDir } = resolveOptions;
      const { installed } = await find(id, projectDir);
      return resolveProvider(id, {
        installed,
        proxy,
        launches,
        upstreamConfigured,
        notInstalled: () => entry(installed, null).last_error,
      });
    },

    async warmUp() {
      const config = await readConfig();
      // Probes never throw; what could fail here is the store, which only costs a later probe.
      warming ??= buildSnapshot(config).then(
        () => {},
        (error: unknown) =>
          logger.warn("warming the providers snapshot failed; it is built on the next request", {
            error: errorMessage(error),
          }),
      );
    },

    async close() {
      await probes.close(warming ? [warming] : []);
    },
  };
}
