import { sql } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import {
  bigserial,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  unique,
  uuid,
} from "drizzle-orm/pg-core";
import { createdAt, oneOf, timestampColumn, updatedAt } from "./columns.ts";
import { sessions } from "./projects.ts";

/** A conversation within a session; a sub-agent's chat names its parent. */
export const chats = pgTable(
  "chats",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    sessionId: uuid("session_id")
      .notNull()
      .references(() => sessions.id, { onDelete: "cascade" }),
    parentChatId: uuid("parent_chat_id").references((): AnyPgColumn => chats.id, {
      onDelete: "cascade",
    }),
    title: text("title").notNull().default(""),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (table) => [
    index("chats_session_idx").on(table.sessionId, table.createdAt),
    index("chats_parent_idx").on(table.parentChatId),
  ],
);

export const messageRoles = ["user", "assistant", "system"] as const;
export type MessageRole = (typeof messageRoles)[number];

export const messageStatuses = ["pending", "streaming", "complete", "failed", "cancelled"] as const;
export type MessageStatus = (typeof messageStatuses)[number];

/** One message of a chat. `agentType` names the agent a user message is for, or that wrote it. */
export const messages = pgTable(
  "messages",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    chatId: uuid("chat_id")
      .notNull()
      .references(() => chats.id, { onDelete: "cascade" }),
    role: text("role").$type<MessageRole>().notNull(),
    agentType: text("agent_type"),
    status: text("status").$type<MessageStatus>().notNull().default("complete"),
    error: text("error"),
    createdAt: createdAt(),
    completedAt: timestampColumn("completed_at"),
  },
  (table) => [
    check("messages_role_check", oneOf(table.role, messageRoles)),
    check("messages_status_check", oneOf(table.status, messageStatuses)),
    index("messages_chat_idx").on(table.chatId, table.createdAt),
  ],
);

export const messagePartKinds = [
  "text",
  "reasoning",
  "tool_call",
  "tool_result",
  "plan",
  "file",
  "error",
] as const;
export type MessagePartKind = (typeof messagePartKinds)[number];

/** The ordered parts of a message: text, reasoning, tool calls and their results. */
export const messageParts = pgTable(
  "message_parts",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    messageId: uuid("message_id")
      .notNull()
      .references(() => messages.id, { onDelete: "cascade" }),
    position: integer("position").notNull(),
    kind: text("kind").$type<MessagePartKind>().notNull(),
    content: jsonb("content").notNull(),
    createdAt: createdAt(),
  },
  (table) => [
    check("message_parts_kind_check", oneOf(table.kind, messagePartKinds)),
    check("message_parts_position_check", sql`${table.position} >= 0`),
    unique("message_parts_message_position_unique").on(table.messageId, table.position),
  ],
);

/**
 * Every event of a session's stream, persisted before it is sent. The bigserial id is the
 * resume cursor: a reconnecting client asks for everything after the last id it saw.
 */
export const sessionEvents = pgTable(
  "session_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    sessionId: uuid("session_id")
      .notNull()
      .references(() => sessions.id, { onDelete: "cascade" }),
    /** The chat the event belongs to; null for session-wide events. */
    chatId: uuid("chat_id").references(() => chats.id, { onDelete: "set null" }),
    type: text("type").notNull(),
    payload: jsonb("payload").notNull(),
    createdAt: createdAt(),
  },
  (table) => [
    index("session_events_session_idx").on(table.sessionId, table.id),
    // Deleting a chat sets this to null; the log is the largest table, so never scan it for that.
    index("session_events_chat_idx").on(table.chatId),
  ],
);
