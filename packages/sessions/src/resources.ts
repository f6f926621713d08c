import type {
  chats,
  messageParts,
  messages,
  pendingChanges,
  projects,
  sessions,
  sessionWorktrees,
} from "@deckhand/db";
import {
  type Chat,
  type Message,
  type MessagePart,
  MessagePartSchema,
  type PendingChange,
  type Project,
  type Session,
} from "@deckhand/wire";
import type { SessionState } from "./store/session-states.ts";

/** Database rows to the API's snake_case resources (the shapes in @deckhand/wire). */

function iso(date: Date | null): string | null {
  return date === null ? null : date.toISOString();
}

export function projectResource(row: typeof projects.$inferSelect): Project {
  return {
    id: row.id,
    name: row.name,
    repository_path: row.repositoryPath,
    repository_url: row.repositoryUrl,
    default_branch: row.defaultBranch,
    created_at: row.createdAt.toISOString(),
  };
}

export function sessionResource(
  row: typeof sessions.$inferSelect,
  worktree: typeof sessionWorktrees.$inferSelect | undefined,
  state: SessionState,
): Session {
  return {
    id: row.id,
    project_id: row.projectId,
    title: row.title,
    branch: row.branch,
    status: row.status,
    approval_policy: row.approvalPolicy,
    worktree_path: worktree && worktree.status === "active" ? worktree.path : null,
    base_commit: worktree?.baseCommit ?? null,
    created_at: row.createdAt.toISOString(),
    closed_at: iso(row.closedAt),
    activity: state.activity,
    last_event_id: state.lastEventId,
    last_activity_at: (state.lastEventAt ?? row.createdAt).toISOString(),
    pending_changes: state.pendingChanges,
    archived_at: iso(row.archivedAt),
    agent: row.agent,
    model: row.model,
    mode: row.mode,
  };
}

export function chatResource(row: typeof chats.$inferSelect): Chat {
  return {
    id: row.id,
    session_id: row.sessionId,
    parent_chat_id: row.parentChatId,
    title: row.title,
    created_at: row.createdAt.toISOString(),
  };
}

/**
 * A stored part as the API gives it. The column is untyped JSON; parsing it against the part's
 * kind is what lets readers use its fields without casts (and the parts are written only from
 * `PartCollector` and a user message's text, which the same schema describes).
 */
function partResource(part: typeof messageParts.$inferSelect): MessagePart {
  return MessagePartSchema.parse({
    position: part.position,
    kind: part.kind,
    content: part.content,
  });
}

export function messageResource(
  row: typeof messages.$inferSelect,
  parts: (typeof messageParts.$inferSelect)[],
): Message {
  return {
    id: row.id,
    chat_id: row.chatId,
    role: row.role,
    agent: row.agentType,
    status: row.status,
    error: row.error,
    parts: [...parts].sort((left, right) => left.position - right.position).map(partResource),
    created_at: row.createdAt.toISOString(),
    completed_at: iso(row.completedAt),
  };
}

export function pendingChangeResource(
  row: typeof pendingChanges.$inferSelect,
  agent: string,
): PendingChange {
  return {
    id: row.id,
    session_id: row.sessionId,
    chat_id: row.chatId,
    agent,
    path: row.path,
    diff: row.diff,
    status: row.status,
    created_at: row.createdAt.toISOString(),
    resolved_at: iso(row.resolvedAt),
  };
}
