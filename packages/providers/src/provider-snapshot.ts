import { dirname } from "node:path";
import type { ProviderEntry, ProvidersSnapshot } from "@deckhand/wire";
import type { ConfigSnapshot } from "./config-file.ts";
import type { ProbeRecord } from "./probe-store.ts";
import type { Installed, ProviderLaunches } from "./provider-launches.ts";
import type { ProviderProbes } from "./provider-probes.ts";

export interface ProviderSnapshotsOptions {
  /** The providers config file: relative commands not found are looked for beside it. */
  configPath: string;
  /** The native agent's models, its default first. */
  nativeModels: readonly string[] | undefined;
  /** Whether the native agent has a model upstream now. */
  upstreamConfigured: () => boolean;
  launches: ProviderLaunches;
  probes: ProviderProbes;
}

/**
 * The providers snapshot: every provider of the config with its status, command, version,
 * models, modes and commands, from a command lookup for each (tier 1) and a probe for those
 * without a fresh cached result (tier 2), complete when returned.
 */
export class ProviderSnapshots {
  readonly #options: ProviderSnapshotsOptions;
  readonly #sandbox: ProvidersSnapshot["sandbox"];

  constructor(options: ProviderSnapshotsOptions) {
    this.#options = options;
    const { launcher } = options.launches;
    this.#sandbox = { kind: launcher.sandbox, reason: launcher.unconfinedReason };
  }

  /** Tier 1 for everyone; tier 2 (a probe) for those without a fresh cached result. */
  async build(config: ConfigSnapshot, projectDir?: string): Promise<ProvidersSnapshot> {
    const { launches, probes } = this.#options;
    const installed = await Promise.all(
      config.providers.map((provider) => launches.install(provider, projectDir)),
    );
    const entries = await Promise.all(
      installed.map(async (item) => {
        if (item.fingerprint === null || !item.provider.enabled) {
          return this.entry(item, await probes.known(item.provider.id));
        }
        const record = await probes.recordFor(item.provider.id, item.fingerprint);
        if (probes.refreshing(item.provider.id) || probes.fresh(record, item.fingerprint)) {
          return this.entry(item, record);
        }
        const probed = await probes.within(item);
        return probed === null ? this.#startingEntry(item, record) : this.entry(item, probed);
      }),
    );
    return { providers: entries, diagnostics: config.diagnostics, sandbox: this.#sandbox };
  }

  /** The provider as the snapshot shows it, with `record` as its last probe. */
  entry(installed: Installed, record: ProbeRecord | null): ProviderEntry {
    const { provider, executable, projectDir } = installed;
    const result = record?.result ?? null;
    const base: ProviderEntry = {
      id: provider.id,
      label: provider.label,
      transport: provider.transport,
      builtin: provider.builtin,
      enabled: provider.enabled,
      status: "ready",
      command: provider.command ? [...provider.command] : null,
      resolved_path: executable,
      install_hint: provider.installHint,
      version: result?.version ?? null,
      models: result?.models ?? [],
      current_model: result?.currentModel ?? null,
      modes: result?.modes ?? [],
      current_mode: result?.currentMode ?? null,
      commands: result?.commands ?? [],
      last_error: record?.error ?? null,
      probed_at: record ? record.probedAt.toISOString() : null,
    };
    if (!provider.enabled) return { ...base, status: "disabled" };
    if (provider.transport === "native") {
      const models = this.#options.nativeModels ?? [];
      if (models.length > 0) {
        base.models = models.map((id) => ({ id, name: id, description: null }));
        base.current_model = models[0]!;
      }
      return this.#options.upstreamConfigured()
        ? base
        : {
            ...base,
            status: "error",
            last_error:
              "no model upstream is configured; add one under modelUpstreams in the server's config.json",
          };
    }
    if (executable === null) {
      const name = provider.command?.[0] ?? "";
      const where = name.includes("/")
        ? `at ${projectDir ?? dirname(this.#options.configPath)}`
        : projectDir
          ? `on PATH or in ${projectDir}/node_modules/.bin`
          : "on PATH";
      const hint = provider.installHint ? `; install it with: ${provider.installHint}` : "";
      return {
        ...base,
        status: "not_installed",
        last_error: `${name} was not found ${where}${hint}`,
      };
    }
    if (this.#options.probes.refreshing(provider.id)) return { ...base, status: "loading" };
    return { ...base, status: record?.status ?? "error" };
  }

  /**
   * A provider whose probe has not answered yet: `starting`, with the previous result's fields
   * if there is one; an error of that result is no longer news.
   */
  #startingEntry(installed: Installed, previous: ProbeRecord | null): ProviderEntry {
    return { ...this.entry(installed, previous), status: "starting", last_error: null };
  }
}
