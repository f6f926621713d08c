import type { Database, Executor, Transaction } from "@deckhand/db";
import type { SessionEvent, SessionEventPayload } from "@deckhand/wire";
import { AgentSessionRows } from "./agent-session-rows.ts";
import { TurnTaskRows } from "./agent-turn-tasks.ts";
import { ChatRows } from "./chat-rows.ts";
import { MessageRows } from "./message-rows.ts";
import { PendingChangeRows } from "./pending-change-rows.ts";
import { ProjectRows } from "./project-rows.ts";
import {
  type AppendOptions,
  appendSessionEvent,
  appendSessionEvents,
  notifySessionChanged,
  publishSessionEvent,
  type QueuedEvent,
  SessionEventRows,
  SessionEventWriter,
  type SessionEventWriterOptions,
} from "./session-events.ts";
import { SessionRows } from "./session-rows.ts";

/** Every query of the session domain over one executor: the database, or a transaction. */
class SessionQueries {
  readonly #executor: Executor;
  readonly projects: ProjectRows;
  readonly sessions: SessionRows;
  readonly chats: ChatRows;
  readonly messages: MessageRows;
  readonly pendingChanges: PendingChangeRows;
  readonly agentSessions: AgentSessionRows;
  readonly turnTasks: TurnTaskRows;
  readonly events: SessionEventRows;

  constructor(executor: Executor) {
    this.#executor = executor;
    this.projects = new ProjectRows(executor);
    this.sessions = new SessionRows(executor);
    this.chats = new ChatRows(executor);
    this.messages = new MessageRows(executor);
    this.pendingChanges = new PendingChangeRows(executor);
    this.agentSessions = new AgentSessionRows(executor);
    this.turnTasks = new TurnTaskRows(executor);
    this.events = new SessionEventRows(executor);
  }

  /**
   * Appends events to the session's log in one statement; with `onlyIf`, after that statement
   * in the same one, and only when it returned a row (none are appended otherwise).
   */
  appendEvents(
    sessionId: string,
    entries: readonly QueuedEvent[],
    options: AppendOptions = {},
  ): Promise<SessionEvent[]> {
    return appendSessionEvents(this.#executor, sessionId, entries, options);
  }
}

/**
 * The one place the session domain talks to the database: projects, sessions and their
 * worktrees, chats, messages and their parts, pending changes, agent sessions, queued turns and
 * the sessions' event log. Reads return `undefined` for an absent row: whether that is an error,
 * and which, is the caller's decision; ids are taken as given (callers check ids from outside).
 */
export class SessionStore extends SessionQueries {
  readonly #db: Database;

  constructor(db: Database) {
    super(db);
    this.#db = db;
  }

  /** Runs `work` in one transaction: what it writes commits together, or not at all. */
  transaction<Result>(work: (transaction: SessionTransaction) => Promise<Result>): Promise<Result> {
    return this.#db.transaction((transaction) => work(new SessionTransaction(transaction)));
  }

  /** Appends an event that changes nothing else, in a transaction of its own. */
  publishEvent(
    sessionId: string,
    chatId: string | null,
    event: SessionEventPayload,
  ): Promise<SessionEvent> {
    return publishSessionEvent(this.#db, sessionId, chatId, event);
  }

  /**
   * A writer of one session's events with group commit (see `SessionEventWriter`); `onBatch`
   * stores, in each batch's transaction, what must commit with its events.
   */
  eventWriter<Event extends SessionEventPayload>(
    sessionId: string,
    options: Omit<SessionEventWriterOptions<Event>, "onBatch"> & {
      onBatch?: (
        transaction: SessionTransaction,
        entries: readonly QueuedEvent<Event>[],
      ) => Promise<void>;
    } = {},
  ): SessionEventWriter<Event> {
    const { onBatch, ...bounds } = options;
    return new SessionEventWriter<Event>(this.#db, sessionId, {
      ...bounds,
      ...(onBatch
        ? {
            onBatch: (transaction, entries) =>
              onBatch(new SessionTransaction(transaction), entries),
          }
        : {}),
    });
  }
}

/** The store's queries inside one transaction, and what only a transaction may do. */
export class SessionTransaction extends SessionQueries {
  readonly #transaction: Transaction;

  constructor(transaction: Transaction) {
    super(transaction);
    this.#transaction = transaction;
  }

  /** Appends an event to the session's log, committed with the change it describes. */
  appendEvent(
    sessionId: string,
    chatId: string | null,
    event: SessionEventPayload,
  ): Promise<SessionEvent> {
    return appendSessionEvent(this.#transaction, sessionId, chatId, event);
  }

  /** Tells the session list the session changed (on commit), as a stream event would. */
  notifySessionChanged(sessionId: string): Promise<void> {
    return notifySessionChanged(this.#transaction, sessionId);
  }
}
