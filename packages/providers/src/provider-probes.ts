import { errorMessage } from "@deckhand/errors";
import { emptyProbeResult, type ProbeOutcome, probeAcpAgent } from "./acp-probe.ts";
import type { ProbeRecord, ProbeStore } from "./probe-store.ts";
import type { Installed, ProviderLaunches } from "./provider-launches.ts";
import type { ProvidersLogger } from "./providers-logger.ts";
import type { ModelProxyContext } from "./registry.ts";

export const DEFAULT_PROBE_TTL_MS = 24 * 60 * 60 * 1000;
export const DEFAULT_COMMANDS_WAIT_MS = 3_000;
/**
 * How long a snapshot waits for a probe it needs before it shows the provider `starting` and
 * lets the probe finish in the background.
 */
export const DEFAULT_SNAPSHOT_WAIT_MS = 10_000;

/** Proxy access lent to one probe; its token is revoked by `release`. */
export interface ModelProxyLease {
  context: ModelProxyContext;
  release(): Promise<void>;
}

/**
 * How probes reach the model-provider proxy: the same access sessions give their agents, so an
 * agent that needs the proxy to open a session (codex-acp) is probed as it runs.
 */
export interface ProbeModelProxy {
  /** Whether the proxy has an upstream for this agent type (the server's `modelUpstreams`). */
  configured(agentType: string): boolean;
  /** A short-lived scoped token and the proxy route for this agent type. */
  lease(agentType: string): Promise<ModelProxyLease>;
}

export interface ProviderProbesOptions {
  store: ProbeStore;
  launches: ProviderLaunches;
  logger: ProvidersLogger;
  modelProxy: ProbeModelProxy | undefined;
  /** How long a result is trusted. */
  ttlMs: number;
  /** How long a snapshot waits for a running probe. */
  snapshotWaitMs: number;
  commandsWaitMs: number;
  now: () => Date;
  clientVersion: string | undefined;
}

const recordKey = (id: string, fingerprint: string) => `${id}\u0000${fingerprint}`;

/**
 * Tier 2 of a snapshot: ACP probes of installed agents, started as sessions start them, one at
 * a time per command, and their results, cached in memory and in the `ProbeStore` for `ttlMs`.
 */
export class ProviderProbes {
  readonly #options: ProviderProbesOptions;
  /** Last known record per provider; filled from the store on first use. */
  readonly #records = new Map<string, ProbeRecord | null>();
  /** Every record of this process's life by provider and fingerprint (see `recordFor`). */
  readonly #probed = new Map<string, ProbeRecord>();
  /** Running probes by provider and fingerprint. */
  readonly #inflight = new Map<string, Promise<ProbeRecord>>();
  /**
   * Providers a `refresh()` is probing: the only ones a snapshot shows as `loading`, so a
   * refresh of one provider never waits for another's probe.
   */
  readonly #refreshing = new Set<string>();
  readonly #lifetime = new AbortController();

  constructor(options: ProviderProbesOptions) {
    this.#options = options;
  }

  /** Whether a `refresh()` is probing the provider now. */
  refreshing(id: string): boolean {
    return this.#refreshing.has(id);
  }

  /** The last record of a provider, whatever it was probed with; loaded from the store once. */
  async known(id: string): Promise<ProbeRecord | null> {
    const records = this.#records;
    if (records.has(id)) return records.get(id)!;
    let record: ProbeRecord | null = null;
    try {
      // A stored result that no longer parses comes back as none (see ProbeStore.load), so the
      // provider is probed again rather than shown with nothing.
      record = (await this.#options.store.load(id)) ?? null;
    } catch (error) {
      this.#options.logger.warn("cannot load a provider probe result; probing again", {
        providerId: id,
        error: errorMessage(error),
      });
    }
    if (!records.has(id)) {
      records.set(id, record);
      if (record) this.#probed.set(recordKey(id, record.fingerprint), record);
    }
    return records.get(id)!;
  }

  /**
   * The record for this exact command: the same provider resolves to different executables in
   * different projects, and each keeps its own result instead of evicting the other's.
   */
  async recordFor(id: string, fingerprint: string): Promise<ProbeRecord | null> {
    const last = await this.known(id);
    return this.#probed.get(recordKey(id, fingerprint)) ?? last;
  }

  fresh(record: ProbeRecord | null, fingerprint: string): record is ProbeRecord {
    return (
      record !== null &&
      record.fingerprint === fingerprint &&
      this.#options.now().getTime() - record.probedAt.getTime() < this.#options.ttlMs
    );
  }

  /** Probes the installed agent, or joins the probe of the same command already running. */
  probe(installed: Installed): Promise<ProbeRecord> {
    const { provider, fingerprint } = installed;
    const key = recordKey(provider.id, fingerprint!);
    const running = this.#inflight.get(key);
    if (running) return running;
    const promise = this.#probeAndKeep(installed, key).finally(() => {
      if (this.#inflight.get(key) === promise) this.#inflight.delete(key);
    });
    this.#inflight.set(key, promise);
    return promise;
  }

  /**
   * The probe's record once it finished within the snapshot's wait; null while the agent is
   * still starting (the probe goes on, and the next snapshot joins it).
   */
  async within(installed: Installed): Promise<ProbeRecord | null> {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<null>((resolveWait) => {
      timer = setTimeout(() => resolveWait(null), this.#options.snapshotWaitMs);
      timer.unref();
    });
    try {
      return await Promise.race([this.probe(installed), waited]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Probes each installed provider whose result is not fresh (each one, with `force`), showing
   * it `loading` meanwhile; resolves once every probe ended.
   */
  async refresh(installed: readonly Installed[], force: boolean | undefined): Promise<void> {
    const probes = installed
      .filter((item) => item.fingerprint !== null)
      .map(async (item) => {
        const id = item.provider.id;
        if (!force && this.fresh(await this.recordFor(id, item.fingerprint!), item.fingerprint!))
          return;
        this.#refreshing.add(id);
        try {
          // A forced refresh does not reuse a probe that started before it was asked for.
          if (force) this.#inflight.delete(recordKey(id, item.fingerprint!));
          await this.probe(item);
        } finally {
          this.#refreshing.delete(id);
        }
      });
    await Promise.all(probes);
  }

  /** Cancels running probes and waits for them, and for `others`, to end. */
  async close(others: readonly Promise<unknown>[] = []): Promise<void> {
    this.#lifetime.abort();
    await Promise.allSettled([...this.#inflight.values(), ...others]);
  }

  async #probeAndKeep(installed: Installed, key: string): Promise<ProbeRecord> {
    const { provider, fingerprint } = installed;
    const { logger } = this.#options;
    const outcome = await this.#probeWithLaunch(installed);
    const record: ProbeRecord = {
      providerId: provider.id,
      fingerprint: fingerprint!,
      status: outcome.status,
      result: outcome.result,
      error: outcome.status === "ready" ? null : outcome.error,
      probedAt: this.#options.now(),
    };
    if (outcome.status !== "ready") {
      logger.warn("provider probe failed", { providerId: provider.id, error: outcome.error });
    }
    if (!this.#lifetime.signal.aborted) {
      this.#records.set(provider.id, record);
      this.#probed.set(key, record);
      try {
        await this.#options.store.save(record);
      } catch (error) {
        logger.warn("cannot save a provider probe result", {
          providerId: provider.id,
          error: errorMessage(error),
        });
      }
    }
    return record;
  }

  /** Probes the agent as a session starts it, with a proxy lease of its own when it has one. */
  async #probeWithLaunch(installed: Installed): Promise<ProbeOutcome> {
    const { provider, executable, proxied } = installed;
    const { launches, logger, clientVersion } = this.#options;
    let lease: ModelProxyLease | null = null;
    if (proxied) {
      try {
        lease = await this.#options.modelProxy!.lease(provider.modelProxy!.agentType);
      } catch (error) {
        return {
          status: "error",
          error: `cannot give the probe access to the model proxy: ${(error as Error).message}`,
          result: emptyProbeResult(""),
        };
      }
    }
    try {
      const launch = launches.launch(provider, executable!, lease?.context);
      return await probeAcpAgent({
        executable: launch.executable,
        args: launch.args,
        env: launches.environment(launch),
        launcher: launches.launcher,
        profile: launches.profile(installed, lease !== null),
        initializeTimeoutMs: launches.startTimeouts(provider.id).initializeMs,
        sessionTimeoutMs: launches.startTimeouts(provider.id).sessionMs,
        commandsWaitMs: this.#options.commandsWaitMs,
        signal: this.#lifetime.signal,
        loginAdvice: launches.loginAdvice(provider),
        keysInEnv: provider.modelProxy === null,
        ...(clientVersion !== undefined ? { clientVersion } : {}),
      });
    } finally {
      await lease?.release().catch((error: unknown) =>
        logger.warn("cannot revoke a provider probe's model token", {
          providerId: provider.id,
          error: (error as Error).message,
        }),
      );
    }
  }
}
