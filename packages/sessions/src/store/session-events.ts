import {
  type Database,
  type DbHandle,
  EventFeedHub,
  type Executor,
  type FeedNotice,
  GroupCommitWriter,
  sessionEvents,
  type Transaction,
} from "@deckhand/db";
import { redactValue } from "@deckhand/secrets";
import type { SessionEvent, SessionEventPayload } from "@deckhand/wire";
import { and, asc, eq, gt, type SQL, type SQLWrapper, sql } from "drizzle-orm";

/** NOTIFY channel announcing a new session event; the payload is the session id. */
export const SESSION_EVENTS_CHANNEL = "deckhand_session_events";

type EventRow = typeof sessionEvents.$inferSelect;

/** Below PostgreSQL's limit on a NOTIFY payload (8,000 bytes), with room to spare. */
const NOTICE_BYTES = 7_600;

/** A notice's events as `appendSessionEvents` sends them. */
interface NoticeRow {
  i: number | string;
  c: string | null;
  t: number | string;
  e: unknown;
}

/**
 * Reads a notification on the events channel: a bare session id (`notifySessionChanged`, or an
 * append too large to carry its rows), or an append's session, the session's last event id
 * before it and its rows, as `readSessionEvents` would return them.
 */
export function sessionEventsNotice(payload: string): FeedNotice<SessionEvent> {
  if (!payload.startsWith("{")) return { key: payload };
  const notice = JSON.parse(payload) as { s: string; p: number | string; e: NoticeRow[] | null };
  return {
    key: notice.s,
    previousId: Number(notice.p),
    events: (notice.e ?? []).map((row) => ({
      id: Number(row.i),
      session_id: notice.s,
      chat_id: row.c,
      created_at: new Date(Number(row.t)).toISOString(),
      event: row.e as SessionEventPayload,
    })),
  };
}

function toSessionEvent(row: EventRow): SessionEvent {
  return {
    id: row.id,
    session_id: row.sessionId,
    chat_id: row.chatId,
    created_at: row.createdAt.toISOString(),
    event: row.payload as SessionEventPayload,
  };
}

/** Appends one event to a session's log, as `appendSessionEvents` does. */
export async function appendSessionEvent(
  executor: Executor,
  sessionId: string,
  chatId: string | null,
  event: SessionEventPayload,
): Promise<SessionEvent> {
  const [appended] = await appendSessionEvents(executor, sessionId, [{ chatId, event }]);
  return appended!;
}

export interface AppendOptions {
  /**
   * A statement (an insert or update with `returning`) run first, in the same statement: the
   * events are appended only when it returns a row, so a change and the event announcing it
   * take one round trip and no transaction.
   */
  onlyIf?: SQLWrapper;
}

/** A row of `session_events` as a raw statement returns it (drivers differ on bigint and time). */
interface AppendedRow {
  id: number | string;
  session_id: string;
  chat_id: string | null;
  payload: unknown;
  created_at: Date | string;
}

/**
 * Appends events to one session's log in one statement, in the given order. Call it inside the
 * transaction that makes the change the events describe, or on the database for events that
 * change nothing else (the statement is then a transaction of its own). A per-session advisory
 * lock, taken by the statement before its rows get their ids and held until its transaction
 * ends, makes appends to one session commit in id order, so a reader that has seen id N can
 * never later find a smaller id committed behind it. Listeners on the events channel are told
 * on commit, so none wakes for an event it cannot read yet.
 */
export async function appendSessionEvents(
  executor: Executor,
  sessionId: string,
  entries: readonly { chatId: string | null; event: SessionEventPayload }[],
  options: AppendOptions = {},
): Promise<SessionEvent[]> {
  if (entries.length === 0) return [];
  // A guard runs first in the same statement; nothing is appended when it returns no row.
  const guard = options.onlyIf ? sql`guard as materialized (${options.onlyIf.getSQL()}), ` : sql``;
  const lockFrom = options.onlyIf ? sql` from guard limit 1` : sql``;
  const rows = rowsToInsert(sessionId, entries);
  // The notice carries the rows when a stream of this process follows the session and they fit
  // PostgreSQL's 8,000-byte payload (a row's own fields take under 100 bytes besides its
  // payload), so its fan-out need not read them. Otherwise it is the bare session id: building
  // the rows' JSON and reading the previous id cost the engine more than the insert itself.
  const rich =
    EventFeedHub.followed(SESSION_EVENTS_CHANNEL, sessionId) &&
    rows.jsonLength + entries.length * 100 + 200 < NOTICE_BYTES;
  // The rows are made from the lock's row, so no id is drawn before the lock is held; they are
  // inserted (and draw their ids) in the order of the list. `previous` is the session's last id
  // before them, read after the lock too.
  const previous = rich
    ? sql`, previous as materialized (
      select coalesce(max(last.id), 0) as id from locked cross join lateral (
        select id from session_events where session_id = ${sessionId}::uuid order by id desc limit 1
      ) last
    )`
    : sql``;
  const notice = rich
    ? sql`json_build_object(
        's', ${sessionId}::text,
        'p', (select id from previous),
        'e', (select json_agg(json_build_object(
          'i', id, 'c', chat_id, 't', floor(extract(epoch from created_at) * 1000), 'e', payload
        ) order by id) from inserted)
      )::text`
    : sql`${sessionId}::text`;
  const result = (await executor.execute(sql`
    with ${guard}locked as materialized (
      select pg_advisory_xact_lock(hashtextextended(${sessionId}, 0))${lockFrom}
    )${previous}, inserted as (
      insert into session_events (session_id, chat_id, type, payload)
      ${rows.select}
      returning id, session_id, chat_id, payload, created_at
    ), notified as materialized (
      select pg_notify(${SESSION_EVENTS_CHANNEL}, ${notice}) where exists (select from locked)
    )
    select inserted.* from inserted, notified order by inserted.id
  `)) as unknown as { rows: AppendedRow[] };
  return result.rows.map((row) => ({
    id: Number(row.id),
    session_id: row.session_id,
    chat_id: row.chat_id,
    created_at: new Date(row.created_at).toISOString(),
    event: row.payload as SessionEventPayload,
  }));
}

/**
 * The `select` that makes an append's rows from the lock's row (`locked`), redacted (agents echo
 * what they see; a model token or one of Deckhand's own secrets in a tool's output must not reach
 * a row or a frame), and the length of their JSON. Several events come from one JSON parameter,
 * inserted in list order; a lone event (every awaited publish) binds its fields directly, which
 * spares the engine unpacking an array.
 */
function rowsToInsert(
  sessionId: string,
  entries: readonly { chatId: string | null; event: SessionEventPayload }[],
): { select: SQL; jsonLength: number } {
  if (entries.length === 1) {
    const { chatId, event } = entries[0]!;
    const payload = JSON.stringify(redactValue(event));
    return {
      select: sql`select ${sessionId}::uuid, ${chatId}::uuid, ${event.type}, ${payload}::jsonb from locked`,
      jsonLength: payload.length,
    };
  }
  const values = JSON.stringify(
    entries.map(({ chatId, event }) => ({
      chat_id: chatId,
      type: event.type,
      payload: redactValue(event),
    })),
  );
  return {
    select: sql`select ${sessionId}::uuid, (entry->>'chat_id')::uuid, entry->>'type', entry->'payload'
      from locked, jsonb_array_elements(${values}::jsonb) with ordinality as entries(entry, ordinal)
      order by ordinal`,
    jsonLength: values.length,
  };
}

export interface SessionEventWriterOptions<
  Event extends SessionEventPayload = SessionEventPayload,
> {
  /** Most events written in one transaction. */
  maxBatch?: number;
  /**
   * How many events may wait unwritten before `append` makes its caller wait for the database:
   * back-pressure for an agent that produces events faster than they can be stored.
   */
  highWaterMark?: number;
  /**
   * Runs inside each batch's transaction, after its events are appended: for state that must
   * commit with the events that describe it (an assistant message's parts).
   */
  onBatch?: (transaction: Transaction, entries: readonly QueuedEvent<Event>[]) => Promise<void>;
}

export interface QueuedEvent<Event extends SessionEventPayload = SessionEventPayload> {
  chatId: string | null;
  event: Event;
}

/**
 * Writes one session's events in the order they are appended, with group commit: events that
 * arrive while a write is in flight go into the next transaction together. An agent streaming
 * thousands of deltas thus costs a transaction per batch, not per delta, and never waits for the
 * database unless it runs `highWaterMark` events ahead. Nothing is sent to clients before it is
 * stored: streams read from the database. `flush` resolves once everything appended is stored
 * and rejects with the first write error (the events of a failed batch are not retried).
 */
/** `Event` narrows what may be appended, so `onBatch` gets the events as their own type. */
export class SessionEventWriter<Event extends SessionEventPayload = SessionEventPayload> {
  readonly #writer: GroupCommitWriter<QueuedEvent<Event>>;

  constructor(db: Database, sessionId: string, options: SessionEventWriterOptions<Event> = {}) {
    const { onBatch, ...bounds } = options;
    this.#writer = new GroupCommitWriter(
      db,
      async (transaction, batch) => {
        await appendSessionEvents(transaction, sessionId, batch);
        await onBatch?.(transaction, batch);
      },
      bounds,
    );
  }

  /** Queues an event; waits only when the queue is past its high-water mark. */
  append(chatId: string | null, event: Event): Promise<void> {
    return this.#writer.append({ chatId, event });
  }

  /** Resolves when every appended event is stored; rejects if a write failed. */
  flush(): Promise<void> {
    return this.#writer.flush();
  }
}

/**
 * Appends in a transaction of its own (for events that change nothing else): one statement,
 * which takes the session's lock, inserts and notifies (see `appendSessionEvents`).
 */
export function publishSessionEvent(
  db: Database,
  sessionId: string,
  chatId: string | null,
  event: SessionEventPayload,
): Promise<SessionEvent> {
  return appendSessionEvent(db, sessionId, chatId, event);
}

/** Tells listeners on the events channel that the session changed (delivered on commit). */
export async function notifySessionChanged(
  transaction: Transaction,
  sessionId: string,
): Promise<void> {
  await transaction.execute(sql`select pg_notify(${SESSION_EVENTS_CHANNEL}, ${sessionId})`);
}

/** Events of a session after `afterId`, oldest first. */
export async function readSessionEvents(
  executor: Executor,
  sessionId: string,
  afterId: number,
  limit = 1_000,
): Promise<SessionEvent[]> {
  const rows = await executor
    .select()
    .from(sessionEvents)
    .where(and(eq(sessionEvents.sessionId, sessionId), gt(sessionEvents.id, afterId)))
    .orderBy(asc(sessionEvents.id))
    .limit(limit);
  return rows.map(toSessionEvent);
}

/** Reads of the session event log. */
export class SessionEventRows {
  readonly #executor: Executor;

  constructor(executor: Executor) {
    this.#executor = executor;
  }

  /** The payloads of one message's events, in the order they were appended. */
  async payloadsOfMessage(sessionId: string, messageId: string): Promise<unknown[]> {
    const rows = await this.#executor
      .select({ payload: sessionEvents.payload })
      .from(sessionEvents)
      .where(
        and(
          eq(sessionEvents.sessionId, sessionId),
          sql`${sessionEvents.payload}->>'message_id' = ${messageId}`,
        ),
      )
      .orderBy(asc(sessionEvents.id));
    return rows.map((row) => row.payload);
  }
}

/**
 * Fans persisted session events out to the session streams' WebSocket clients: the database's
 * event-feed hub over `session_events`, keyed by session id. An append's notice carries its
 * rows, so a stream that has read up to the append gets them without reading the log.
 */
export class SessionStreamHub extends EventFeedHub<SessionEvent> {
  constructor(handle: DbHandle, options: { pollIntervalMs?: number } = {}) {
    super(handle, {
      channel: SESSION_EVENTS_CHANNEL,
      read: readSessionEvents,
      notice: sessionEventsNotice,
      ...options,
    });
  }
}
