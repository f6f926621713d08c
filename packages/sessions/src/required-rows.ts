// The rows a request names, found or refused: ids come from URLs, so a missing row is a
// `not_found` that names what was asked for, and a closed session a `conflict`.
import { SessionsError } from "./sessions-error.ts";
import type { ChatRow } from "./store/chat-rows.ts";
import type { PendingChangeWithAgent } from "./store/pending-change-rows.ts";
import type { ProjectRow } from "./store/project-rows.ts";
import type { SessionRow, SessionWithWorktree, SessionWorktreeRow } from "./store/session-rows.ts";
import type { SessionStore } from "./store/session-store.ts";

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Anything but a UUID names nothing (and would make PostgreSQL fail a cast). */
export function isUuid(id: string): boolean {
  return UUID_PATTERN.test(id);
}

export function notFound(what: string, id: string): SessionsError {
  return new SessionsError("not_found", `no ${what} with id ${JSON.stringify(id)}`);
}

/** The row `read` finds for an id from outside; a `not_found` naming `what` otherwise. */
async function foundRow<Row>(
  what: string,
  id: string,
  read: (id: string) => Promise<Row | undefined>,
): Promise<Row> {
  if (!isUuid(id)) throw notFound(what, id);
  const row = await read(id);
  if (row === undefined) throw notFound(what, id);
  return row;
}

/** An open session with its active worktree. */
export interface OpenSession {
  session: SessionRow;
  worktree: SessionWorktreeRow;
}

export function requireProject(store: SessionStore, projectId: string): Promise<ProjectRow> {
  return foundRow("project", projectId, (id) => store.projects.get(id));
}

export function requireSession(
  store: SessionStore,
  sessionId: string,
): Promise<SessionWithWorktree> {
  return foundRow("session", sessionId, (id) => store.sessions.get(id));
}

/** The session and its active worktree; a `conflict` when the session is closed. */
export async function requireOpenSession(
  store: SessionStore,
  sessionId: string,
): Promise<OpenSession> {
  return openOf(await requireSession(store, sessionId));
}

/** A chat with its session, which must be open (as `requireOpenSession`), in one query. */
export async function requireChatOfOpenSession(
  store: SessionStore,
  chatId: string,
): Promise<OpenSession & { chat: ChatRow }> {
  const found = await foundRow("chat", chatId, (id) => store.sessions.ofChat(id));
  return { chat: found.chat, ...openOf(found) };
}

function openOf({ session, worktree }: SessionWithWorktree): OpenSession {
  if (session.status !== "open" || !worktree || worktree.status !== "active") {
    throw new SessionsError("conflict", `session ${session.id} is closed`);
  }
  return { session, worktree };
}

export function requireChat(store: SessionStore, chatId: string): Promise<ChatRow> {
  return foundRow("chat", chatId, (id) => store.chats.get(id));
}

export function requirePendingChange(
  store: SessionStore,
  pendingChangeId: string,
): Promise<PendingChangeWithAgent> {
  return foundRow("pending change", pendingChangeId, (id) => store.pendingChanges.get(id));
}
