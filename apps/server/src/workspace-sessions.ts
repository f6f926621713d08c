import type { WorkspaceSession, WorkspaceSessions } from "@deckhand/batches";
import { type SessionDomain, SessionsError } from "@deckhand/sessions";
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
  domain: Pick<SessionDomain, "projects" | "sessions">,
): WorkspaceSessions {
  const { projects, sessions } = domain;
  return {
    async open(request) {
      const project = await projects.forRepository({
        ...(request.repository.kind === "working_copy"
          ? { repository_path: request.repository.path }
          : { repository_url: request.repository.url }),
        default_branch: request.branch,
      });
      const session = await sessions.create(
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
        return asWorkspaceSession(await sessions.get(sessionId));
      } catch (error) {
        if (SessionsError.isInstance(error) && error.code === "not_found") return null;
        throw error;
      }
    },
    async work(sessionId) {
      const [session, work] = await Promise.all([
        sessions.get(sessionId),
        sessions.work(sessionId),
      ]);
      return {
        branch: session.branch,
        baseRevision: work.baseCommit,
        head: work.head,
        diff: work.diff,
      };
    },
    async discard(sessionId) {
      await sessions.close(sessionId, true);
    },
  };
}
