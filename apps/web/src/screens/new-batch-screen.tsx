import type { BatchSpecDiagnostic } from "@deckhand/batch-spec";
import type {
  BatchRunAction,
  BatchRunOptions,
  BatchRuntimeChoice,
  CreateBatchRunRequest,
  ResolveBatchWorkspacesRequest,
  ResolvedBatchWorkspaces,
} from "@deckhand/wire";
import { lazy, Suspense, useMemo, useState } from "react";
import { Link, useLocation } from "wouter";
import { messageOf, server } from "../api.ts";
import { exampleSpecs } from "../batches/example-specs.ts";

// CodeMirror, the JSON Schema support and the spec parser load only on this screen.
const SpecEditor = lazy(() => import("../batches/spec-editor.tsx"));

const RUNTIMES: readonly { value: BatchRuntimeChoice; label: string }[] = [
  { value: "auto", label: "Auto: a container when one works, else on the host" },
  { value: "local", label: "Local: every step on the server's host with sh" },
  { value: "container", label: "Container: every step in its image" },
  { value: "kubernetes", label: "Kubernetes: every step as a Job in the configured cluster" },
];

interface Preview {
  /** The spec and runtime the preview was resolved for: it is stale once either changes. */
  source: string;
  runtime: BatchRuntimeChoice;
  result: ResolvedBatchWorkspaces;
}

function Diagnostics({ diagnostics }: { diagnostics: BatchSpecDiagnostic[] }) {
  if (diagnostics.length === 0) return null;
  return (
    <section className="diagnostics" aria-label="Problems in the spec">
      <h3>
        {diagnostics.length} {diagnostics.length === 1 ? "problem" : "problems"}
      </h3>
      <ul>
        {diagnostics.map((diagnostic) => (
          <li
            key={`${diagnostic.line}:${diagnostic.column}:${diagnostic.path}:${diagnostic.message}`}
          >
            <span className="location">
              {diagnostic.line}:{diagnostic.column}
            </span>{" "}
            {diagnostic.path && <code>{diagnostic.path}</code>} {diagnostic.message}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** A new batch change: the spec, its options, where it would run, then Preview or Apply. */
export function NewBatchScreen() {
  const [, navigate] = useLocation();
  const [source, setSource] = useState(exampleSpecs[0]!.source);
  const [runtime, setRuntime] = useState<BatchRuntimeChoice>("auto");
  const [skipErrors, setSkipErrors] = useState(false);
  const [failFast, setFailFast] = useState(false);
  const [parallelism, setParallelism] = useState("");
  const [diagnostics, setDiagnostics] = useState<BatchSpecDiagnostic[]>([]);
  const [checkedSource, setCheckedSource] = useState<string | null>(null);
  const [preview, setPreview] = useState<Preview | null>(null);
  const [excluded, setExcluded] = useState<ReadonlySet<string>>(new Set());
  const [resolving, setResolving] = useState(false);
  const [submitting, setSubmitting] = useState<BatchRunAction | null>(null);
  const [error, setError] = useState<string | null>(null);

  const stale = preview !== null && (preview.source !== source || preview.runtime !== runtime);
  const specValid = checkedSource === source && diagnostics.length === 0;
  const repositories = useMemo(
    () => [...new Set(preview?.result.workspaces.map((workspace) => workspace.repository) ?? [])],
    [preview],
  );

  const options = (withExclusions: boolean): BatchRunOptions => ({
    runtime,
    ...(skipErrors ? { skip_errors: true } : {}),
    ...(failFast ? { fail_fast: true } : {}),
    ...(/^\d+$/.test(parallelism) && Number(parallelism) > 0
      ? { parallelism: Number(parallelism) }
      : {}),
    ...(withExclusions && excluded.size > 0 ? { exclude_repositories: [...excluded] } : {}),
  });

  const resolve = async () => {
    setResolving(true);
    setError(null);
    try {
      const request: ResolveBatchWorkspacesRequest = { source, options: options(false) };
      const result = await server.resolveBatchWorkspaces({ body: request });
      setPreview({ source, runtime, result });
      // Exclusions of repositories no longer reached are dropped.
      const reached = new Set(result.workspaces.map((workspace) => workspace.repository));
      setExcluded((previous) => new Set([...previous].filter((name) => reached.has(name))));
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setResolving(false);
    }
  };

  const submit = async (action: BatchRunAction) => {
    setSubmitting(action);
    setError(null);
    try {
      const request: CreateBatchRunRequest = { source, action, options: options(true) };
      const run = await server.createBatchRun({ body: request });
      navigate(`/batches/runs/${run.id}`);
    } catch (failure) {
      setError(messageOf(failure));
      setSubmitting(null);
    }
  };

  const toggle = (repository: string, include: boolean) =>
    setExcluded((previous) => {
      const next = new Set(previous);
      if (include) next.delete(repository);
      else next.add(repository);
      return next;
    });

  const included = preview
    ? preview.result.workspaces.filter((workspace) => !excluded.has(workspace.repository))
    : [];

  return (
    <main>
      <nav className="breadcrumb" aria-label="Breadcrumb">
        <Link href="/batches">Batch changes</Link> / New
      </nav>
      <header className="screen-header">
        <h1>New batch change</h1>
      </header>
      <div className="batch-new-layout">
        <section className="card stacked-form" aria-label="Spec">
          <div className="inline-form">
            <label className="grow">
              Start from an example
              <select
                defaultValue=""
                onChange={(event) => {
                  const example = exampleSpecs.find((spec) => spec.id === event.target.value);
                  if (example) setSource(example.source);
                }}
              >
                <option value="" disabled>
                  Pick an example…
                </option>
                {exampleSpecs.map((spec) => (
                  <option key={spec.id} value={spec.id}>
                    {spec.label}
                  </option>
                ))}
              </select>
            </label>
            <label className="grow">
              Runtime
              <select
                value={runtime}
                onChange={(event) => setRuntime(event.target.value as BatchRuntimeChoice)}
              >
                {RUNTIMES.map((choice) => (
                  <option key={choice.value} value={choice.value}>
                    {choice.label}
                  </option>
                ))}
              </select>
            </label>
          </div>
          <fieldset className="run-options">
            <legend>When a workspace fails</legend>
            <label className="checkbox">
              <input
                type="checkbox"
                checked={skipErrors}
                onChange={(event) => setSkipErrors(event.target.checked)}
              />
              Skip errors: the run completes with the others' changesets (skip_errors)
            </label>
            <label className="checkbox">
              <input
                type="checkbox"
                checked={failFast}
                onChange={(event) => setFailFast(event.target.checked)}
              />
              Fail fast: the first failure cancels the workspaces not yet finished (fail_fast)
            </label>
            <label className="parallelism">
              Parallelism (workspaces at once)
              <input
                type="number"
                min={1}
                max={1024}
                inputMode="numeric"
                value={parallelism}
                placeholder="server default"
                onChange={(event) => setParallelism(event.target.value)}
              />
            </label>
          </fieldset>
          <span className="field-label" aria-hidden="true">
            Batch spec (YAML or JSON)
          </span>
          <Suspense
            fallback={
              <textarea
                aria-label="Batch spec"
                className="spec-fallback"
                value={source}
                rows={16}
                onChange={(event) => setSource(event.target.value)}
              />
            }
          >
            <SpecEditor
              value={source}
              onChange={setSource}
              onDiagnostics={(found, checked) => {
                setDiagnostics(found);
                setCheckedSource(checked);
              }}
            />
          </Suspense>
          <p className="muted" aria-live="polite">
            {checkedSource !== source
              ? "Checking…"
              : diagnostics.length === 0
                ? "The spec is valid."
                : "Fix the problems below before running it."}
          </p>
          <Diagnostics diagnostics={checkedSource === source ? diagnostics : []} />
        </section>

        <section className="card" aria-labelledby="workspaces-heading">
          <div className="card-header">
            <h2 id="workspaces-heading">Workspaces</h2>
            <span role="status">
              {stale && (
                <span className="badge" data-status="pending">
                  Stale: the spec changed
                </span>
              )}
            </span>
          </div>
          <p className="muted">
            Where the spec would run, before anything runs. Untick a repository to leave it out.
          </p>
          <button type="button" onClick={resolve} disabled={resolving || !specValid}>
            {resolving ? "Resolving…" : preview ? "Refresh workspaces" : "Preview workspaces"}
          </button>
          {preview && (
            <>
              {preview.result.warnings.map((warning) => (
                <p key={warning} className="warning">
                  {warning}
                </p>
              ))}
              {preview.result.workspaces.length === 0 ? (
                <p>No repository matches this spec.</p>
              ) : (
                <ul className="workspace-preview" aria-label="Resolved workspaces">
                  {repositories.map((repository) => (
                    <li key={repository}>
                      <label className="checkbox">
                        <input
                          type="checkbox"
                          checked={!excluded.has(repository)}
                          onChange={(event) => toggle(repository, event.target.checked)}
                        />
                        Include {repository}
                      </label>
                      <ul>
                        {preview.result.workspaces
                          .filter((workspace) => workspace.repository === repository)
                          .map((workspace) => (
                            <li key={`${workspace.branch}/${workspace.path}`} className="muted">
                              {workspace.branch}
                              {workspace.path ? ` · ${workspace.path}` : ""} ·{" "}
                              <code>{workspace.revision.slice(0, 10)}</code> · steps{" "}
                              {workspace.step_indexes.join(", ") || "none"}
                            </li>
                          ))}
                      </ul>
                    </li>
                  ))}
                </ul>
              )}
              <p>
                {included.length} of {preview.result.workspaces.length} workspaces will run.
              </p>
            </>
          )}
          <div className="actions">
            <button
              type="button"
              className="primary"
              onClick={() => submit("preview")}
              disabled={submitting !== null || !specValid}
            >
              {submitting === "preview" ? "Starting…" : "Preview"}
            </button>
            <button
              type="button"
              onClick={() => submit("apply")}
              disabled={submitting !== null || !specValid}
            >
              {submitting === "apply" ? "Starting…" : "Apply"}
            </button>
          </div>
          <p className="muted">
            Preview runs the steps and stops at changesets; Apply also writes them as branches.
          </p>
          {error && (
            <p className="error" role="alert">
              {error}
            </p>
          )}
        </section>
      </div>
    </main>
  );
}
