import type { WorkspaceSession, WorkspaceSessions } from "@deckhand/batches";
import { type SessionService, SessionsError } from "@deckhand/sessions";
import type { Session } from "@deckhand/wire";

function asWorkspaceSession(session: Session): WorkspaceSession {
  return {
    sessionId: session.id,
    projectId: session.project_id,
    open: session.status === "open",
    worktreePath: session.worktree_path,
  };
}

/**
 * The session domain as the batch engine takes workspaces over with it: a workspace's
 * repository becomes a project (found or created), and its result the session's first commit.
 */
export function workspaceSessions(
  sessions: Pick<
    SessionService,
    "projectForRepository" | "createSession" | "getSession" | "sessionWork" | "closeSession"
  >,
): WorkspaceSessions {
  return {
    async open(request) {
      const project = await sessions.projectForRepository({
        ...(request.repository.kind === "working_copy"
          ? { repository_path: request.repository.path }
          : { repository_url: request.repository.url }),
        default_branch: request.branch,
      });
      const session = await sessions.createSession(
        project.id,
        { title: request.title },
        {
          baseCommit: request.baseRevision,
          initialCommit: { diff: request.diff, message: request.commitMessage },
          context: request.context,
        },
      );
      return asWorkspaceSession(session);
    },
    async find(sessionId) {
      try {
        return asWorkspaceSession(await sessions.getSession(sessionId));
      } catch (error) {
        if (SessionsError.isInstance(error) && error.code === "not_found") return null;
        throw error;
      }
    },
    async work(sessionId) {
      const [session, work] = await Promise.all([
        sessions.getSession(sessionId),
        sessions.sessionWork(sessionId),
      ]);
      return {
        branch: session.branch,
        baseRevision: work.baseCommit,
        head: work.head,
        diff: work.diff,
      };
    },
    async discard(sessionId) {
      await sessions.closeSession(sessionId, true);
    },
  };
}
