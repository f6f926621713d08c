import type { LaunchProfile } from "@deckhand/sandbox";
import type { Installed, ProviderLaunches } from "./provider-launches.ts";
import { ProvidersError } from "./providers-error.ts";
import type { ModelProxyContext } from "./registry.ts";
import type { AgentStartTimeouts } from "./start-timeouts.ts";

/** What the agent-backends need to start a provider's agent. */
export interface ResolvedProvider {
  id: string;
  label: string;
  transport: "native" | "acp";
  /** The executable's absolute path; null for the native agent. */
  executable: string | null;
  args: string[];
  /** Set over the inherited environment (the provider's `env`, then the proxy's variables). */
  env: Record<string, string>;
  /**
   * Removed from the inherited environment first: Deckhand's own tokens, the withheld variables
   * (upstream API keys) and whatever the agent's proxy setup replaces.
   */
  unset: string[];
  /**
   * The proxy route's last segment for this provider (`<server>/model-provider/<agentType>`);
   * null when the agent cannot be pointed at the proxy.
   */
  agentType: string | null;
  /**
   * Its sandbox before the worktree is added: state directories, login files and network (see
   * `providerSandboxProfile`).
   */
  profile: LaunchProfile;
  /** Whether the agent is told Deckhand serves its file reads (`fs.readTextFile`). */
  serveFileReads: boolean;
  /** How long the agent may take to start (probes use the same). */
  startTimeouts: AgentStartTimeouts;
  /** What to do when the agent wants a login Deckhand cannot give it (see `chooseAuthMethod`). */
  loginAdvice: string;
}

export interface ResolveOptions {
  /** Point the agent at the model-provider proxy. */
  proxy?: ModelProxyContext;
  /**
   * Where the agent will run (a session's worktree): its `node_modules/.bin` is searched before
   * PATH and relative commands resolve against it.
   */
  projectDir?: string;
}

export interface ResolutionInput {
  installed: Installed;
  proxy: ModelProxyContext | undefined;
  launches: ProviderLaunches;
  /** Whether the native agent has a model upstream now. */
  upstreamConfigured: () => boolean;
  /** Why the command was not found, as the snapshot says it. */
  notInstalled: () => string | null;
}

/**
 * How to start the installed provider `id`: refused when it is disabled, not installed, or the
 * native agent without an upstream; pointed at the model proxy when `proxy` is given.
 */
export function resolveProvider(id: string, input: ResolutionInput): ResolvedProvider {
  const { installed, proxy, launches } = input;
  const { provider, executable } = installed;
  if (!provider.enabled) {
    throw new ProvidersError(
      "provider_disabled",
      `provider "${id}" is disabled; enable it with "deckhand providers enable ${id}"`,
    );
  }
  const agentType = provider.modelProxy?.agentType ?? null;
  if (provider.transport === "native") {
    if (!input.upstreamConfigured()) {
      throw new ProvidersError(
        "provider_unavailable",
        "the native agent needs a model upstream; add one under modelUpstreams in the server's config.json",
      );
    }
    return {
      id,
      label: provider.label,
      transport: "native",
      executable: null,
      args: [],
      env: {},
      unset: [],
      agentType,
      // The native agent runs in the server; its commands get the workspace agent's sandbox.
      profile: { writable: [], network: { internet: false, modelProxy: false } },
      serveFileReads: false,
      startTimeouts: launches.startTimeouts(id),
      loginAdvice: launches.loginAdvice(provider),
    };
  }
  if (executable === null) {
    throw new ProvidersError("provider_not_installed", `provider "${id}": ${input.notInstalled()}`);
  }
  return {
    id,
    label: provider.label,
    transport: "acp",
    ...launches.launch(provider, executable, proxy),
    agentType,
    profile: launches.profile(installed, proxy !== undefined && provider.modelProxy !== null),
    serveFileReads: provider.serveFileReads,
    startTimeouts: launches.startTimeouts(id),
    loginAdvice: launches.loginAdvice(provider),
  };
}
