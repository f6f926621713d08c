import {
  type Project,
  type ProviderEntry,
  type ProvidersSnapshot,
  ServerPath,
  type Session,
  serverPath,
} from "@deckhand/wire";
import { useEffect, useState } from "react";
import { Link, useLocation } from "wouter";
import { api, messageOf } from "../api.ts";

/**
 * A new session in a project: its title and branch, and the agent to talk to first (only
 * providers that are enabled and ready). The session starts from the project's base branch;
 * model and mode are the agent's current ones from the providers snapshot.
 */
export function NewSessionScreen({ projectId }: { projectId: string }) {
  const [, navigate] = useLocation();
  const [project, setProject] = useState<Project | null>(null);
  const [providers, setProviders] = useState<ProviderEntry[]>([]);
  const [agent, setAgent] = useState("");
  const [title, setTitle] = useState("");
  const [branch, setBranch] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    (async () => {
      const [loaded, snapshot] = await Promise.all([
        api<Project>("GET", serverPath(ServerPath.project, { project_id: projectId })),
        api<ProvidersSnapshot>(
          "GET",
          `${ServerPath.providersSnapshot}?project_id=${encodeURIComponent(projectId)}`,
        ),
      ]);
      const ready = snapshot.providers.filter(
        (provider) => provider.enabled && provider.status === "ready",
      );
      setProject(loaded);
      setProviders(ready);
      setAgent(ready[0]?.id ?? "");
    })().catch((failure: unknown) => setError(messageOf(failure)));
  }, [projectId]);

  const chosen = providers.find((provider) => provider.id === agent);
  const optionName = (options: ProviderEntry["models"], id: string | null) =>
    options.find((option) => option.id === id)?.name ?? id ?? "the agent's default";

  const create = async (event: React.FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const session = await api<Session>(
        "POST",
        serverPath(ServerPath.projectSessions, { project_id: projectId }),
        {
          ...(title.trim() ? { title: title.trim() } : {}),
          ...(branch.trim() ? { branch: branch.trim() } : {}),
        },
      );
      navigate(`/sessions/${session.id}?agent=${encodeURIComponent(agent)}`);
    } catch (failure) {
      setError(messageOf(failure));
      setBusy(false);
    }
  };

  return (
    <main>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link href="/">Projects</Link>
        <span aria-hidden="true"> / </span>
        <span>{project?.name ?? "…"}</span>
      </nav>
      <header className="screen-header">
        <h1>New session{project ? ` in ${project.name}` : ""}</h1>
      </header>
      <form className="card stacked-form" onSubmit={create} aria-label="New session">
        <p className="muted">
          Starts from base branch <code>{project?.default_branch ?? "…"}</code>
        </p>
        <label>
          Title
          <input value={title} onChange={(event) => setTitle(event.target.value)} />
        </label>
        <label>
          New branch (optional)
          <input
            value={branch}
            onChange={(event) => setBranch(event.target.value)}
            placeholder="deckhand/…"
          />
        </label>
        <label>
          Agent
          <select value={agent} onChange={(event) => setAgent(event.target.value)} required>
            {providers.map((provider) => (
              <option key={provider.id} value={provider.id}>
                {provider.label}
              </option>
            ))}
          </select>
        </label>
        {providers.length === 0 && !error && (
          <p className="muted">No agent is ready: see `deckhand providers`.</p>
        )}
        {chosen && (
          <dl className="facts">
            <dt>Model</dt>
            <dd>{optionName(chosen.models, chosen.current_model)}</dd>
            <dt>Mode</dt>
            <dd>{optionName(chosen.modes, chosen.current_mode)}</dd>
          </dl>
        )}
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" className="primary" disabled={busy || !agent}>
          Start session
        </button>
      </form>
    </main>
  );
}
