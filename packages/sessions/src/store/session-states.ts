import { chats, type Executor, messages, pendingChanges, sessionEvents } from "@deckhand/db";
import type { SessionActivity } from "@deckhand/wire";
import { and, count, desc, eq, inArray, max, sql } from "drizzle-orm";

/** What a session's agents are doing and how far its stream has got, as stored now. */
export interface SessionState {
  activity: SessionActivity;
  /** The latest event id on the session's stream; 0 when it has none. */
  lastEventId: number;
  /** When that event happened; null when there is none. */
  lastEventAt: Date | null;
  /** Changes its agents made that wait for review (apply or reject). */
  pendingChanges: number;
}

/** A session nothing has happened in yet: no turn, no event. */
export const NEW_SESSION_STATE: SessionState = {
  activity: "idle",
  lastEventId: 0,
  lastEventAt: null,
  pendingChanges: 0,
};

/**
 * The state of each session, derived from stored rows only (so every replica answers the same):
 *
 * - `running`: a message is pending or streaming, or a chat's newest message is a user message
 *   for an agent (its turn is queued; the turn inserts its assistant message when it starts);
 * - `needs_input`: running, and a `permission_request` of a streaming message has no
 *   `permission_resolved` after it on the session's log;
 * - `failed`: not running, and the session's newest assistant message failed;
 * - `idle`: anything else, cancelled turns included.
 *
 * Closed sessions (`open` false) run nothing: a queued turn of one never starts.
 */
export async function sessionStates(
  executor: Executor,
  sessions: readonly { id: string; open: boolean }[],
): Promise<Map<string, SessionState>> {
  const states = new Map<string, SessionState>();
  if (sessions.length === 0) return states;
  const ids = sessions.map((session) => session.id);
  const open = new Set(sessions.filter((session) => session.open).map((session) => session.id));

  const [newestPerChat, newestAssistant, lastEvents, pending] = await Promise.all([
    executor
      .selectDistinctOn([messages.chatId], {
        sessionId: chats.sessionId,
        role: messages.role,
        agent: messages.agentType,
        status: messages.status,
      })
      .from(messages)
      .innerJoin(chats, eq(chats.id, messages.chatId))
      .where(inArray(chats.sessionId, ids))
      .orderBy(messages.chatId, desc(messages.createdAt), desc(messages.id)),
    executor
      .selectDistinctOn([chats.sessionId], { sessionId: chats.sessionId, status: messages.status })
      .from(messages)
      .innerJoin(chats, eq(chats.id, messages.chatId))
      .where(and(inArray(chats.sessionId, ids), eq(messages.role, "assistant")))
      .orderBy(chats.sessionId, desc(messages.createdAt), desc(messages.id)),
    executor
      .select({
        sessionId: sessionEvents.sessionId,
        lastEventId: max(sessionEvents.id),
        lastEventAt: max(sessionEvents.createdAt),
      })
      .from(sessionEvents)
      .where(inArray(sessionEvents.sessionId, ids))
      .groupBy(sessionEvents.sessionId),
    executor
      .select({ sessionId: pendingChanges.sessionId, count: count() })
      .from(pendingChanges)
      .where(and(inArray(pendingChanges.sessionId, ids), eq(pendingChanges.status, "pending")))
      .groupBy(pendingChanges.sessionId),
  ]);

  const running = new Set<string>();
  for (const row of newestPerChat) {
    const busy =
      row.status === "pending" ||
      row.status === "streaming" ||
      (row.role === "user" && row.agent !== null);
    if (busy && open.has(row.sessionId)) running.add(row.sessionId);
  }
  const waiting = new Set<string>();
  if (running.size > 0) {
    // Only requests of turns still streaming count: a turn that ended answered or dropped them.
    const rows = await executor
      .selectDistinct({ sessionId: sessionEvents.sessionId })
      .from(sessionEvents)
      .where(
        and(
          inArray(sessionEvents.sessionId, [...running]),
          eq(sessionEvents.type, "permission_request"),
          sql`exists (select 1 from ${messages} where ${messages.id}::text = ${sessionEvents.payload}->>'message_id' and ${messages.status} = 'streaming')`,
          sql`not exists (select 1 from ${sessionEvents} as answer where answer.session_id = ${sessionEvents.sessionId} and answer.type = 'permission_resolved' and answer.id > ${sessionEvents.id} and answer.payload->>'request_id' = ${sessionEvents.payload}->>'request_id')`,
        ),
      );
    for (const row of rows) waiting.add(row.sessionId);
  }
  const failed = new Set(
    newestAssistant.filter((row) => row.status === "failed").map((row) => row.sessionId),
  );
  const lastEventOf = new Map(lastEvents.map((row) => [row.sessionId, row]));
  const pendingOf = new Map(pending.map((row) => [row.sessionId, Number(row.count)]));

  for (const id of ids) {
    const activity: SessionActivity = waiting.has(id)
      ? "needs_input"
      : running.has(id)
        ? "running"
        : failed.has(id)
          ? "failed"
          : "idle";
    const last = lastEventOf.get(id);
    states.set(id, {
      activity,
      lastEventId: Number(last?.lastEventId ?? 0),
      lastEventAt: last?.lastEventAt ? new Date(last.lastEventAt) : null,
      pendingChanges: pendingOf.get(id) ?? 0,
    });
  }
  return states;
}
