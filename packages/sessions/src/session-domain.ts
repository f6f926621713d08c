import type { DbHandle } from "@deckhand/db";
import type { AgentCatalog } from "./agent-choice.ts";
import { ChatService } from "./chats/chat-service.ts";
import { MessageService } from "./chats/message-service.ts";
import type { GitEnvironment } from "./git.ts";
import { PendingChangeService } from "./pending-changes/pending-change-service.ts";
import { ProjectService } from "./projects/project-service.ts";
import { SessionLock } from "./session-lock.ts";
import { AgentSessionService } from "./sessions/agent-session-service.ts";
import { SessionService } from "./sessions/session-service.ts";

export interface SessionDomainOptions {
  database: DbHandle;
  /** Where cloned projects go. */
  projectsDir: string;
  /** Where session worktrees go: inside the workspace agent's root, so its APIs can reach them. */
  worktreesDir: string;
  /**
   * The providers snapshot, to check a session's or a message's agent, model and mode against.
   * Without it, requests that choose a model or mode (or a session's agent) are refused.
   */
  agentCatalog?: AgentCatalog;
  /**
   * Variables for git commands that reach a project's URL (cloning it, fetching from it): the
   * matching code host connection's credentials, passed to that one command and never written
   * to the clone's config; undefined for a URL that needs none.
   */
  gitEnvironment?: GitEnvironment;
}

/**
 * The session domain, one service per thing it keeps, each over the store, sharing one lock. Git work on
 * one session is serialised in this process by `lock`; the database transaction is the unit
 * everywhere else.
 */
export interface SessionDomain {
  projects: ProjectService;
  sessions: SessionService;
  chats: ChatService;
  messages: MessageService;
  pendingChanges: PendingChangeService;
  agentSessions: AgentSessionService;
  /**
   * The process's one lock per session: it serialises git work on a session, and turns on it
   * (`AgentTurns` shares it).
   */
  lock: SessionLock;
}

export function createSessionDomain(options: SessionDomainOptions): SessionDomain {
  const { db } = options.database;
  const lock = new SessionLock();
  const agentCatalog = options.agentCatalog ?? null;
  const { gitEnvironment } = options;
  return {
    projects: new ProjectService({ db, projectsDir: options.projectsDir, gitEnvironment }),
    sessions: new SessionService({
      db,
      lock,
      worktreesDir: options.worktreesDir,
      agentCatalog,
      gitEnvironment,
    }),
    chats: new ChatService(db),
    messages: new MessageService(db, agentCatalog),
    pendingChanges: new PendingChangeService(db, lock),
    agentSessions: new AgentSessionService(db),
    lock,
  };
}
