/**
 * The job an agent session's model usage is recorded under. The turn runner leases model access
 * for it and the session usage route reads it back, so both must spell it the same way.
 */
export function agentSessionJobId(agentSessionRowId: string): string {
  return `agent-session:${agentSessionRowId}`;
}

/** One job a session's model usage is recorded under: an agent session it ran. */
export interface AgentSessionUsageJob {
  jobId: string;
  agent: string;
  chatId: string | null;
}
