import { SessionsError } from "./sessions-error.ts";
import type { ChatRow } from "./store/chat-rows.ts";
import type { PendingChangeWithAgent } from "./store/pending-change-rows.ts";
import type { ProjectRow } from "./store/project-rows.ts";
import type { SessionRow, SessionWithWorktree, SessionWorktreeRow } from "./store/session-rows.ts";
import type { SessionStore } from "./store/session-store.ts";

// The rows a request names, found or refused: ids come from URLs, so a missing row is a
// `not_found` that names what was asked for, and a closed session a `conflict`.

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Anything but a UUID names nothing (and would make PostgreSQL fail a cast). */
export function isUuid(id: string): boolean {
  return UUID_PATTERN.test(id);
}

export function notFound(what: string, id: string): SessionsError {
  return new SessionsError("not_found", `no ${what} with id ${JSON.stringify(id)}`);
}

function checkId(what: string, id: string): void {
  if (!isUuid(id)) throw notFound(what, id);
}

/** An open session with its active worktree. */
export interface OpenSession {
  session: SessionRow;
  worktree: SessionWorktreeRow;
}

export async function requireProject(store: SessionStore, projectId: string): Promise<ProjectRow> {
  checkId("project", projectId);
  const row = await store.projects.get(projectId);
  if (!row) throw notFound("project", projectId);
  return row;
}

export async function requireSession(
  store: SessionStore,
  sessionId: string,
): Promise<SessionWithWorktree> {
  checkId("session", sessionId);
  const rows = await store.sessions.get(sessionId);
  if (!rows) throw notFound("session", sessionId);
  return rows;
}

/** The session and its active worktree; a `conflict` when the session is closed. */
export async function requireOpenSession(
  store: SessionStore,
  sessionId: string,
): Promise<OpenSession> {
  const { session, worktree } = await requireSession(store, sessionId);
  if (session.status !== "open" || !worktree || worktree.status !== "active") {
    throw new SessionsError("conflict", `session ${sessionId} is closed`);
  }
  return { session, worktree };
}

export async function requireChat(store: SessionStore, chatId: string): Promise<ChatRow> {
  checkId("chat", chatId);
  const row = await store.chats.get(chatId);
  if (!row) throw notFound("chat", chatId);
  return row;
}

export async function requirePendingChange(
  store: SessionStore,
  pendingChangeId: string,
): Promise<PendingChangeWithAgent> {
  checkId("pending change", pendingChangeId);
  const row = await store.pendingChanges.get(pendingChangeId);
  if (!row) throw notFound("pending change", pendingChangeId);
  return row;
}
