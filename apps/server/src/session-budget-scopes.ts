// The model budget scopes of a session's agents: each agent session is a job of its own, and a
// session's agents together spend against the session's budget (config.json's
// `modelBudgets.session`). Like their model access, this is the proxy's side of the session
// domain: the domain says which agent sessions a session ran, the proxy's budgets sum them.
import type { BudgetScope, BudgetScopeSource } from "@deckhand/model-proxy";
import type { AgentSessionService } from "@deckhand/sessions";
import type { BudgetScopeKind } from "@deckhand/wire";
import { parseUsageJobId } from "@deckhand/wire";

export class SessionBudgetScopes implements BudgetScopeSource {
  readonly #agentSessions: AgentSessionService;

  constructor(agentSessions: AgentSessionService) {
    this.#agentSessions = agentSessions;
  }

  /** An agent session's job and its session. */
  async scopesOf(jobId: string): Promise<BudgetScope[] | null> {
    const parsed = parseUsageJobId(jobId);
    if (parsed?.kind !== "agent_session") return null;
    const owner = await this.#agentSessions.owner(parsed.id);
    if (owner === null) return null;
    return [
      {
        kind: "job",
        id: jobId,
        label: `the ${owner.agent} agent of session ${owner.sessionId.slice(0, 8)}`,
        limit: null,
        selector: { jobIds: [jobId] },
        advice: "raise modelBudgets.job in config.json",
      },
      await this.sessionScope(owner.sessionId),
    ];
  }

  /**
   * An agent session's scopes have no limits of their own (config.json's `modelBudgets.job` and
   * `.session` are theirs), so while those are unset a request needs none of the reads above.
   */
  limitlessKinds(jobId: string): readonly BudgetScopeKind[] | null {
    return parseUsageJobId(jobId)?.kind === "agent_session" ? ["job", "session"] : null;
  }

  /** Every agent of a session, against the session's budget. */
  async sessionScope(sessionId: string): Promise<BudgetScope> {
    const { title, jobIds } = await this.#agentSessions.budgetJobs(sessionId);
    return {
      kind: "session",
      id: sessionId,
      label: `session ${title === "" ? sessionId.slice(0, 8) : JSON.stringify(title)}`,
      limit: null,
      selector: { jobIds },
      advice: "raise modelBudgets.session in config.json, or go on in a new session",
    };
  }
}
