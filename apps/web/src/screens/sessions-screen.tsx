import type { Project, Session, SessionActivity } from "@deckhand/wire";
import { useCallback, useEffect, useState } from "react";
import { Link } from "wouter";
import { messageOf, server } from "../api.ts";
import { ConfirmDialog, type ConfirmRequest } from "../components/confirm-dialog.tsx";
import { useContentMark } from "../components/content-mark.ts";
import { useDocumentTitle } from "../components/document-title.ts";
import { LoadState } from "../components/load-state.tsx";
import { ago } from "../components/relative-time.ts";
import { useReloadOnReconnect } from "../connection.ts";
import { useSessionActivity } from "../sessions/session-activity-watcher.tsx";
import { isUnread } from "../sessions/session-preferences.ts";

const ACTIVITY_LABEL: Record<SessionActivity, string> = {
  running: "Running",
  needs_input: "Needs input",
  failed: "Failed",
  idle: "Idle",
};

/** The board's columns, in the order a person acts on them: what waits for them first. */
const BOARD: readonly SessionActivity[] = ["needs_input", "running", "failed", "idle"];

/** Waits this long after the last keystroke before searching. */
const SEARCH_DELAY_MS = 250;

type View = "list" | "board";
type Sort = "activity" | "created";
const VIEW_KEY = "deckhand.sessions.view";

function storedView(): View {
  try {
    return localStorage.getItem(VIEW_KEY) === "board" ? "board" : "list";
  } catch {
    return "list";
  }
}

interface RowProps {
  session: Session;
  project: string;
  unread: boolean;
  now: number;
  busy: boolean;
  onArchive: (session: Session, archived: boolean) => void;
}

function ArchiveButton({ session, busy, onArchive }: Omit<RowProps, "project" | "unread" | "now">) {
  const title = session.title || session.branch;
  const archived = session.archived_at !== null;
  return (
    <button
      type="button"
      className="link-button"
      disabled={busy}
      aria-label={`${archived ? "Unarchive" : "Archive"} ${title}`}
      onClick={() => onArchive(session, !archived)}
    >
      {archived ? "Unarchive" : "Archive"}
    </button>
  );
}

function Badges({ session, unread }: { session: Session; unread: boolean }) {
  return (
    <span className="badges">
      {unread && (
        <span className="badge unread" data-status="unread">
          Unread
        </span>
      )}
      <span className="badge" data-status={session.activity}>
        {ACTIVITY_LABEL[session.activity]}
      </span>
      {session.status === "closed" && (
        <span className="badge" data-status="closed">
          Closed
        </span>
      )}
      {session.archived_at !== null && (
        <span className="badge" data-status="archived">
          Archived
        </span>
      )}
    </span>
  );
}

function Changes({ count }: { count: number }) {
  return count === 0 ? (
    <span className="muted">—</span>
  ) : (
    <span className="badge" data-status="pending">
      {count} to review
    </span>
  );
}

function SessionRow({ session, project, unread, now, busy, onArchive }: RowProps) {
  const title = session.title || session.branch;
  return (
    <tr data-unread={unread || undefined} data-activity={session.activity}>
      <th scope="row">
        <Link href={`/sessions/${session.id}`} className="session-row-title">
          {title}
        </Link>
        <div className="muted session-row-meta">
          <code>{session.branch}</code>
        </div>
      </th>
      <td>
        <Badges session={session} unread={unread} />
      </td>
      <td>{project}</td>
      <td>{session.agent ?? <span className="muted">—</span>}</td>
      <td>
        <Changes count={session.pending_changes} />
      </td>
      <td>
        <time dateTime={session.last_activity_at} title={session.last_activity_at}>
          {ago(session.last_activity_at, now)}
        </time>
      </td>
      <td>
        <ArchiveButton session={session} busy={busy} onArchive={onArchive} />
      </td>
    </tr>
  );
}

function SessionCard({ session, project, unread, now, busy, onArchive }: RowProps) {
  const title = session.title || session.branch;
  return (
    <li className="board-card" data-unread={unread || undefined}>
      <Link href={`/sessions/${session.id}`} className="session-row-title">
        {title}
      </Link>
      <p className="muted">
        {project}
        {session.agent ? ` · ${session.agent}` : ""} · {ago(session.last_activity_at, now)}
      </p>
      <div className="board-card-foot">
        {unread && (
          <span className="badge unread" data-status="unread">
            Unread
          </span>
        )}
        <Changes count={session.pending_changes} />
        <ArchiveButton session={session} busy={busy} onArchive={onArchive} />
      </div>
    </li>
  );
}

/**
 * Every project's sessions, by last activity: a dense list (what its agent is doing, which
 * agent, how many changes wait for review, when it last moved), or a board by status as in
 * vibe-kanban. Kept live by the activity stream; searched on the server; archiving a session
 * with changes waiting asks first.
 */
export function SessionsScreen() {
  const { sessions: live, seen } = useSessionActivity();
  const [query, setQuery] = useState("");
  const [showArchived, setShowArchived] = useState(false);
  const [view, setView] = useState<View>(storedView);
  const [sort, setSort] = useState<Sort>("activity");
  const [listed, setListed] = useState<Session[] | null>(null);
  const [projects, setProjects] = useState<ReadonlyMap<string, Project>>(new Map());
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [confirming, setConfirming] = useState<ConfirmRequest | null>(null);
  const [now, setNow] = useState(() => Date.now());
  useDocumentTitle("Sessions");

  const load = useCallback(async (text: string, archived: boolean) => {
    const list = await server.listAllSessions({
      query: {
        archived: archived ? "any" : "false",
        ...(text.trim() !== "" ? { q: text.trim() } : {}),
      },
    });
    setListed(list.sessions);
    setError(null);
  }, []);

  const loadProjects = useCallback(() => {
    server
      .listProjects()
      .then((list) => setProjects(new Map(list.projects.map((project) => [project.id, project]))))
      .catch((failure: unknown) => setError(messageOf(failure)));
  }, []);
  useEffect(() => loadProjects(), [loadProjects]);

  useEffect(() => {
    const timer = setTimeout(() => {
      load(query, showArchived).catch((failure: unknown) => setError(messageOf(failure)));
    }, SEARCH_DELAY_MS);
    return () => clearTimeout(timer);
  }, [load, query, showArchived]);

  // "5 min ago" moves on by itself.
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 30_000);
    return () => clearInterval(timer);
  }, []);

  useReloadOnReconnect(() => {
    loadProjects();
    load(query, showArchived).catch((failure: unknown) => setError(messageOf(failure)));
  });

  const archive = async (session: Session, archived: boolean) => {
    setBusy(session.id);
    setError(null);
    try {
      await server.updateSession({ params: { session_id: session.id }, body: { archived } });
      await load(query, showArchived);
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(null);
    }
  };

  /** Archiving hides a session; one whose changes wait for review is asked about first. */
  const onArchive = (session: Session, archived: boolean) => {
    const changes = (live.get(session.id) ?? session).pending_changes;
    if (!archived || changes === 0) {
      void archive(session, archived);
      return;
    }
    const title = session.title || session.branch;
    setConfirming({
      title: `Archive ${title}?`,
      body: (
        <p>
          {changes} {changes === 1 ? "change waits" : "changes wait"} for review in it. Archiving
          only hides the session: they stay pending, and "Show archived" finds it again.
        </p>
      ),
      confirm: `Archive with ${changes} pending`,
      onConfirm: () => void archive(session, true),
    });
  };

  const chooseView = (next: View) => {
    setView(next);
    try {
      localStorage.setItem(VIEW_KEY, next);
    } catch {
      // Not remembered: the list is the default anyway.
    }
  };

  useContentMark(listed !== null, "sessions");

  // What the activity stream pushed is newer than the search's answer.
  const rows = (listed ?? [])
    .map((session) => live.get(session.id) ?? session)
    .filter((session) => showArchived || session.archived_at === null)
    .sort((left, right) =>
      sort === "activity"
        ? Date.parse(right.last_activity_at) - Date.parse(left.last_activity_at)
        : Date.parse(right.created_at) - Date.parse(left.created_at),
    );
  const rowProps = (session: Session): RowProps => ({
    session,
    project: projects.get(session.project_id)?.name ?? "…",
    unread: isUnread(session, seen),
    now,
    busy: busy === session.id,
    onArchive,
  });

  return (
    <main className="wide">
      <ConfirmDialog request={confirming} onClose={() => setConfirming(null)} />
      <header className="screen-header">
        <h1>Sessions</h1>
        <Link href="/sessions/new" className="button primary">
          New session
        </Link>
      </header>
      <form
        className="toolbar"
        aria-label="Find sessions"
        onSubmit={(event) => event.preventDefault()}
      >
        <label className="grow">
          <span className="visually-hidden">Search title, branch or project</span>
          <input
            type="search"
            value={query}
            onChange={(event) => setQuery(event.target.value)}
            placeholder="Search title, branch or project"
            aria-label="Search title, branch or project"
          />
        </label>
        <label className="inline-choice">
          Sort
          <select value={sort} onChange={(event) => setSort(event.target.value as Sort)}>
            <option value="activity">Last activity</option>
            <option value="created">Created</option>
          </select>
        </label>
        <fieldset className="segmented">
          <legend>View</legend>
          {(["list", "board"] as const).map((option) => (
            <label key={option}>
              <input
                type="radio"
                name="sessions-view"
                checked={view === option}
                onChange={() => chooseView(option)}
              />
              {option === "list" ? "List" : "Board"}
            </label>
          ))}
        </fieldset>
        <label className="checkbox">
          <input
            type="checkbox"
            checked={showArchived}
            onChange={(event) => setShowArchived(event.target.checked)}
          />
          Show archived
        </label>
      </form>
      <LoadState error={error} loading={listed === null && error === null} />
      {listed !== null && rows.length === 0 && (
        <p className="muted">
          {query.trim() === ""
            ? "No sessions yet: start one from a prompt, or from a project."
            : "No session matches."}
        </p>
      )}
      {rows.length > 0 && view === "list" && (
        <div className="table-scroll">
          <table className="dense-table sessions-table" aria-label="Sessions">
            <thead>
              <tr>
                <th scope="col">Session</th>
                <th scope="col">Status</th>
                <th scope="col">Project</th>
                <th scope="col">Agent</th>
                <th scope="col">Changes</th>
                <th scope="col">Last activity</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((session) => (
                <SessionRow key={session.id} {...rowProps(session)} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {rows.length > 0 && view === "board" && (
        <div className="board">
          {BOARD.map((activity) => {
            const column = rows.filter((session) => session.activity === activity);
            return (
              <section
                key={activity}
                className="board-column"
                data-activity={activity}
                aria-labelledby={`board-${activity}`}
              >
                <h2 id={`board-${activity}`}>
                  {ACTIVITY_LABEL[activity]} <span className="tab-count">{column.length}</span>
                </h2>
                {column.length === 0 ? (
                  <p className="muted">None.</p>
                ) : (
                  <ul aria-label={`${ACTIVITY_LABEL[activity]} sessions`}>
                    {column.map((session) => (
                      <SessionCard key={session.id} {...rowProps(session)} />
                    ))}
                  </ul>
                )}
              </section>
            );
          })}
        </div>
      )}
    </main>
  );
}
