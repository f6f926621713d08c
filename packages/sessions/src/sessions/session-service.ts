import type { Database } from "@deckhand/db";
import { redactSecrets } from "@deckhand/secrets";
import type {
  CreateSessionRequest,
  Session,
  SessionListQuery,
  UpdateSessionRequest,
} from "@deckhand/wire";
import { type AgentCatalog, checkChoiceInCatalog } from "../agent-choice.ts";
import {
  branchExists,
  changedPaths,
  diffBetween,
  type GitEnvironment,
  resolveCommit,
} from "../git.ts";
import { isUuid, requireOpenSession, requireProject, requireSession } from "../required-rows.ts";
import { sessionResource } from "../resources.ts";
import type { SessionLock } from "../session-lock.ts";
import { SessionsError } from "../sessions-error.ts";
import type { SessionRow, SessionWorktreeRow } from "../store/session-rows.ts";
import { NEW_SESSION_STATE } from "../store/session-states.ts";
import { SessionStore } from "../store/session-store.ts";
import { addSessionWorktree, baseCommitFor, removeWorktree } from "./session-worktrees.ts";

/**
 * How a session starts beyond its request, for callers in this process (taking over a batch
 * workspace); the HTTP API does not offer these.
 */
export interface CreateSessionOptions {
  /**
   * The commit the session branch starts from instead of the default branch's. A commit the
   * repository lacks is fetched from `origin` first when the project was cloned from a URL.
   */
  baseCommit?: string;
  /**
   * Changes (a `git diff --binary` against the base commit) committed as the session branch's
   * first commit, by Deckhand, before any agent runs. Nothing is committed for an empty diff.
   */
  initialCommit?: { diff: string; message: string };
  /**
   * What the session is about, in markdown (what a batch workspace ran, its diff, why it
   * failed): the first message of the session's chat, from Deckhand (`role: "system"`), and
   * given to each agent ahead of its first prompt in the session.
   */
  context?: string;
}

/** What a session's branch holds beyond its base commit: the work applied in the session. */
export interface SessionWork {
  /** The commit the session started from. */
  baseCommit: string;
  /** The session branch's commit now (the worktree's uncommitted changes are not in it). */
  head: string;
  /**
   * `baseCommit..head` as one `git diff --binary` with full blob ids, renames detected and
   * `a/`/`b/` prefixes; "" when the branch holds nothing beyond its base.
   */
  diff: string;
}

export interface SessionServiceOptions {
  db: Database;
  lock: SessionLock;
  /** Where session worktrees go: inside the workspace agent's root, so its APIs can reach them. */
  worktreesDir: string;
  agentCatalog: AgentCatalog | null;
  gitEnvironment?: GitEnvironment | undefined;
}

/**
 * Sessions: a branch of a project's repository checked out in a worktree of its own, where the
 * session's agents work. Closing one removes its worktree and keeps its branch.
 */
export class SessionService {
  readonly #store: SessionStore;
  readonly #lock: SessionLock;
  readonly #worktreesDir: string;
  readonly #agentCatalog: AgentCatalog | null;
  readonly #gitEnvironment: GitEnvironment | undefined;

  constructor(options: SessionServiceOptions) {
    this.#store = new SessionStore(options.db);
    this.#lock = options.lock;
    this.#worktreesDir = options.worktreesDir;
    this.#agentCatalog = options.agentCatalog;
    this.#gitEnvironment = options.gitEnvironment;
  }

  async create(
    projectId: string,
    request: CreateSessionRequest,
    options: CreateSessionOptions = {},
  ): Promise<Session> {
    const project = await requireProject(this.#store, projectId);
    const repository = project.repositoryPath!;
    if (request.agent !== undefined) {
      await checkChoiceInCatalog(this.#agentCatalog, projectId, {
        ...request,
        agent: request.agent,
      });
    } else if (request.model !== undefined || request.mode !== undefined) {
      throw new SessionsError(
        "invalid_request",
        "model and mode belong to an agent: give agent too",
      );
    }
    const sessionId = crypto.randomUUID();
    const branch = request.branch ?? `deckhand/${sessionId.slice(0, 8)}`;
    if (await branchExists(repository, branch)) {
      throw new SessionsError("conflict", `branch ${branch} exists already; choose another name`);
    }
    const baseCommit = await baseCommitFor(
      project,
      request,
      options.baseCommit,
      this.#gitEnvironment,
    );
    const path = await addSessionWorktree({
      repository,
      worktreesDir: this.#worktreesDir,
      sessionId,
      branch,
      baseCommit,
      initialCommit: options.initialCommit,
    });
    try {
      return await this.#insert(
        { sessionId, projectId, request, branch, path, baseCommit },
        options,
      );
    } catch (error) {
      await removeWorktree(repository, path, branch, true);
      throw error;
    }
  }

  /** The session's rows, and its chat's first message when it starts with a context. */
  async #insert(
    session: {
      sessionId: string;
      projectId: string;
      request: CreateSessionRequest;
      branch: string;
      path: string;
      baseCommit: string;
    },
    options: CreateSessionOptions,
  ): Promise<Session> {
    const { sessionId, request, branch } = session;
    return this.#store.transaction(async (transaction) => {
      const rows = await transaction.sessions.insert(
        {
          id: sessionId,
          projectId: session.projectId,
          title: redactSecrets(request.title ?? ""),
          branch,
          approvalPolicy: request.approval_policy ?? "on-request",
          agent: request.agent ?? null,
          model: request.model ?? null,
          mode: request.mode ?? null,
        },
        { path: session.path, branch, baseCommit: session.baseCommit },
      );
      if (options.context !== undefined) {
        // The session opens on what it is about: its chat's first message, from Deckhand.
        const chat = await transaction.chats.insert({ sessionId, title: "" });
        await transaction.messages.insertText({
          chatId: chat.id,
          role: "system",
          agentType: null,
          text: options.context,
        });
      }
      return sessionResource(rows.session, rows.worktree, NEW_SESSION_STATE);
    });
  }

  /** A project's sessions, newest first. */
  async list(projectId: string): Promise<Session[]> {
    await requireProject(this.#store, projectId);
    return this.#resources(await this.#store.sessions.listOfProject(projectId));
  }

  /**
   * Sessions of every project, newest first. Archived ones only when `archived` asks; each word
   * of `q` must appear (case-insensitively) in the title, the branch or the project's name.
   */
  async listAll(query: SessionListQuery): Promise<Session[]> {
    const rows = await this.#store.sessions.search({
      archived: query.archived ?? "false",
      words: (query.q ?? "").split(/\s+/).filter((word) => word !== ""),
    });
    return this.#resources(rows);
  }

  async get(sessionId: string): Promise<Session> {
    const { session } = await requireSession(this.#store, sessionId);
    const [resource] = await this.#resources([session]);
    return resource!;
  }

  /** Sessions by id, as `get` gives them; ids naming no session are left out. */
  async byIds(sessionIds: readonly string[]): Promise<Session[]> {
    const ids = sessionIds.filter(isUuid);
    if (ids.length === 0) return [];
    return this.#resources(await this.#store.sessions.byIds(ids));
  }

  /** Archives or unarchives a session; telling the activity feed, as a stream event would. */
  async update(sessionId: string, request: UpdateSessionRequest): Promise<Session> {
    await requireSession(this.#store, sessionId);
    await this.#store.transaction(async (transaction) => {
      await transaction.sessions.setArchived(sessionId, request.archived);
      await transaction.notifySessionChanged(sessionId);
    });
    return this.get(sessionId);
  }

  /** The active worktree of an open session; a `conflict` when the session is closed. */
  async activeWorktree(sessionId: string): Promise<SessionWorktreeRow> {
    return (await requireOpenSession(this.#store, sessionId)).worktree;
  }

  /**
   * The work on a session's branch: its commits since the session's base commit, as one diff.
   * A closed session's branch stays, so its work can still be read; a deleted branch is a
   * `conflict`.
   */
  async work(sessionId: string): Promise<SessionWork> {
    const { session, worktree } = await requireSession(this.#store, sessionId);
    const project = await requireProject(this.#store, session.projectId);
    const repository = project.repositoryPath!;
    const head = await resolveCommit(repository, `refs/heads/${session.branch}`);
    if (!worktree || head === null) {
      throw new SessionsError(
        "conflict",
        `the branch ${session.branch} of session ${sessionId} is gone from ${repository}, so its work cannot be read`,
      );
    }
    return {
      baseCommit: worktree.baseCommit,
      head,
      diff:
        head === worktree.baseCommit
          ? ""
          : await diffBetween(repository, worktree.baseCommit, head),
    };
  }

  /**
   * Closes the session: its worktree is removed (refused while it holds unapplied changes,
   * unless `force`), its pending changes rejected and its agent sessions closed. The branch
   * stays.
   */
  async close(sessionId: string, force: boolean): Promise<Session> {
    return this.#lock.git(sessionId, async () => {
      const { session, worktree } = await requireSession(this.#store, sessionId);
      if (session.status === "closed") return this.get(sessionId);
      const project = await requireProject(this.#store, session.projectId);
      if (worktree && worktree.status === "active") {
        const changes = await changedPaths(worktree.path).catch(() => []);
        const pending = await this.#store.pendingChanges.countPending(sessionId);
        const unapplied = Math.max(changes.length, pending);
        if (unapplied > 0 && !force) {
          throw new SessionsError(
            "conflict",
            `session ${sessionId} has ${unapplied} unapplied change(s); apply or reject them, or close with force=true to discard them`,
          );
        }
        await removeWorktree(project.repositoryPath!, worktree.path, worktree.branch, false);
      }
      await this.#store.transaction(async (transaction) => {
        await transaction.sessions.close(sessionId);
        await transaction.pendingChanges.rejectAllPending(sessionId);
        await transaction.agentSessions.closeAllOf(sessionId);
        await transaction.appendEvent(sessionId, null, { type: "session_closed" });
      });
      return this.get(sessionId);
    });
  }

  /** Rows to resources, with each session's activity and latest event id. */
  async #resources(rows: SessionRow[]): Promise<Session[]> {
    const [worktrees, states] = await Promise.all([
      this.#store.sessions.worktreesOf(rows.map((row) => row.id)),
      this.#store.sessions.states(rows.map((row) => ({ id: row.id, open: row.status === "open" }))),
    ]);
    return rows.map((row) => sessionResource(row, worktrees.get(row.id), states.get(row.id)!));
  }
}
