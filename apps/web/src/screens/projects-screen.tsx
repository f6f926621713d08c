import type { Project, Session } from "@deckhand/wire";
import { useCallback, useEffect, useState } from "react";
import { Link } from "wouter";
import { messageOf, server } from "../api.ts";
import { LoadState } from "../components/load-state.tsx";
import { useReloadOnReconnect } from "../connection.ts";

interface ProjectWithSessions {
  project: Project;
  sessions: Session[];
}

/** Projects, each with its sessions and their status, and a form to add a local repository. */
export function ProjectsScreen() {
  const [projects, setProjects] = useState<ProjectWithSessions[] | null>(null);
  const [path, setPath] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const load = useCallback(async () => {
    const list = await server.listProjects();
    const withSessions = await Promise.all(
      list.projects.map(async (project) => ({
        project,
        sessions: (await server.listSessions({ params: { project_id: project.id } })).sessions,
      })),
    );
    setProjects(withSessions);
    setError(null);
  }, []);

  useEffect(() => {
    load().catch((failure: unknown) => setError(messageOf(failure)));
  }, [load]);

  useReloadOnReconnect(() => {
    load().catch((failure: unknown) => setError(messageOf(failure)));
  });

  const create = async (event: React.FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await server.createProject({ body: { repository_path: path.trim() } });
      setPath("");
      await load();
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main>
      <header className="screen-header">
        <h1>Projects</h1>
      </header>
      <form className="inline-form card" onSubmit={create} aria-label="Add a project">
        <label className="grow">
          Repository path on the server
          <input
            value={path}
            onChange={(event) => setPath(event.target.value)}
            placeholder="/home/me/code/my-repo"
            required
          />
        </label>
        <button type="submit" className="primary" disabled={busy || !path.trim()}>
          Add project
        </button>
      </form>
      <LoadState error={error} loading={projects === null} />
      {projects?.length === 0 && <p className="muted">No projects yet: add a git repository.</p>}
      {projects?.map(({ project, sessions }) => (
        <section key={project.id} className="card project" aria-labelledby={`p-${project.id}`}>
          <header className="card-header">
            <h2 id={`p-${project.id}`}>{project.name}</h2>
            <Link className="button primary" href={`/projects/${project.id}/new-session`}>
              New session in {project.name}
            </Link>
          </header>
          <p className="muted path">
            {project.repository_path ?? project.repository_url} · base{" "}
            <code>{project.default_branch}</code>
          </p>
          {sessions.length === 0 ? (
            <p className="muted">No sessions.</p>
          ) : (
            <ul className="session-list">
              {sessions.map((session) => (
                <li key={session.id}>
                  <Link href={`/sessions/${session.id}`}>{session.title || session.branch}</Link>{" "}
                  <span className="badge" data-status={session.status}>
                    {session.status}
                  </span>{" "}
                  <code className="muted">{session.branch}</code>
                </li>
              ))}
            </ul>
          )}
        </section>
      ))}
    </main>
  );
}
