import type { Database } from "@deckhand/db";
import { requireSession } from "../required-rows.ts";
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
}
