import { UsageJobId } from "@deckhand/wire";

/**
 * The job an agent session's model usage is recorded under. The turn runner leases model tokens
 * for it, the session usage route reads it back and the session's budget sums it (@deckhand/wire
 * owns the spelling).
 */
export function agentSessionJobId(agentSessionRowId: string): string {
  return UsageJobId.agentSession(agentSessionRowId);
}
