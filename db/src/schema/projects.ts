import { sql } from "drizzle-orm";
import { check, index, pgTable, text, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { createdAt, oneOf, timestampColumn, updatedAt } from "./columns.ts";

/** A repository Deckhand works on: a local git checkout, or a URL it clones. */
export const projects = pgTable(
  "projects",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    name: text("name").notNull(),
    repositoryPath: text("repository_path"),
    repositoryUrl: text("repository_url"),
    defaultBranch: text("default_branch").notNull().default("main"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (table) => [
    check(
      "projects_repository_check",
      sql`${table.repositoryPath} is not null or ${table.repositoryUrl} is not null`,
    ),
    index("projects_name_idx").on(table.name),
    // The project list, newest first.
    index("projects_created_idx").on(table.createdAt),
  ],
);

export const approvalPolicies = ["untrusted", "on-request", "on-failure", "never"] as const;
export type ApprovalPolicyName = (typeof approvalPolicies)[number];

export const sessionStatuses = ["open", "closed"] as const;
export type SessionStatus = (typeof sessionStatuses)[number];

/** An interactive session on one project, with its own worktree and branch. */
export const sessions = pgTable(
  "sessions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    title: text("title").notNull().default(""),
    branch: text("branch").notNull(),
    status: text("status").$type<SessionStatus>().notNull().default("open"),
    /** When Deckhand's native agent asks before acting (Codex's approval policies). */
    approvalPolicy: text("approval_policy")
      .$type<ApprovalPolicyName>()
      .notNull()
      .default("on-request"),
    /** The agent chosen at creation, and the model and mode its turns use unless a message says. */
    agent: text("agent"),
    model: text("model"),
    mode: text("mode"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    closedAt: timestampColumn("closed_at"),
    /** Set while the session is archived: hidden from the session list unless asked for. */
    archivedAt: timestampColumn("archived_at"),
  },
  (table) => [
    check("sessions_status_check", oneOf(table.status, sessionStatuses)),
    check("sessions_approval_policy_check", oneOf(table.approvalPolicy, approvalPolicies)),
    index("sessions_project_idx").on(table.projectId, table.createdAt),
    index("sessions_status_idx").on(table.status),
  ],
);

export const worktreeStatuses = ["active", "removed"] as const;
export type WorktreeStatus = (typeof worktreeStatuses)[number];

/** The git worktree a session's agents share; one per session. */
export const sessionWorktrees = pgTable(
  "session_worktrees",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    sessionId: uuid("session_id")
      .notNull()
      .references(() => sessions.id, { onDelete: "cascade" }),
    path: text("path").notNull(),
    branch: text("branch").notNull(),
    baseCommit: text("base_commit").notNull(),
    status: text("status").$type<WorktreeStatus>().notNull().default("active"),
    createdAt: createdAt(),
    removedAt: timestampColumn("removed_at"),
  },
  (table) => [
    check("session_worktrees_status_check", oneOf(table.status, worktreeStatuses)),
    // One worktree per session at a time; a removed one may be followed by a new one.
    index("session_worktrees_session_idx").on(table.sessionId),
    uniqueIndex("session_worktrees_active_idx")
      .on(table.sessionId)
      .where(sql`${table.status} = 'active'`),
  ],
);
