import { mkdir, rm, stat } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import {
  agentSessions,
  chats,
  type DbHandle,
  messageParts,
  messages,
  type PendingChangeStatus,
  pendingChanges,
  projects,
  sessions,
  sessionWorktrees,
} from "@deckhand/db";
import { redactSecrets } from "@deckhand/secrets";
import type {
  Chat,
  CreateChatRequest,
  CreateMessageRequest,
  CreateMessageResponse,
  CreateProjectRequest,
  CreateSessionRequest,
  Message,
  PendingChange,
  Project,
  ProjectBranchList,
  Session,
  SessionListQuery,
  UpdateSessionRequest,
} from "@deckhand/wire";
import {
  and,
  asc,
  desc,
  eq,
  ilike,
  inArray,
  isNotNull,
  isNull,
  or,
  type SQL,
  sql,
} from "drizzle-orm";
import { type AgentCatalog, type AgentChoice, checkAgentChoice } from "./agent-choice.ts";
import { enqueueAgentTurn } from "./agent-turn-task.ts";
import {
  branchExists,
  type CommitSummary,
  changedPaths,
  commitDiff,
  commitPath,
  commitsBetween,
  currentBranch,
  diffBetween,
  diffPath,
  git,
  isAncestor,
  repositoryRoot,
  resetSoft,
  resolveCommit,
  restorePath,
  startingBranches,
} from "./git.ts";
import {
  chatResource,
  messageResource,
  pendingChangeResource,
  projectResource,
  sessionResource,
} from "./resources.ts";
import { SessionLock } from "./session-lock.ts";
import {
  type ChatRow,
  type PendingChangeWithAgent,
  type ProjectRow,
  SessionRepository,
  type SessionWithWorktree,
  type SessionWorktreeRow,
} from "./session-repository.ts";
import { SessionsError } from "./sessions-error.ts";
import { appendSessionEvent, SESSION_EVENTS_CHANNEL } from "./store/session-events.ts";
import { NEW_SESSION_STATE, sessionStates } from "./store/session-states.ts";
import { type AgentSessionUsageJob, agentSessionJobId } from "./usage-job.ts";

/** The line that marks a commit Deckhand made applying a pending change. */
const APPLIED_LINE = "Applied from Deckhand pending change";

function isApplyCommit(commit: CommitSummary): boolean {
  return commit.body.split("\n").some((line) => line.startsWith(`${APPLIED_LINE} `));
}

/** What `foldAgentCommits` did with the commits an agent made during its turn. */
export type FoldCommitsResult =
  | { kind: "unchanged" }
  /** `folded` are now staged changes; `kept` stay committed (an apply came after them). */
  | { kind: "folded"; folded: CommitSummary[]; kept: CommitSummary[] }
  /** HEAD left the session branch, or the branch no longer contains the turn's start: left alone. */
  | { kind: "moved"; reason: string };

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function notFound(what: string, id: string): SessionsError {
  return new SessionsError("not_found", `no ${what} with id ${JSON.stringify(id)}`);
}

/** Ids come from URLs; anything but a UUID names nothing (and would make PostgreSQL fail a cast). */
function checkId(what: string, id: string): void {
  if (!UUID_PATTERN.test(id)) throw notFound(what, id);
}

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
  database: DbHandle;
  /** Where cloned projects go. */
  projectsDir: string;
  /** Where session worktrees go: inside the workspace agent's root, so its APIs can reach them. */
  worktreesDir: string;
  /** The process's session lock; the turn runner shares it through `lock`. A new one by default. */
  lock?: SessionLock;
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
  gitEnvironment?: (url: string) => Readonly<Record<string, string>> | undefined;
}

/**
 * Projects, sessions and their worktrees, chats, messages and pending changes. Git work on one
 * session is serialised in this process; the database transaction is the unit everywhere else.
 */
export class SessionService {
  readonly #database: DbHandle;
  readonly #projectsDir: string;
  readonly #worktreesDir: string;
  readonly #agentCatalog: AgentCatalog | null;
  readonly #gitEnvironment: SessionServiceOptions["gitEnvironment"];
  /** Serialises git work on a session with this process's other git work and turns on it. */
  readonly lock: SessionLock;
  /** Typed reads of the domain's rows, shared with the turn runner. */
  readonly repository: SessionRepository;

  constructor(options: SessionServiceOptions) {
    this.#database = options.database;
    this.#projectsDir = options.projectsDir;
    this.#worktreesDir = options.worktreesDir;
    this.#agentCatalog = options.agentCatalog ?? null;
    this.#gitEnvironment = options.gitEnvironment;
    this.lock = options.lock ?? new SessionLock();
    this.repository = new SessionRepository(options.database.db);
  }

  get #db() {
    return this.#database.db;
  }

  // Projects

  async createProject(request: CreateProjectRequest): Promise<Project> {
    return this.#createProject(request, false);
  }

  /**
   * The project of a repository, found by where it is, or else created as `createProject` would:
   * a working copy is found by its top-level directory, a URL by the URL as given (the oldest
   * such project wins). Creating, `default_branch` is only a preference: a branch the repository
   * lacks (a working copy's remote-tracking branch, say) gives way to the checked-out one.
   */
  async projectForRepository(request: CreateProjectRequest): Promise<Project> {
    let condition: SQL | null = null;
    if (request.repository_path !== undefined) {
      const root = await repositoryRoot(resolve(request.repository_path)).catch(() => null);
      if (root !== null) condition = eq(projects.repositoryPath, root);
    } else if (request.repository_url !== undefined) {
      condition = eq(projects.repositoryUrl, request.repository_url);
    }
    if (condition !== null) {
      const [existing] = await this.#db
        .select()
        .from(projects)
        .where(condition)
        .orderBy(asc(projects.createdAt))
        .limit(1);
      if (existing) return projectResource(existing);
    }
    return this.#createProject(request, true);
  }

  async #createProject(request: CreateProjectRequest, preferBranch: boolean): Promise<Project> {
    let repositoryPath: string;
    const id = crypto.randomUUID();
    if (request.repository_path !== undefined) {
      const given = resolve(request.repository_path);
      const root = await stat(given)
        .then((info) => (info.isDirectory() ? repositoryRoot(given) : null))
        .catch(() => null);
      if (root === null) {
        throw new SessionsError(
          "invalid_request",
          `repository_path ${JSON.stringify(request.repository_path)} is not a git repository on the server's machine; give the path of a checkout (git init or git clone first)`,
        );
      }
      repositoryPath = root;
    } else {
      await mkdir(this.#projectsDir, { recursive: true });
      repositoryPath = join(this.#projectsDir, id);
      try {
        await git(["clone", "--quiet", "--", request.repository_url!, repositoryPath], {
          timeoutMs: 15 * 60_000,
          ...this.#credentialsFor(request.repository_url!),
        });
      } catch (error) {
        await rm(repositoryPath, { recursive: true, force: true });
        // Git may name the clone's directory (in the server's data directory); the client
        // sees "the project directory" instead, the log keeps the path (cause).
        const reason = (error as Error).message
          .replaceAll(repositoryPath, "the project directory")
          .replaceAll(this.#projectsDir, "the projects directory");
        throw new SessionsError(
          "invalid_request",
          `could not clone repository_url: ${reason}; check the URL and that this machine can reach it`,
          { cause: error },
        );
      }
    }
    const cloned = request.repository_path === undefined;
    let defaultBranch: string | null;
    try {
      defaultBranch = await this.#defaultBranch(
        repositoryPath,
        request.default_branch,
        preferBranch,
      );
    } catch (error) {
      // A clone nobody's project will name is not left behind.
      if (cloned) await rm(repositoryPath, { recursive: true, force: true });
      throw error;
    }
    const [row] = await this.#db
      .insert(projects)
      .values({
        id,
        name: redactSecrets(request.name ?? basename(repositoryPath)),
        repositoryPath,
        repositoryUrl: request.repository_url ?? null,
        defaultBranch,
      })
      .returning();
    return projectResource(row!);
  }

  async #defaultBranch(
    repositoryPath: string,
    requested: string | undefined,
    preferBranch: boolean,
  ): Promise<string> {
    const current = await currentBranch(repositoryPath);
    let defaultBranch = requested ?? current;
    if (
      preferBranch &&
      requested !== undefined &&
      current !== null &&
      (await resolveCommit(repositoryPath, requested)) === null
    ) {
      defaultBranch = current;
    }
    if (defaultBranch === null) {
      throw new SessionsError(
        "invalid_request",
        "the repository's HEAD is detached, so its default branch is unknown; pass default_branch",
      );
    }
    if ((await resolveCommit(repositoryPath, defaultBranch)) === null) {
      throw new SessionsError(
        "invalid_request",
        `default_branch ${JSON.stringify(defaultBranch)} has no commit in the repository; commit something first or name another branch`,
      );
    }
    return defaultBranch;
  }

  async listProjects(): Promise<Project[]> {
    const rows = await this.#db.select().from(projects).orderBy(desc(projects.createdAt));
    return rows.map(projectResource);
  }

  async #projectRow(projectId: string): Promise<ProjectRow> {
    checkId("project", projectId);
    const row = await this.repository.project(projectId);
    if (!row) throw notFound("project", projectId);
    return row;
  }

  async getProject(projectId: string): Promise<Project> {
    return projectResource(await this.#projectRow(projectId));
  }

  // Sessions

  /**
   * The branches a session of the project can start from, its default branch first and the
   * session branches Deckhand made (`deckhand/…`) left out.
   */
  async listProjectBranches(projectId: string): Promise<ProjectBranchList> {
    const project = await this.#projectRow(projectId);
    const branches = (await startingBranches(project.repositoryPath!)).filter(
      (name) => name !== project.defaultBranch && !name.startsWith("deckhand/"),
    );
    return {
      default_branch: project.defaultBranch,
      branches: [project.defaultBranch, ...branches],
    };
  }

  async createSession(
    projectId: string,
    request: CreateSessionRequest,
    options: CreateSessionOptions = {},
  ): Promise<Session> {
    const project = await this.#projectRow(projectId);
    const repository = project.repositoryPath!;
    if (request.agent !== undefined) {
      await this.#checkChoice(projectId, { ...request, agent: request.agent });
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
    let baseCommit: string | null;
    if (options.baseCommit !== undefined) {
      baseCommit = await this.#commitInProject(project, options.baseCommit);
    } else if (request.base_branch !== undefined) {
      baseCommit = await resolveCommit(repository, request.base_branch);
      if (baseCommit === null) {
        throw new SessionsError(
          "invalid_request",
          `base_branch ${JSON.stringify(request.base_branch)} is no branch or commit in ${repository}; name one it has, or leave base_branch out for ${project.defaultBranch}`,
        );
      }
    } else {
      baseCommit = await resolveCommit(repository, project.defaultBranch);
    }
    if (baseCommit === null) {
      throw new SessionsError(
        "conflict",
        `the project's default branch ${project.defaultBranch} no longer resolves to a commit`,
      );
    }
    await mkdir(this.#worktreesDir, { recursive: true });
    const path = join(this.#worktreesDir, sessionId);
    try {
      await git(["worktree", "add", "--quiet", "-b", branch, path, baseCommit], {
        cwd: repository,
      });
    } catch (error) {
      // The branch name is the user's: git refusing it (a ref in the way, such as `a` for
      // `a/b`) is a conflict with the repository to resolve by naming another branch.
      if (!(SessionsError.isInstance(error) && error.code === "git_failed")) throw error;
      throw new SessionsError(
        "conflict",
        `cannot create branch ${branch} for the session: ${error.message}; choose another branch name`,
        { cause: error },
      );
    }
    try {
      const initial = options.initialCommit;
      if (initial !== undefined && initial.diff !== "") {
        await commitDiff(path, initial.diff, initial.message);
      }
      return await this.#db.transaction(async (transaction) => {
        const [session] = await transaction
          .insert(sessions)
          .values({
            id: sessionId,
            projectId,
            title: redactSecrets(request.title ?? ""),
            branch,
            approvalPolicy: request.approval_policy ?? "on-request",
            agent: request.agent ?? null,
            model: request.model ?? null,
            mode: request.mode ?? null,
          })
          .returning();
        const [worktree] = await transaction
          .insert(sessionWorktrees)
          .values({ sessionId, path, branch, baseCommit })
          .returning();
        if (options.context !== undefined) {
          // The session opens on what it is about: its chat's first message, from Deckhand.
          const [chat] = await transaction
            .insert(chats)
            .values({ sessionId, title: "" })
            .returning();
          const [note] = await transaction
            .insert(messages)
            .values({ chatId: chat!.id, role: "system", agentType: null, status: "complete" })
            .returning();
          await transaction.insert(messageParts).values({
            messageId: note!.id,
            position: 0,
            kind: "text",
            content: { text: redactSecrets(options.context) },
          });
        }
        return sessionResource(session!, worktree, NEW_SESSION_STATE);
      });
    } catch (error) {
      await this.#removeWorktree(repository, path, branch, true);
      throw error;
    }
  }

  /** The credentials git needs for one command that reaches `url`, if a connection gives any. */
  #credentialsFor(url: string): { environment?: Readonly<Record<string, string>> } {
    const environment = this.#gitEnvironment?.(url);
    return environment === undefined ? {} : { environment };
  }

  /** The full SHA of `commit` in the project's repository, fetched from origin for a clone. */
  async #commitInProject(project: ProjectRow, commit: string): Promise<string> {
    const repository = project.repositoryPath!;
    let found = await resolveCommit(repository, commit);
    if (found === null && project.repositoryUrl !== null) {
      await git(["fetch", "--quiet", "origin"], {
        cwd: repository,
        timeoutMs: 15 * 60_000,
        ...this.#credentialsFor(project.repositoryUrl),
      }).catch(() => {});
      found = await resolveCommit(repository, commit);
    }
    if (found === null) {
      throw new SessionsError(
        "conflict",
        `commit ${commit} is not in the repository of project ${project.id} (${repository})${project.repositoryUrl === null ? "" : ", not even after fetching its origin"}; fetch it into that repository, or start from another commit`,
      );
    }
    return found;
  }

  /** A `invalid_request` unless the agent is ready and offers the model and mode chosen. */
  async #checkChoice(projectId: string, choice: AgentChoice): Promise<void> {
    if (this.#agentCatalog === null) {
      throw new SessionsError(
        "invalid_request",
        "this server has no provider registry to check an agent, model or mode against; leave them out",
      );
    }
    checkAgentChoice(await this.#agentCatalog(projectId), choice);
  }

  async #removeWorktree(
    repository: string,
    path: string,
    branch: string,
    deleteBranch: boolean,
  ): Promise<void> {
    await git(["worktree", "remove", "--force", path], { cwd: repository }).catch(() =>
      rm(path, { recursive: true, force: true }),
    );
    await git(["worktree", "prune"], { cwd: repository }).catch(() => {});
    if (deleteBranch) await git(["branch", "-D", branch], { cwd: repository }).catch(() => {});
  }

  /**
   * The work on a session's branch: its commits since the session's base commit, as one diff.
   * A closed session's branch stays, so its work can still be read; a deleted branch is a
   * `conflict`.
   */
  async sessionWork(sessionId: string): Promise<SessionWork> {
    const { session, worktree } = await this.#sessionRows(sessionId);
    const project = await this.#projectRow(session.projectId);
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

  async listSessions(projectId: string): Promise<Session[]> {
    await this.#projectRow(projectId);
    const rows = await this.#db
      .select()
      .from(sessions)
      .where(eq(sessions.projectId, projectId))
      .orderBy(desc(sessions.createdAt));
    return this.#sessionResources(rows);
  }

  /**
   * Sessions of every project, newest first. Archived ones only when `archived` asks; each word
   * of `q` must appear (case-insensitively) in the title, the branch or the project's name.
   */
  async listAllSessions(query: SessionListQuery): Promise<Session[]> {
    const archived = query.archived ?? "false";
    const words = (query.q ?? "").split(/\s+/).filter((word) => word !== "");
    const rows = await this.#db
      .select({ session: sessions })
      .from(sessions)
      .innerJoin(projects, eq(projects.id, sessions.projectId))
      .where(
        and(
          archived === "any"
            ? undefined
            : archived === "true"
              ? isNotNull(sessions.archivedAt)
              : isNull(sessions.archivedAt),
          ...words.map((word) => {
            // The words are the user's text, not patterns.
            const pattern = `%${word.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
            return or(
              ilike(sessions.title, pattern),
              ilike(sessions.branch, pattern),
              ilike(projects.name, pattern),
            );
          }),
        ),
      )
      .orderBy(desc(sessions.createdAt));
    return this.#sessionResources(rows.map((row) => row.session));
  }

  /** Archives or unarchives a session; telling the activity feed, as a stream event would. */
  async updateSession(sessionId: string, request: UpdateSessionRequest): Promise<Session> {
    await this.#sessionRows(sessionId);
    await this.#db.transaction(async (transaction) => {
      await transaction
        .update(sessions)
        .set({
          // Archiving again keeps the first time it was archived.
          archivedAt: request.archived ? sql`coalesce(${sessions.archivedAt}, now())` : null,
          updatedAt: new Date(),
        })
        .where(eq(sessions.id, sessionId));
      await transaction.execute(sql`select pg_notify(${SESSION_EVENTS_CHANNEL}, ${sessionId})`);
    });
    return this.getSession(sessionId);
  }

  /** Rows to resources, with each session's activity and latest event id. */
  async #sessionResources(rows: (typeof sessions.$inferSelect)[]): Promise<Session[]> {
    const [worktrees, states] = await Promise.all([
      this.repository.worktreesOf(rows.map((row) => row.id)),
      sessionStates(
        this.#db,
        rows.map((row) => ({ id: row.id, open: row.status === "open" })),
      ),
    ]);
    return rows.map((row) => sessionResource(row, worktrees.get(row.id), states.get(row.id)!));
  }

  /** Sessions by id, as `getSession` gives them; ids naming no session are left out. */
  async sessionsById(sessionIds: readonly string[]): Promise<Session[]> {
    const ids = sessionIds.filter((id) => UUID_PATTERN.test(id));
    if (ids.length === 0) return [];
    const rows = await this.#db.select().from(sessions).where(inArray(sessions.id, ids));
    return this.#sessionResources(rows);
  }

  async #sessionRows(sessionId: string): Promise<SessionWithWorktree> {
    checkId("session", sessionId);
    const rows = await this.repository.session(sessionId);
    if (!rows) throw notFound("session", sessionId);
    return rows;
  }

  /** The session's rows, for the turn runner: a `not_found` when there is no such session. */
  async sessionRows(sessionId: string): Promise<SessionWithWorktree> {
    return this.#sessionRows(sessionId);
  }

  async getSession(sessionId: string): Promise<Session> {
    const { session } = await this.#sessionRows(sessionId);
    const [resource] = await this.#sessionResources([session]);
    return resource!;
  }

  /** The active worktree of an open session; a `conflict` when the session is closed. */
  async activeWorktree(sessionId: string): Promise<SessionWorktreeRow> {
    const { session, worktree } = await this.#sessionRows(sessionId);
    if (session.status !== "open" || !worktree || worktree.status !== "active") {
      throw new SessionsError("conflict", `session ${sessionId} is closed`);
    }
    return worktree;
  }

  async closeSession(sessionId: string, force: boolean): Promise<Session> {
    return this.lock.git(sessionId, async () => {
      const { session, worktree } = await this.#sessionRows(sessionId);
      if (session.status === "closed") return this.getSession(sessionId);
      const project = await this.#projectRow(session.projectId);
      if (worktree && worktree.status === "active") {
        const changes = await changedPaths(worktree.path).catch(() => []);
        const [pending] = await this.#db
          .select({ count: sql<number>`count(*)::int` })
          .from(pendingChanges)
          .where(
            and(eq(pendingChanges.sessionId, sessionId), eq(pendingChanges.status, "pending")),
          );
        const unapplied = Math.max(changes.length, pending?.count ?? 0);
        if (unapplied > 0 && !force) {
          throw new SessionsError(
            "conflict",
            `session ${sessionId} has ${unapplied} unapplied change(s); apply or reject them, or close with force=true to discard them`,
          );
        }
        await this.#removeWorktree(project.repositoryPath!, worktree.path, worktree.branch, false);
      }
      await this.#db.transaction(async (transaction) => {
        await transaction
          .update(sessions)
          .set({ status: "closed", closedAt: new Date(), updatedAt: new Date() })
          .where(eq(sessions.id, sessionId));
        await transaction
          .update(sessionWorktrees)
          .set({ status: "removed", removedAt: new Date() })
          .where(
            and(eq(sessionWorktrees.sessionId, sessionId), eq(sessionWorktrees.status, "active")),
          )
          .returning();
        await transaction
          .update(pendingChanges)
          .set({ status: "rejected", resolvedAt: new Date() })
          .where(
            and(eq(pendingChanges.sessionId, sessionId), eq(pendingChanges.status, "pending")),
          );
        await transaction
          .update(agentSessions)
          .set({ status: "closed", updatedAt: new Date() })
          .where(eq(agentSessions.sessionId, sessionId));
        await appendSessionEvent(transaction, sessionId, null, { type: "session_closed" });
      });
      return this.getSession(sessionId);
    });
  }

  // Chats

  async createChat(sessionId: string, request: CreateChatRequest): Promise<Chat> {
    await this.activeWorktree(sessionId);
    if (request.parent_chat_id !== undefined) {
      const parent = await this.#chatRow(request.parent_chat_id);
      if (parent.sessionId !== sessionId) throw notFound("chat", request.parent_chat_id);
    }
    const [row] = await this.#db
      .insert(chats)
      .values({
        sessionId,
        title: redactSecrets(request.title ?? ""),
        parentChatId: request.parent_chat_id,
      })
      .returning();
    return chatResource(row!);
  }

  async listChats(sessionId: string): Promise<Chat[]> {
    await this.#sessionRows(sessionId);
    const rows = await this.#db
      .select()
      .from(chats)
      .where(eq(chats.sessionId, sessionId))
      .orderBy(asc(chats.createdAt));
    return rows.map(chatResource);
  }

  async #chatRow(chatId: string): Promise<ChatRow> {
    checkId("chat", chatId);
    const row = await this.repository.chat(chatId);
    if (!row) throw notFound("chat", chatId);
    return row;
  }

  // Messages

  /**
   * Stores a user message and, in the same transaction, the task that runs the named agent's
   * turn and the stream event announcing the message: all three happen, or none.
   */
  async createMessage(
    chatId: string,
    request: CreateMessageRequest,
  ): Promise<CreateMessageResponse> {
    const chat = await this.#chatRow(chatId);
    await this.activeWorktree(chat.sessionId);
    const { session } = await this.#sessionRows(chat.sessionId);
    if (request.model !== undefined || request.mode !== undefined) {
      await this.#checkChoice(session.projectId, request);
    }
    // The session's model and mode are its own agent's; another agent keeps its defaults.
    const ownAgent = session.agent === request.agent;
    const model = request.model ?? (ownAgent ? session.model : null);
    const mode = request.mode ?? (ownAgent ? session.mode : null);
    return this.#db.transaction(async (transaction) => {
      const [row] = await transaction
        .insert(messages)
        .values({ chatId, role: "user", agentType: request.agent, status: "complete" })
        .returning();
      const [part] = await transaction
        .insert(messageParts)
        // A pasted model token would otherwise sit in a row and go out on the stream.
        .values({
          messageId: row!.id,
          position: 0,
          kind: "text",
          content: { text: redactSecrets(request.text) },
        })
        .returning();
      const task = await enqueueAgentTurn(transaction, {
        session_id: chat.sessionId,
        chat_id: chatId,
        user_message_id: row!.id,
        agent: request.agent,
        model,
        mode,
      });
      const message = messageResource(row!, [part!]);
      await appendSessionEvent(transaction, chat.sessionId, chatId, {
        type: "message_created",
        message,
      });
      return { message, task_id: task.id };
    });
  }

  async listMessages(chatId: string): Promise<Message[]> {
    await this.#chatRow(chatId);
    const rows = await this.#db
      .select()
      .from(messages)
      .where(eq(messages.chatId, chatId))
      .orderBy(asc(messages.createdAt), asc(messages.id));
    if (rows.length === 0) return [];
    const parts = await this.#db
      .select()
      .from(messageParts)
      .where(
        inArray(
          messageParts.messageId,
          rows.map((row) => row.id),
        ),
      );
    return rows.map((row) =>
      messageResource(
        row,
        parts.filter((part) => part.messageId === row.id),
      ),
    );
  }

  // Agent sessions

  /**
   * The jobs a session's model usage is recorded under: one per agent session it ran (closed
   * ones too, their usage stays theirs), oldest first. A `not_found` when there is no such session.
   */
  async usageJobs(sessionId: string): Promise<AgentSessionUsageJob[]> {
    await this.#sessionRows(sessionId);
    const rows = await this.#db
      .select({
        id: agentSessions.id,
        agent: agentSessions.agentType,
        chatId: agentSessions.chatId,
      })
      .from(agentSessions)
      .where(eq(agentSessions.sessionId, sessionId))
      .orderBy(asc(agentSessions.createdAt), asc(agentSessions.id));
    return rows.map((row) => ({
      jobId: agentSessionJobId(row.id),
      agent: row.agent,
      chatId: row.chatId,
    }));
  }

  /** The live agent session of (session, agent, chat), created on first use. */
  async ensureAgentSession(
    sessionId: string,
    agent: string,
    chatId: string | null,
  ): Promise<string> {
    const chatCondition =
      chatId === null ? sql`${agentSessions.chatId} is null` : eq(agentSessions.chatId, chatId);
    const find = async () => {
      const [row] = await this.#db
        .select({ id: agentSessions.id })
        .from(agentSessions)
        .where(
          and(
            eq(agentSessions.sessionId, sessionId),
            eq(agentSessions.agentType, agent),
            chatCondition,
            sql`${agentSessions.status} <> 'closed'`,
          ),
        );
      return row?.id;
    };
    const existing = await find();
    if (existing) return existing;
    const inserted = await this.#db
      .insert(agentSessions)
      .values({ sessionId, agentType: agent, chatId })
      .onConflictDoNothing()
      .returning({ id: agentSessions.id });
    return inserted[0]?.id ?? (await find())!;
  }

  /**
   * Undoes the commits an agent made on the session branch since `since` (the branch's commit
   * when its turn began) into staged changes, so they become pending changes to review like any
   * other edit. Commits Deckhand made applying pending changes in the meantime stay, and so do
   * agent commits older than such an apply (undoing them would undo the apply). A HEAD that left
   * the session branch, or a branch that no longer contains `since`, is left alone.
   */
  async foldAgentCommits(sessionId: string, since: string): Promise<FoldCommitsResult> {
    return this.lock.git(sessionId, async () => {
      const worktree = await this.activeWorktree(sessionId);
      const branch = await currentBranch(worktree.path);
      const head = await resolveCommit(worktree.path, "HEAD");
      if (branch !== worktree.branch) {
        return {
          kind: "moved",
          reason: `HEAD left the session branch ${worktree.branch}: it is at ${branch === null ? "a detached commit" : `branch ${branch}`} (${head?.slice(0, 12) ?? "no commit"}); Deckhand left it there`,
        };
      }
      if (head === since) return { kind: "unchanged" };
      if (head === null || !(await isAncestor(worktree.path, since, head))) {
        return {
          kind: "moved",
          reason: `the session branch ${worktree.branch} was rewritten: it no longer contains ${since.slice(0, 12)}, where the turn began; Deckhand left it at ${head?.slice(0, 12) ?? "no commit"}`,
        };
      }
      const commits = await commitsBetween(worktree.path, since, head);
      let base = since;
      let firstFolded = 0;
      commits.forEach((commit, index) => {
        if (isApplyCommit(commit)) {
          base = commit.sha;
          firstFolded = index + 1;
        }
      });
      const folded = commits.slice(firstFolded);
      const kept = commits.slice(0, firstFolded).filter((commit) => !isApplyCommit(commit));
      if (folded.length > 0) await resetSoft(worktree.path, base);
      return { kind: "folded", folded, kept };
    });
  }

  // Pending changes

  /**
   * Turns the worktree's uncommitted changes into pending changes attributed to an agent: one
   * per path, its diff against the session branch. A path already pending gets its diff updated
   * and is attributed to the agent that touched it last; a pending path that is clean again is
   * dropped. Announced on the session stream.
   */
  async recordPendingChanges(options: {
    sessionId: string;
    agentSessionId: string;
    chatId: string | null;
  }): Promise<PendingChange[]> {
    const { sessionId } = options;
    return this.lock.git(sessionId, async () => {
      const worktree = await this.activeWorktree(sessionId);
      const changes = await changedPaths(worktree.path);
      const diffs = await Promise.all(
        changes.map(async (change) => ({
          path: change.path,
          diff: await diffPath(worktree.path, change),
        })),
      );
      const [agentSession] = await this.#db
        .select({ agentType: agentSessions.agentType })
        .from(agentSessions)
        .where(eq(agentSessions.id, options.agentSessionId));
      if (!agentSession) throw notFound("agent session", options.agentSessionId);
      return this.#db.transaction(async (transaction) => {
        const pending = await transaction
          .select()
          .from(pendingChanges)
          .where(
            and(eq(pendingChanges.sessionId, sessionId), eq(pendingChanges.status, "pending")),
          );
        const byPath = new Map(pending.map((row) => [row.path, row]));
        const recorded: (typeof pendingChanges.$inferSelect)[] = [];
        for (const { path, diff } of diffs) {
          const existing = byPath.get(path);
          byPath.delete(path);
          if (existing && existing.diff === diff) continue;
          const [row] = existing
            ? await transaction
                .update(pendingChanges)
                .set({ diff, agentSessionId: options.agentSessionId, chatId: options.chatId })
                .where(eq(pendingChanges.id, existing.id))
                .returning()
            : await transaction
                .insert(pendingChanges)
                .values({
                  sessionId,
                  agentSessionId: options.agentSessionId,
                  chatId: options.chatId,
                  path,
                  diff,
                })
                .returning();
          recorded.push(row!);
        }
        const gone = [...byPath.values()].map((row) => row.id);
        if (gone.length > 0) {
          await transaction.delete(pendingChanges).where(inArray(pendingChanges.id, gone));
        }
        if (recorded.length > 0) {
          await appendSessionEvent(transaction, sessionId, options.chatId, {
            type: "pending_changes",
            chat_id: options.chatId,
            agent: agentSession.agentType,
            pending_change_ids: recorded.map((row) => row.id),
          });
        }
        return recorded.map((row) => pendingChangeResource(row, agentSession.agentType));
      });
    });
  }

  async listPendingChanges(
    sessionId: string,
    status: PendingChangeStatus | undefined,
  ): Promise<PendingChange[]> {
    await this.#sessionRows(sessionId);
    const rows = await this.#db
      .select({ change: pendingChanges, agent: agentSessions.agentType })
      .from(pendingChanges)
      .innerJoin(agentSessions, eq(agentSessions.id, pendingChanges.agentSessionId))
      .where(
        and(
          eq(pendingChanges.sessionId, sessionId),
          status ? eq(pendingChanges.status, status) : undefined,
        ),
      )
      .orderBy(asc(pendingChanges.createdAt), asc(pendingChanges.path));
    return rows.map((row) => pendingChangeResource(row.change, row.agent));
  }

  async #pendingChangeRow(pendingChangeId: string): Promise<PendingChangeWithAgent> {
    checkId("pending change", pendingChangeId);
    const row = await this.repository.pendingChange(pendingChangeId);
    if (!row) throw notFound("pending change", pendingChangeId);
    return row;
  }

  async #resolvePendingChange(
    pendingChangeId: string,
    status: "applied" | "rejected",
    gitWork: (worktree: string, path: string, agent: string) => Promise<string | null>,
  ): Promise<{ pendingChange: PendingChange; commit: string | null }> {
    const first = await this.#pendingChangeRow(pendingChangeId);
    const what = `${status === "applied" ? "apply" : "reject"} pending change ${pendingChangeId}`;
    return this.lock.gitOutsideTurns(first.change.sessionId, what, async () => {
      const { change, agent } = await this.#pendingChangeRow(pendingChangeId);
      if (change.status !== "pending") {
        throw new SessionsError(
          "conflict",
          `pending change ${pendingChangeId} is ${change.status} already`,
        );
      }
      const worktree = await this.activeWorktree(change.sessionId);
      const stillChanged = (await changedPaths(worktree.path)).some(
        (changed) => changed.path === change.path,
      );
      if (!stillChanged) {
        throw new SessionsError(
          "conflict",
          `${change.path} no longer differs from the session branch; list pending changes again`,
        );
      }
      // The session lock only serialises this process. Another replica may resolve the same
      // change at once, so the transition is claimed in SQL first: the conditional update locks
      // the row, a concurrent one waits for this transaction and then finds it no longer
      // pending. The git work runs inside the transaction, so a failure leaves it pending.
      // (Only `transaction` is used in here: on PGlite a query outside it would wait forever.)
      return this.#db.transaction(async (transaction) => {
        const [claimed] = await transaction
          .update(pendingChanges)
          .set({ status, resolvedAt: new Date() })
          .where(and(eq(pendingChanges.id, pendingChangeId), eq(pendingChanges.status, "pending")))
          .returning();
        if (!claimed) {
          const [now] = await transaction
            .select({ status: pendingChanges.status })
            .from(pendingChanges)
            .where(eq(pendingChanges.id, pendingChangeId));
          throw new SessionsError(
            "conflict",
            now
              ? `pending change ${pendingChangeId} is ${now.status} already`
              : `pending change ${pendingChangeId} was superseded; list pending changes again`,
          );
        }
        const commit = await gitWork(worktree.path, change.path, agent);
        await appendSessionEvent(transaction, change.sessionId, change.chatId, {
          type: "pending_change_resolved",
          pending_change_id: pendingChangeId,
          status,
        });
        return { pendingChange: pendingChangeResource(claimed, agent), commit };
      });
    });
  }

  /** Commits the change's path on the session branch. */
  async applyPendingChange(
    pendingChangeId: string,
  ): Promise<{ pendingChange: PendingChange; commit: string }> {
    const result = await this.#resolvePendingChange(
      pendingChangeId,
      "applied",
      (worktree, path, agent) =>
        commitPath(
          worktree,
          path,
          `${agent}: update ${path}\n\n${APPLIED_LINE} ${pendingChangeId}.`,
        ),
    );
    return { pendingChange: result.pendingChange, commit: result.commit! };
  }

  /** Restores the change's path as the session branch has it. */
  async rejectPendingChange(pendingChangeId: string): Promise<PendingChange> {
    const result = await this.#resolvePendingChange(
      pendingChangeId,
      "rejected",
      async (worktree, path) => {
        await restorePath(worktree, path);
        return null;
      },
    );
    return result.pendingChange;
  }
}
