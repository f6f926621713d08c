// The model budget scopes of a session's agents: each agent session is a job of its own, and a
// session's agents together spend against the session's budget (config.json's
// `modelBudgets.session`).
import { agentSessions, type DbHandle, sessions } from "@deckhand/db";
import type { BudgetScope, BudgetScopeSource } from "@deckhand/model-proxy";
import { parseUsageJobId, UsageJobId } from "@deckhand/wire";
import { eq } from "drizzle-orm";
import { SessionsError } from "./sessions-error.ts";

export class SessionBudgetScopes implements BudgetScopeSource {
  readonly #database: DbHandle;

  constructor(database: DbHandle) {
    this.#database = database;
  }

  /** An agent session's job and its session. */
  async scopesOf(jobId: string): Promise<BudgetScope[] | null> {
    const parsed = parseUsageJobId(jobId);
    if (parsed?.kind !== "agent_session") return null;
    const [row] = await this.#database.db
      .select({ sessionId: agentSessions.sessionId, agent: agentSessions.agentType })
      .from(agentSessions)
      .where(eq(agentSessions.id, parsed.id));
    if (row === undefined) return null;
    return [
      {
        kind: "job",
        id: jobId,
        label: `the ${row.agent} agent of session ${row.sessionId.slice(0, 8)}`,
        limit: null,
        selector: { jobIds: [jobId] },
        advice: "raise modelBudgets.job in config.json",
      },
      await this.sessionScope(row.sessionId),
    ];
  }

  /** Every agent of a session, against the session's budget. */
  async sessionScope(sessionId: string): Promise<BudgetScope> {
    const [session] = await this.#database.db
      .select({ id: sessions.id, title: sessions.title })
      .from(sessions)
      .where(eq(sessions.id, sessionId));
    if (session === undefined) throw new SessionsError("not_found", `no session ${sessionId}`);
    const agents = await this.#database.db
      .select({ id: agentSessions.id })
      .from(agentSessions)
      .where(eq(agentSessions.sessionId, sessionId));
    return {
      kind: "session",
      id: sessionId,
      label: `session ${session.title === "" ? sessionId.slice(0, 8) : JSON.stringify(session.title)}`,
      limit: null,
      selector: { jobIds: agents.map((agent) => UsageJobId.agentSession(agent.id)) },
      advice: "raise modelBudgets.session in config.json, or go on in a new session",
    };
  }
}
