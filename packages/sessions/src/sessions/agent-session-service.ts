import type { Database } from "@deckhand/db";
import { requireSession } from "../required-rows.ts";
import { SessionsError } from "../sessions-error.ts";
import { SessionStore } from "../store/session-store.ts";
import { type AgentSessionUsageJob, agentSessionJobId } from "../usage-job.ts";

/**
 * Agent sessions: each run of an agent in a session (per chat when the agent keeps one per
 * chat), which the agent resumes from and its model usage is recorded under.
 */
export class AgentSessionService {
  readonly #store: SessionStore;

  constructor(db: Database) {
    this.#store = new SessionStore(db);
  }

  /** The live agent session of (session, agent, chat), created on first use; its id. */
  async ensure(sessionId: string, agent: string, chatId: string | null): Promise<string> {
    return (await this.#store.agentSessions.ensure(sessionId, agent, chatId)).id;
  }

  /**
   * The jobs a session's model usage is recorded under: one per agent session it ran (closed
   * ones too, their usage stays theirs), oldest first. A `not_found` when there is no such session.
   */
  async usageJobs(sessionId: string): Promise<AgentSessionUsageJob[]> {
    await requireSession(this.#store, sessionId);
    const rows = await this.#store.agentSessions.listOfSession(sessionId);
    return rows.map((row) => ({
      jobId: agentSessionJobId(row.id),
      agent: row.agent,
      chatId: row.chatId,
    }));
  }

  /**
   * The session an agent session ran in and its agent (what a model budget counts its usage
   * against); null when there is no such agent session. The id is a usage job's, which the
   * server minted, so it is taken as given.
   */
  async owner(agentSessionId: string): Promise<{ sessionId: string; agent: string } | null> {
    return (await this.#store.agentSessions.owner(agentSessionId)) ?? null;
  }

  /**
   * What a session's model budget sums: the jobs of every agent session it ran (closed ones
   * too), and its title to name it by. A `not_found` when there is no such session.
   */
  async budgetJobs(sessionId: string): Promise<{ title: string; jobIds: string[] }> {
    const [session] = await this.#store.sessions.byIds([sessionId]);
    if (session === undefined) throw new SessionsError("not_found", `no session ${sessionId}`);
    const rows = await this.#store.agentSessions.listOfSession(sessionId);
    return { title: session.title, jobIds: rows.map((row) => agentSessionJobId(row.id)) };
  }
}
