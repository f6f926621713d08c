import { createHash } from "node:crypto";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { type LaunchProfile, ProcessLauncher } from "@deckhand/sandbox";
import {
  type AgentEnvironmentPolicy,
  agentEnvironment,
  agentEnvironmentPolicy,
  DECKHAND_SECRET_ENVIRONMENT,
} from "@deckhand/secrets";
import { resolveExecutable } from "@deckhand/shell";
import { WireEnv } from "@deckhand/wire";
import { OWN_LOGIN_ADVICE, type VersionOutput, versionOutput } from "./acp-probe.ts";
import type { ConfiguredProvider } from "./config-file.ts";
import type { ModelProxyContext } from "./registry.ts";
import { providerSandboxProfile } from "./sandbox-profile.ts";
import {
  type AgentStartTimeoutSettings,
  type AgentStartTimeouts,
  startTimeoutsFor,
} from "./start-timeouts.ts";

/** A provider with its command looked up (tier 1 of a snapshot): what a probe would run. */
export interface Installed {
  provider: ConfiguredProvider;
  executable: string | null;
  fingerprint: string | null;
  /** Whether sessions (and so probes) point this agent at the model proxy. */
  proxied: boolean;
  /** The project the command was looked up in, if any. */
  projectDir: string | undefined;
}

/** How to start an ACP agent: what `resolve()` returns and probes run, built in one place. */
export interface AgentLaunch {
  executable: string;
  args: string[];
  env: Record<string, string>;
  unset: string[];
}

/** The provider service's options that say how agents are found and started. */
export interface ProviderLaunchOptions {
  configPath: string;
  projectDir?: string | undefined;
  env?: Record<string, string | undefined> | undefined;
  launcher?: ProcessLauncher | undefined;
  withheldEnv?: readonly string[] | undefined;
  agentEnvironment?: AgentEnvironmentPolicy | undefined;
  /** Whether the model proxy serves an agent type: its agents are then pointed at it. */
  modelProxy?: { configured(agentType: string): boolean } | undefined;
  upstreamModels?: ((agentType: string) => readonly string[]) | undefined;
  startTimeouts?: AgentStartTimeoutSettings | undefined;
}

/**
 * What a probe result was made with. Whether the proxy served the agent is part of it (a result
 * from before an upstream was configured says nothing about the agent with one); the proxy
 * token is not, since each probe gets a new one.
 */
function fingerprintOf(
  executable: string,
  args: readonly string[],
  env: Record<string, string>,
  proxied: boolean,
) {
  // The environment is hashed, never stored, since it may hold credentials.
  const sortedEnv = Object.entries(env).sort(([left], [right]) => left.localeCompare(right));
  return createHash("sha256")
    .update(JSON.stringify({ executable, args, env: sortedEnv, ...(proxied ? { proxied } : {}) }))
    .digest("hex");
}

/**
 * How sessions and probes find and start a provider's agent: where its command is, its
 * arguments and environment (pointed at the model proxy when asked), what it inherits, its
 * sandbox, its start timeouts and what to tell a user when it wants a login.
 */
export class ProviderLaunches {
  /** Starts probes and version commands: the server's environment policy and sandbox. */
  readonly launcher: ProcessLauncher;
  readonly #options: ProviderLaunchOptions;
  readonly #env: Record<string, string | undefined>;
  readonly #home: string;
  readonly #policy: AgentEnvironmentPolicy;
  /** Deckhand's tokens and the upstream keys: never inherited by an agent. */
  readonly #withheld: Set<string>;

  constructor(options: ProviderLaunchOptions) {
    this.#options = options;
    this.#env = options.env ?? process.env;
    this.#home = this.#env.HOME || homedir();
    this.launcher = options.launcher ?? ProcessLauncher.unconfined();
    this.#policy =
      options.agentEnvironment ??
      agentEnvironmentPolicy({ secretNames: options.withheldEnv ?? [] });
    this.#withheld = new Set<string>([
      ...DECKHAND_SECRET_ENVIRONMENT,
      ...this.#policy.secretNames,
      ...(options.withheldEnv ?? []),
    ]);
  }

  /** Tier 1: where the command is, looked up in `projectDir` (or the default project) first. */
  async install(
    provider: ConfiguredProvider,
    projectDir: string | undefined = this.#options.projectDir,
  ): Promise<Installed> {
    if (provider.transport === "native" || provider.command === null) {
      return { provider, executable: null, fingerprint: null, proxied: false, projectDir };
    }
    const [name, ...args] = provider.command;
    const executable = await resolveExecutable(name!, {
      ...(projectDir !== undefined ? { projectDir } : {}),
      relativeTo: dirname(this.#options.configPath),
      path: this.#env.PATH ?? "",
    });
    const proxied = this.proxiedType(provider) !== null;
    return {
      provider,
      executable,
      fingerprint: executable
        ? fingerprintOf(executable, args, { ...provider.env }, proxied)
        : null,
      proxied,
      projectDir,
    };
  }

  /**
   * How sessions and probes start a provider's agent: its command, its env, and with `proxy`
   * what points it at the model proxy; Deckhand's tokens, the upstream keys and whatever the
   * proxy setup replaces are removed from what it inherits.
   */
  launch(provider: ConfiguredProvider, executable: string, proxy?: ModelProxyContext): AgentLaunch {
    const [, ...args] = provider.command!;
    const support = provider.modelProxy;
    const proxyLaunch =
      proxy && support
        ? support.configure({
            ...proxy,
            models: proxy.models ?? this.#options.upstreamModels?.(support.agentType) ?? [],
          })
        : null;
    return {
      executable,
      args: [...args, ...(proxyLaunch?.args ?? [])],
      env: { ...provider.env, ...(proxyLaunch?.env ?? {}) },
      unset: [...new Set([...this.#withheld, ...(proxyLaunch?.unset ?? [])])],
    };
  }

  /**
   * The whole environment of a launched agent: the server's environment as the agent policy of
   * @deckhand/secrets leaves it, less `unset`, plus `env`.
   */
  environment(launch: AgentLaunch): Record<string, string | undefined> {
    const removed = new Set(launch.unset);
    const inherited = Object.fromEntries(
      Object.entries(agentEnvironment(this.#policy, this.#env)).filter(
        ([name]) => !removed.has(name),
      ),
    );
    return { ...inherited, ...launch.env };
  }

  /**
   * A provider's sandbox; an agent installed in the project (`node_modules/.bin`) is shown its
   * packages, wherever the project lives.
   */
  profile(installed: Installed, proxied: boolean): LaunchProfile {
    const profile = providerSandboxProfile(installed.provider, proxied, this.#home);
    const { executable, projectDir } = installed;
    if (executable === null || projectDir === undefined) return profile;
    const modules = join(projectDir, "node_modules");
    if (!executable.startsWith(`${modules}/`)) return profile;
    return { ...profile, readable: [...(profile.readable ?? []), modules] };
  }

  /** The agent type the model proxy serves this provider's agent as; null when it serves none. */
  proxiedType(provider: ConfiguredProvider): string | null {
    const agentType = provider.modelProxy?.agentType ?? null;
    return agentType !== null && this.#options.modelProxy?.configured(agentType) ? agentType : null;
  }

  /**
   * What to do when the agent wants a login. An agent type the proxy serves never gets a real
   * key: the server's upstream for its type is what it needs.
   */
  loginAdvice(provider: ConfiguredProvider): string {
    const agentType = provider.modelProxy?.agentType;
    if (agentType === undefined) {
      return OWN_LOGIN_ADVICE;
    }
    if (this.proxiedType(provider) !== null) {
      return `it refused the model proxy Deckhand pointed it at; check modelUpstreams.${agentType} in the server's config.json and the agent's stderr`;
    }
    return `configure modelUpstreams.${agentType} in the server's config.json: Deckhand then points the agent at its model proxy with a short-lived token, so the agent never holds a real key`;
  }

  startTimeouts(id: string): AgentStartTimeouts {
    return startTimeoutsFor(this.#options.startTimeouts, id);
  }

  /** What the provider's version command prints, started as the agent would be, for a human. */
  version(
    provider: ConfiguredProvider,
    executable: string,
    versionArgs: readonly string[],
  ): Promise<VersionOutput> {
    // No proxy: printing a version needs no model.
    const launch = this.launch(provider, executable);
    return versionOutput(executable, versionArgs, this.environment(launch), undefined, {
      launcher: this.launcher,
      // Printing a version needs no network and no login.
      profile: {
        writable: providerSandboxProfile(provider, true, this.#home).writable,
        network: { internet: false, modelProxy: false },
      },
    });
  }
}
