import type { ProviderEntry, ProviderOption, ProvidersSnapshot } from "@deckhand/wire";
import { SessionsError } from "./sessions-error.ts";

/** Where the agents a session may choose come from: the providers snapshot (for a project). */
export type AgentCatalog = (projectId: string) => Promise<ProvidersSnapshot>;

/** What a session or a message asks of an agent. */
export interface AgentChoice {
  agent: string;
  model?: string | undefined;
  mode?: string | undefined;
}

function listed(options: readonly ProviderOption[]): string {
  return options.map((option) => JSON.stringify(option.id)).join(", ");
}

function checkOption(
  entry: ProviderEntry,
  field: "model" | "mode",
  value: string | undefined,
): void {
  if (value === undefined) return;
  const options = field === "model" ? entry.models : entry.modes;
  if (options.some((option) => option.id === value)) return;
  throw new SessionsError(
    "invalid_request",
    options.length === 0
      ? `${field} ${JSON.stringify(value)}: ${entry.id} offers no ${field}s to choose from${entry.probed_at === null ? " (it has not been probed yet; refresh the providers)" : ""}; leave ${field} out`
      : `${field} ${JSON.stringify(value)} is not one of ${entry.id}'s ${field}s: ${listed(options)}`,
  );
}

/**
 * Checks a choice against the providers snapshot: the agent is a provider that is enabled and
 * ready, and the model and mode are ones it offers. A `invalid_request` names what is wrong; an
 * agent still starting is `busy`, to be asked again shortly.
 */
export function checkAgentChoice(snapshot: ProvidersSnapshot, choice: AgentChoice): ProviderEntry {
  const entry = snapshot.providers.find((provider) => provider.id === choice.agent);
  if (entry === undefined) {
    throw new SessionsError(
      "invalid_request",
      `agent ${JSON.stringify(choice.agent)} is not a provider; choose one of ${snapshot.providers.map((provider) => provider.id).join(", ")}`,
    );
  }
  if (entry.enabled && entry.status === "starting") {
    // Not broken: its first start is slow, and the probe that waits for it goes on.
    throw new SessionsError(
      "busy",
      `agent ${entry.id} is still starting (its probe has not finished); try again in a few seconds`,
    );
  }
  if (!entry.enabled || entry.status !== "ready") {
    throw new SessionsError(
      "invalid_request",
      `agent ${entry.id} is ${entry.enabled ? entry.status : "disabled"}${entry.last_error ? ` (${entry.last_error})` : ""}; choose a ready, enabled agent`,
    );
  }
  checkOption(entry, "model", choice.model);
  checkOption(entry, "mode", choice.mode);
  return entry;
}

/**
 * Checks a choice against the catalog of the project's agents (see `checkAgentChoice`); without
 * a catalog every choice is refused, since none can be checked.
 */
export async function checkChoiceInCatalog(
  catalog: AgentCatalog | null,
  projectId: string,
  choice: AgentChoice,
): Promise<void> {
  if (catalog === null) {
    throw new SessionsError(
      "invalid_request",
      "this server has no provider registry to check an agent, model or mode against; leave them out",
    );
  }
  checkAgentChoice(await catalog(projectId), choice);
}
