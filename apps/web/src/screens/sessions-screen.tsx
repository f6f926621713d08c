import {
  type Project,
  type ProjectList,
  ServerPath,
  type Session,
  type SessionActivity,
  type SessionList,
  serverPath,
} from "@deckhand/wire";
import { useCallback, useEffect, useState } from "react";
import { Link } from "wouter";
import { api, messageOf } from "../api.ts";
import { LoadState } from "../components/load-state.tsx";
import { useReloadOnReconnect } from "../connection.ts";
import { useSessionActivity } from "../sessions/session-activity-watcher.tsx";
import { isUnread } from "../sessions/session-preferences.ts";

const ACTIVITY_LABEL: Record<SessionActivity, string> = {
  running: "Running",
  needs_input: "Needs input",
  failed: "Failed",
  idle: "Idle",
};

/** Waits this long after the last keystroke before searching. */
const SEARCH_DELAY_MS = 250;

/**
 * Every project's sessions, newest first, with what their agents are doing (kept live by the
 * activity stream), which have news since last opened, a search (on the server: title, branch
 * and project name) and archiving.
 */
export function SessionsScreen() {
  const { sessions: live, seen } = useSessionActivity();
  const [query, setQuery] = useState("");
  const [showArchived, setShowArchived] = useState(false);
  const [listed, setListed] = useState<Session[] | null>(null);
  const [projects, setProjects] = useState<ReadonlyMap<string, Project>>(new Map());
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);

  const load = useCallback(async (text: string, archived: boolean) => {
    const parameters = new URLSearchParams({ archived: archived ? "any" : "false" });
    if (text.trim() !== "") parameters.set("q", text.trim());
    const list = await api<SessionList>("GET", `${ServerPath.sessions}?${parameters}`);
    setListed(list.sessions);
    setError(null);
  }, []);

  useEffect(() => {
    api<ProjectList>("GET", ServerPath.projects)
      .then((list) => setProjects(new Map(list.projects.map((project) => [project.id, project]))))
      .catch((failure: unknown) => setError(messageOf(failure)));
  }, []);

  useEffect(() => {
    const timer = setTimeout(() => {
      load(query, showArchived).catch((failure: unknown) => setError(messageOf(failure)));
    }, SEARCH_DELAY_MS);
    return () => clearTimeout(timer);
  }, [load, query, showArchived]);

  useReloadOnReconnect(() => {
    api<ProjectList>("GET", ServerPath.projects)
      .then((list) => setProjects(new Map(list.projects.map((project) => [project.id, project]))))
      .catch((failure: unknown) => setError(messageOf(failure)));
    load(query, showArchived).catch((failure: unknown) => setError(messageOf(failure)));
  });

  const setArchived = async (session: Session, archived: boolean) => {
    setBusy(session.id);
    setError(null);
    try {
      await api<Session>("PATCH", serverPath(ServerPath.session, { session_id: session.id }), {
        archived,
      });
      await load(query, showArchived);
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(null);
    }
  };

  // What the activity stream pushed is newer than the search's answer.
  const rows = (listed ?? [])
    .map((session) => live.get(session.id) ?? session)
    .filter((session) => showArchived || session.archived_at === null);

  return (
    <main>
      <header className="screen-header">
        <h1>Sessions</h1>
      </header>
      <form
        className="inline-form card"
        aria-label="Find sessions"
        onSubmit={(event) => event.preventDefault()}
      >
        <label className="grow">
          Search title, branch or project
          <input
            type="search"
            value={query}
            onChange={(event) => setQuery(event.target.value)}
            placeholder="fix login"
          />
        </label>
        <label className="checkbox">
          <input
            type="checkbox"
            checked={showArchived}
            onChange={(event) => setShowArchived(event.target.checked)}
          />
          Show archived
        </label>
      </form>
      <LoadState error={error} loading={listed === null} />
      {listed !== null && rows.length === 0 && (
        <p className="muted">
          {query.trim() === ""
            ? "No sessions yet: open one from a project."
            : "No session matches."}
        </p>
      )}
      {rows.length > 0 && (
        <ul className="session-rows" aria-label="Sessions">
          {rows.map((session) => {
            const title = session.title || session.branch;
            const unread = isUnread(session, seen);
            return (
              <li key={session.id} className="card session-row" data-unread={unread || undefined}>
                <div className="session-row-main">
                  <Link href={`/sessions/${session.id}`} className="session-row-title">
                    {title}
                  </Link>
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
                </div>
                <p className="muted session-row-meta">
                  {projects.get(session.project_id)?.name ?? "…"} · <code>{session.branch}</code>
                </p>
                <div className="actions">
                  <button
                    type="button"
                    disabled={busy === session.id}
                    aria-label={`${session.archived_at === null ? "Archive" : "Unarchive"} ${title}`}
                    onClick={() => void setArchived(session, session.archived_at === null)}
                  >
                    {session.archived_at === null ? "Archive" : "Unarchive"}
                  </button>
                </div>
              </li>
            );
          })}
        </ul>
      )}
    </main>
  );
}
