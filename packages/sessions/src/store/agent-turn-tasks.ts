import { type EnqueueResult, type Executor, enqueue, tasks } from "@deckhand/db";
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import { z } from "zod";

/** The task type a user message enqueues; the turn runner installs its handler. */
export const AGENT_TURN_TASK = "agent_turn";

/**
 * What an `agent_turn` task carries: the one definition, written by `enqueue` and read back by
 * the runner (and by cancel, which finds a session's queued turns by it).
 */
export const AgentTurnPayloadSchema = z.object({
  session_id: z.uuid(),
  chat_id: z.uuid(),
  user_message_id: z.uuid(),
  agent: z.string().min(1),
  /** The model and mode the turn asks the agent for (the message's, else the session's). */
  model: z.string().min(1).nullable().optional(),
  mode: z.string().min(1).nullable().optional(),
});
export type AgentTurnPayload = z.infer<typeof AgentTurnPayloadSchema>;

/** Queries of the `agent_turn` tasks in the durable queue. */
export class TurnTaskRows {
  readonly #executor: Executor;

  constructor(executor: Executor) {
    this.#executor = executor;
  }

  /** Enqueues the turn that answers a user message; call it in the message's transaction. */
  async enqueue(payload: AgentTurnPayload): Promise<EnqueueResult> {
    return enqueue(this.#executor, {
      type: AGENT_TURN_TASK,
      // Parsed on the way in, too: a payload the runner would refuse is never queued.
      payload: AgentTurnPayloadSchema.parse(payload),
      idempotencyKey: `${AGENT_TURN_TASK}:${payload.user_message_id}`,
      // A session's agents share its worktree: its turns run one at a time, in order, on
      // whichever server claims them, and a queued turn holds no worker slot while it waits.
      serialKey: `session:${payload.session_id}`,
    });
  }

  /** The agent's turns in the session that are queued or running, oldest first. */
  async unfinished(sessionId: string, agent: string, limit: number): Promise<AgentTurnPayload[]> {
    const rows = await this.#executor
      .select({ payload: tasks.payload })
      .from(tasks)
      .where(
        and(
          eq(tasks.type, AGENT_TURN_TASK),
          inArray(tasks.status, ["pending", "running"]),
          sql`${tasks.payload}->>'session_id' = ${sessionId}`,
          sql`${tasks.payload}->>'agent' = ${agent}`,
        ),
      )
      .orderBy(asc(tasks.id))
      .limit(limit);
    return rows.flatMap((row) => {
      const parsed = AgentTurnPayloadSchema.safeParse(row.payload);
      return parsed.success ? [parsed.data] : [];
    });
  }
}
