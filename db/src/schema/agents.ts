import { sql } from "drizzle-orm";
import { check, index, pgTable, primaryKey, text, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { chats } from "./chats.ts";
import { createdAt, oneOf, timestampColumn, updatedAt } from "./columns.ts";
import { sessions } from "./projects.ts";

export const agentSessionStatuses = ["idle", "active", "crashed", "closed"] as const;
export type AgentSessionStatus = (typeof agentSessionStatuses)[number];

/**
 * An agent working in a session. `resumeSessionId` is the agent's own session id, kept so a
 * restarted server (or a crashed agent) can resume the conversation where it stopped.
 */
export const agentSessions = pgTable(
  "agent_sessions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    sessionId: uuid("session_id")
      .notNull()
      .references(() => sessions.id, { onDelete: "cascade" }),
    chatId: uuid("chat_id").references(() => chats.id, { onDelete: "set null" }),
    agentType: text("agent_type").notNull(),
    status: text("status").$type<AgentSessionStatus>().notNull().default("idle"),
    resumeSessionId: text("resume_session_id"),
    lastActiveAt: timestampColumn("last_active_at").notNull().defaultNow(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (table) => [
    check("agent_sessions_status_check", oneOf(table.status, agentSessionStatuses)),
    index("agent_sessions_session_idx").on(table.sessionId, table.status),
    // Deleting a chat sets this to null; the live index below leads with the session instead.
    index("agent_sessions_chat_idx").on(table.chatId),
    // The pool keeps one live agent per (session, agent type, chat); closed ones stay as history.
    uniqueIndex("agent_sessions_live_idx")
      .on(table.sessionId, table.agentType, table.chatId)
      .where(sql`${table.status} <> 'closed'`),
  ],
);

export const pendingChangeStatuses = ["pending", "applied", "rejected"] as const;
export type PendingChangeStatus = (typeof pendingChangeStatuses)[number];

/** A change an agent made in the session worktree that a person has not applied or rejected yet. */
export const pendingChanges = pgTable(
  "pending_changes",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    sessionId: uuid("session_id")
      .notNull()
      .references(() => sessions.id, { onDelete: "cascade" }),
    agentSessionId: uuid("agent_session_id")
      .notNull()
      .references(() => agentSessions.id, { onDelete: "cascade" }),
    chatId: uuid("chat_id").references(() => chats.id, { onDelete: "set null" }),
    path: text("path").notNull(),
    diff: text("diff").notNull(),
    status: text("status").$type<PendingChangeStatus>().notNull().default("pending"),
    createdAt: createdAt(),
    resolvedAt: timestampColumn("resolved_at"),
  },
  (table) => [
    check("pending_changes_status_check", oneOf(table.status, pendingChangeStatuses)),
    index("pending_changes_session_idx").on(table.sessionId, table.status, table.createdAt),
    index("pending_changes_agent_session_idx").on(table.agentSessionId),
    // Deleting a chat sets this to null.
    index("pending_changes_chat_idx").on(table.chatId),
  ],
);

export const rememberedPermissions = ["allow_always", "reject_always"] as const;
export type RememberedPermissionAnswer = (typeof rememberedPermissions)[number];

/**
 * "Always" answers to an agent's permission requests, per (session, agent, tool kind): given
 * once, they answer every later request of that kind in the session, across restarts.
 */
export const permissionRules = pgTable(
  "permission_rules",
  {
    sessionId: uuid("session_id")
      .notNull()
      .references(() => sessions.id, { onDelete: "cascade" }),
    agentType: text("agent_type").notNull(),
    toolKind: text("tool_kind").notNull(),
    answer: text("answer").$type<RememberedPermissionAnswer>().notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (table) => [
    primaryKey({ columns: [table.sessionId, table.agentType, table.toolKind] }),
    check("permission_rules_answer_check", oneOf(table.answer, rememberedPermissions)),
  ],
);
