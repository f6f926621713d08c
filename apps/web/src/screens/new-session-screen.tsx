import type { Project, ProviderEntry } from "@deckhand/wire";
import { useEffect, useState } from "react";
import { Link, useLocation } from "wouter";
import { messageOf, server } from "../api.ts";

/**
 * A new session in a project: its title, branch and base branch, and the agent to talk to first
 * (only providers that are enabled and ready) with the model and mode its turns use, chosen
 * from that agent's entry in the providers snapshot (its own defaults unless chosen).
 */
export function NewSessionScreen({ projectId }: { projectId: string }) {
  const [, navigate] = useLocation();
  const [project, setProject] = useState<Project | null>(null);
  const [providers, setProviders] = useState<ProviderEntry[]>([]);
  const [agent, setAgent] = useState("");
  const [title, setTitle] = useState("");
  const [branch, setBranch] = useState("");
  const [baseBranch, setBaseBranch] = useState("");
  const [model, setModel] = useState("");
  const [mode, setMode] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    (async () => {
      const [loaded, snapshot] = await Promise.all([
        server.getProject({ params: { project_id: projectId } }),
        server.getProvidersSnapshot({ query: { project_id: projectId } }),
      ]);
      const ready = snapshot.providers.filter(
        (provider) => provider.enabled && provider.status === "ready",
      );
      setProject(loaded);
      setBaseBranch(loaded.default_branch);
      setProviders(ready);
      setAgent(ready[0]?.id ?? "");
    })().catch((failure: unknown) => setError(messageOf(failure)));
  }, [projectId]);

  const chosen = providers.find((provider) => provider.id === agent);
  const optionName = (options: ProviderEntry["models"], id: string | null) =>
    options.find((option) => option.id === id)?.name ?? id ?? "none";
  const chooseAgent = (id: string) => {
    setAgent(id);
    // Models and modes are the agent's own: another agent's choice means nothing to it.
    setModel("");
    setMode("");
  };

  const create = async (event: React.FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const session = await server.createSession({
        params: { project_id: projectId },
        body: {
          ...(title.trim() ? { title: title.trim() } : {}),
          ...(branch.trim() ? { branch: branch.trim() } : {}),
          ...(baseBranch.trim() && baseBranch.trim() !== project?.default_branch
            ? { base_branch: baseBranch.trim() }
            : {}),
          ...(agent ? { agent } : {}),
          ...(model ? { model } : {}),
          ...(mode ? { mode } : {}),
        },
      });
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
          Base branch
          <input
            value={baseBranch}
            onChange={(event) => setBaseBranch(event.target.value)}
            aria-describedby="base-branch-hint"
          />
        </label>
        <p className="muted" id="base-branch-hint">
          The branch (or commit) the session starts from; the project's default is{" "}
          <code>{project?.default_branch ?? "…"}</code>.
        </p>
        <label>
          Agent
          <select value={agent} onChange={(event) => chooseAgent(event.target.value)} required>
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
          <>
            <label>
              Model
              <select
                value={model}
                onChange={(event) => setModel(event.target.value)}
                disabled={chosen.models.length === 0}
              >
                <option value="">
                  Default ({optionName(chosen.models, chosen.current_model)})
                </option>
                {chosen.models.map((option) => (
                  <option key={option.id} value={option.id}>
                    {option.name}
                  </option>
                ))}
              </select>
            </label>
            <label>
              Mode
              <select
                value={mode}
                onChange={(event) => setMode(event.target.value)}
                disabled={chosen.modes.length === 0}
              >
                <option value="">Default ({optionName(chosen.modes, chosen.current_mode)})</option>
                {chosen.modes.map((option) => (
                  <option key={option.id} value={option.id}>
                    {option.name}
                  </option>
                ))}
              </select>
            </label>
          </>
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
