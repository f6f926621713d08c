// What a process that runs batch jobs gives `acp` steps, and the providers a spec's `acp` steps
// may name: apart from the agent run itself (acp-agent-step.ts), so checking a spec and placing
// its steps do not load the ACP client and the workspace agent, which only a running `acp` step
// needs.
import type { AcpProviderCatalogue } from "@deckhand/batch-spec";
import type { ListedProvider, ResolvedProvider, ResolveOptions } from "@deckhand/providers";
import type { AcpStepPermissions } from "@deckhand/wire";

/** Deckhand's providers, as an `acp` step finds and starts them (a `ProviderService`). */
export interface AcpStepProviders {
  list(): Promise<readonly ListedProvider[]>;
  resolve(id: string, options?: ResolveOptions): Promise<ResolvedProvider>;
}

/** What a process that runs batch jobs gives `acp` steps. */
export interface AcpAgentStepOptions {
  providers: AcpStepProviders;
  /** Whether the model proxy serves an agent type (an upstream is configured for it). */
  proxied(agentType: string): boolean;
  /** The policy of steps that set none; `allow-edits` unless configured. */
  defaultPermissions?: AcpStepPermissions;
}

/** A step that names no policy gets this one: files yes, commands and the network no. */
export const DEFAULT_ACP_STEP_PERMISSIONS: AcpStepPermissions = "allow-edits";

/**
 * The providers `acp` steps may name, for spec validation: every ACP provider of the config,
 * enabled or not (a disabled one fails when the step runs, saying so). The native agent is a
 * provider but not an ACP agent, and is refused with that reason.
 */
export async function acpProviderCatalogue(
  options: AcpAgentStepOptions | undefined,
): Promise<AcpProviderCatalogue> {
  const listed = options === undefined ? [] : await options.providers.list();
  const acp = listed.filter((provider) => provider.transport === "acp").map((entry) => entry.id);
  return {
    has: (id) => acp.includes(id),
    ids: () => acp,
    refusal: (id) => {
      if (options === undefined) {
        return "acp steps run Deckhand's providers, and this service was given none; run the spec on a Deckhand server";
      }
      const native = listed.find((provider) => provider.id === id && provider.transport !== "acp");
      return native === undefined
        ? undefined
        : `${id} is Deckhand's native agent, not an ACP agent; name an ACP provider: ${acp.join(", ")}`;
    },
  };
}
