import type { Project, ProviderEntry } from "@deckhand/wire";
import { type FormEvent, useEffect, useId, useState } from "react";
import { Link, useLocation } from "wouter";
import { messageOf, server } from "../api.ts";
import { useDocumentTitle } from "../components/document-title.ts";

/** A session's title from its first message: the first line, cut at a readable length. */
export function titleFromPrompt(prompt: string): string {
  const line = prompt.trim().split("\n")[0]?.trim() ?? "";
  return line.length > 60 ? `${line.slice(0, 59).trimEnd()}…` : line;
}

/**
 * A session started from what it is for, as in Conductor: the first message, the project, the
 * branch to start from (picked from the repository's branches) and the agent; the session opens
 * with that message already sent.
 */
export function PromptSessionScreen() {
  const [, navigate] = useLocation();
  const id = useId();
  const [projects, setProjects] = useState<Project[] | null>(null);
  const [projectId, setProjectId] = useState("");
  const [branches, setBranches] = useState<string[]>([]);
  const [baseBranch, setBaseBranch] = useState("");
  const [providers, setProviders] = useState<ProviderEntry[]>([]);
  const [agent, setAgent] = useState("");
  const [prompt, setPrompt] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useDocumentTitle("New session");

  useEffect(() => {
    server
      .listProjects()
      .then((list) => {
        setProjects(list.projects);
        setProjectId((current) => current || (list.projects[0]?.id ?? ""));
      })
      .catch((failure: unknown) => setError(messageOf(failure)));
  }, []);

  // The project's branches and the agents ready for it, each time another project is picked.
  useEffect(() => {
    if (!projectId) return;
    let live = true;
    Promise.all([
      server.listProjectBranches({ params: { project_id: projectId } }),
      server.getProvidersSnapshot({ query: { project_id: projectId } }),
    ])
      .then(([branchList, snapshot]) => {
        if (!live) return;
        setBranches(branchList.branches);
        setBaseBranch(branchList.default_branch);
        const ready = snapshot.providers.filter(
          (provider) => provider.enabled && provider.status === "ready",
        );
        setProviders(ready);
        setAgent((current) =>
          ready.some((provider) => provider.id === current) ? current : (ready[0]?.id ?? ""),
        );
      })
      .catch((failure: unknown) => live && setError(messageOf(failure)));
    return () => {
      live = false;
    };
  }, [projectId]);

  const start = async (event?: FormEvent) => {
    event?.preventDefault();
    if (!projectId || !agent || prompt.trim() === "") return;
    setBusy(true);
    setError(null);
    try {
      const project = projects?.find((candidate) => candidate.id === projectId);
      const session = await server.createSession({
        params: { project_id: projectId },
        body: {
          title: titleFromPrompt(prompt),
          agent,
          ...(baseBranch && baseBranch !== project?.default_branch
            ? { base_branch: baseBranch }
            : {}),
        },
      });
      const chat = await server.createChat({ params: { session_id: session.id }, body: {} });
      await server.createMessage({ params: { chat_id: chat.id }, body: { agent, text: prompt } });
      navigate(`/sessions/${session.id}`);
    } catch (failure) {
      setError(messageOf(failure));
      setBusy(false);
    }
  };

  if (projects !== null && projects.length === 0) {
    return (
      <main>
        <h1>New session</h1>
        <p className="card">
          A session works in a project's repository: <Link href="/">add a project</Link> first.
        </p>
      </main>
    );
  }

  return (
    <main>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link href="/sessions">Sessions</Link> / New
      </nav>
      <header className="screen-header">
        <h1>New session</h1>
      </header>
      <form className="card prompt-form" aria-label="New session" onSubmit={start}>
        <label htmlFor={`${id}-prompt`}>What should the agent do?</label>
        <textarea
          id={`${id}-prompt`}
          rows={6}
          value={prompt}
          placeholder="Fix the flaky login test, then explain what was wrong."
          onChange={(event) => setPrompt(event.target.value)}
          onKeyDown={(event) => {
            if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) void start();
          }}
          aria-describedby={`${id}-keys`}
        />
        <p id={`${id}-keys`} className="muted">
          Ctrl+Enter (⌘+Enter) starts the session with this as its first message.
        </p>
        <div className="prompt-choices">
          <div className="field">
            <label htmlFor={`${id}-project`}>Project</label>
            <select
              id={`${id}-project`}
              value={projectId}
              onChange={(event) => setProjectId(event.target.value)}
            >
              {projects?.map((project) => (
                <option key={project.id} value={project.id}>
                  {project.name}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={`${id}-branch`}>Start from branch</label>
            <select
              id={`${id}-branch`}
              value={baseBranch}
              onChange={(event) => setBaseBranch(event.target.value)}
            >
              {branches.map((branch) => (
                <option key={branch} value={branch}>
                  {branch}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={`${id}-agent`}>Agent</label>
            <select
              id={`${id}-agent`}
              value={agent}
              onChange={(event) => setAgent(event.target.value)}
            >
              {providers.map((provider) => (
                <option key={provider.id} value={provider.id}>
                  {provider.label}
                </option>
              ))}
            </select>
          </div>
        </div>
        {providers.length === 0 && projectId && (
          <p className="muted">No agent is ready for this project: see Settings → Providers.</p>
        )}
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <div className="actions">
          <button
            type="submit"
            className="primary"
            disabled={busy || !agent || !projectId || prompt.trim() === ""}
          >
            {busy ? "Starting…" : "Start session"}
          </button>
        </div>
      </form>
    </main>
  );
}
