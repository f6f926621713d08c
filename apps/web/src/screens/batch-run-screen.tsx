import {
  type BatchRun,
  type BatchRunEvent,
  type BatchStepDetail,
  type BatchTakeoverResponse,
  type BatchWorkspace,
  type BatchWorkspaceStep,
  ServerPath,
  type StoredBatchChangeset,
  type StoredBatchRunEvent,
  serverPath,
} from "@deckhand/wire";
import { useCallback, useEffect, useRef, useState } from "react";
import { Link, useLocation } from "wouter";
import { type Answer, api, messageOf } from "../api.ts";
import { BatchRunStream } from "../batches/batch-run-stream.ts";
import { ChangesetCard } from "../batches/changeset-card.tsx";
import { StatsBar } from "../batches/stats-bar.tsx";
import { AgentTranscript, StepEnvironment } from "../batches/step-panels.tsx";
import { DiffView } from "../components/diff-view.tsx";
import { LoadState } from "../components/load-state.tsx";
import { useReloadOnReconnect } from "../connection.ts";
import type { StreamState } from "../session/session-stream.ts";

/** Workspaces are told apart in events by repository, branch and path. */
function workspaceKey(workspace: { repository: string; branch: string; path: string }): string {
  return `${workspace.repository}\u0000${workspace.branch}\u0000${workspace.path}`;
}

interface TimelineEntry {
  id: number;
  at: string;
  text: string;
}

/** One line of a workspace's timeline, or null for events shown elsewhere (output). */
function describe(event: BatchRunEvent): string | null {
  switch (event.type) {
    case "workspace_started":
      return "started";
    case "step_started":
      return `step ${event.step_index} started (${event.runtime}${event.image ? `, ${event.image}` : ""})`;
    case "step_runtime_fallback":
      return `step ${event.step_index} runs on the host instead of ${event.image}: ${event.reason}`;
    case "step_finished":
      return `step ${event.step_index} ${event.outcome}${event.exit_code !== null ? ` (exit ${event.exit_code})` : ""} in ${formatDuration(event.duration_ms)}`;
    case "workspace_finished":
      return `finished: ${event.status}${event.error ? ` — ${event.error}` : ""}`;
    case "changeset":
      return `changeset for ${event.changeset.branch}: +${event.changeset.stats.insertions} −${event.changeset.stats.deletions} in ${event.changeset.stats.files} files`;
    case "changeset_applied":
      return `branch ${event.branch} ${event.operation} at ${event.commit.slice(0, 10)}${event.pushed ? ", pushed" : ""}`;
    case "changeset_apply_failed":
      return `applying ${event.branch} failed: ${event.error}`;
    default:
      return null;
  }
}

function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 100) / 10;
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes}m ${Math.round(seconds - minutes * 60)}s`;
}

function stepElapsed(step: BatchWorkspaceStep, now: number): number {
  if (step.outcome === "running" && step.started_at)
    return Math.max(0, now - Date.parse(step.started_at));
  return step.duration_ms;
}

type StepTab = "logs" | "outputs" | "diff" | "environment" | "transcript";

/** A step's logs, outputs and diff, loaded when opened and again as the step moves on. */
function StepDetail({
  workspaceId,
  step,
  liveLog,
}: {
  workspaceId: string;
  step: BatchWorkspaceStep;
  liveLog: { stdout: string; stderr: string } | undefined;
}) {
  const [tab, setTab] = useState<StepTab>("logs");
  const [detail, setDetail] = useState<BatchStepDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Loaded again when the step moves on (running → finished), for its final logs and diff.
  // biome-ignore lint/correctness/useExhaustiveDependencies: step.outcome is that trigger.
  useEffect(() => {
    let live = true;
    api<BatchStepDetail>(
      "GET",
      serverPath(ServerPath.batchWorkspaceStep, {
        workspace_id: workspaceId,
        step_index: String(step.step_index),
      }),
    )
      .then((loaded) => live && setDetail(loaded))
      .catch((failure: unknown) => live && setError(messageOf(failure)));
    return () => {
      live = false;
    };
  }, [workspaceId, step.step_index, step.outcome]);
  const tabs: { id: StepTab; label: string }[] = [
    ...(detail?.agent ? [{ id: "transcript" as const, label: "Transcript" }] : []),
    { id: "logs", label: "Logs" },
    { id: "outputs", label: "Outputs" },
    { id: "diff", label: "Diff" },
    { id: "environment", label: "Environment" },
  ];
  const prefix = `step-${workspaceId}-${step.step_index}`;
  const stdout = step.outcome === "running" && liveLog ? liveLog.stdout : (detail?.stdout ?? "");
  const stderr = step.outcome === "running" && liveLog ? liveLog.stderr : (detail?.stderr ?? "");
  return (
    <div className="step-detail">
      {detail?.command != null && (
        <details className="step-command">
          <summary>Command</summary>
          <pre className="output">{detail.command}</pre>
        </details>
      )}
      <div role="tablist" aria-label={`Step ${step.step_index}`} className="tabs">
        {tabs.map((entry) => (
          <button
            key={entry.id}
            type="button"
            role="tab"
            id={`${prefix}-${entry.id}`}
            aria-selected={tab === entry.id}
            aria-controls={`${prefix}-panel`}
            onClick={() => setTab(entry.id)}
          >
            {entry.label}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`${prefix}-panel`} aria-labelledby={`${prefix}-${tab}`}>
        {error && <p className="error">{error}</p>}
        {tab === "transcript" && detail?.agent && (
          <AgentTranscript agent={detail.agent} jobId={detail.job_id} />
        )}
        {tab === "environment" && <StepEnvironment env={detail?.env ?? null} />}
        {tab === "logs" && (
          <>
            <h4>stdout</h4>
            <pre className="output">{stdout || "(empty)"}</pre>
            <h4>stderr</h4>
            <pre className="output">{stderr || "(empty)"}</pre>
          </>
        )}
        {tab === "outputs" && (
          <pre className="output">
            {detail && Object.keys(detail.outputs).length > 0
              ? JSON.stringify(detail.outputs, null, 2)
              : "(no outputs)"}
          </pre>
        )}
        {tab === "diff" &&
          (detail?.diff ? <DiffView diff={detail.diff} /> : <p className="muted">No changes.</p>)}
      </div>
    </div>
  );
}

function WorkspaceCard({
  workspace,
  timeline,
  liveLogs,
  now,
  onChanged,
}: {
  workspace: BatchWorkspace;
  timeline: TimelineEntry[];
  liveLogs: ReadonlyMap<string, { stdout: string; stderr: string }>;
  now: number;
  onChanged: () => void;
}) {
  const [, navigate] = useLocation();
  const [open, setOpen] = useState<number | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const finished = workspace.state !== "pending" && workspace.state !== "running";
  const title = `${workspace.repository}${workspace.path ? `/${workspace.path}` : ""}`;

  const act = async (what: "retry" | "takeover") => {
    setBusy(true);
    setError(null);
    try {
      if (what === "retry") {
        await api<BatchWorkspace>(
          "POST",
          serverPath(ServerPath.batchWorkspaceRetry, { workspace_id: workspace.id }),
        );
        onChanged();
      } else {
        const answer = await api<BatchTakeoverResponse>(
          "POST",
          serverPath(ServerPath.batchWorkspaceTakeover, { workspace_id: workspace.id }),
        );
        navigate(`/sessions/${answer.session_id}`);
      }
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(false);
    }
  };

  return (
    <li className="card workspace-card" aria-label={`Workspace ${title}`}>
      <div className="card-header">
        <h3>{title}</h3>
        <span className="badge" data-status={workspace.state}>
          {workspace.state}
        </span>
      </div>
      <p className="muted">
        {workspace.branch} · <code>{workspace.revision.slice(0, 10)}</code>
        {workspace.attempts > 1 ? ` · attempt ${workspace.attempts}` : ""}
        {workspace.executor ? ` · on ${workspace.executor}` : ""}
      </p>
      {workspace.error && <pre className="output error-output">{workspace.error}</pre>}
      {workspace.takeover_session_id && (
        <p>
          Taken over: <Link href={`/sessions/${workspace.takeover_session_id}`}>open session</Link>
        </p>
      )}
      <ol className="steps" aria-label={`Steps of ${title}`}>
        {workspace.steps.map((step) => (
          <li key={step.step_index}>
            <div className="step-row">
              <span>Step {step.step_index}</span>
              <span className="badge" data-status={step.outcome}>
                {step.outcome}
              </span>
              <span className="muted">
                {step.runtime ?? "—"}
                {step.image ? ` · ${step.image}` : ""}
                {step.exit_code !== null ? ` · exit ${step.exit_code}` : ""}
              </span>
              <span className="timer" title="Step time">
                {formatDuration(stepElapsed(step, now))}
              </span>
              <button
                type="button"
                aria-expanded={open === step.step_index}
                onClick={() => setOpen(open === step.step_index ? null : step.step_index)}
              >
                {open === step.step_index ? "Hide" : "Details"}
                <span className="visually-hidden">
                  {" "}
                  of step {step.step_index} in {title}
                </span>
              </button>
            </div>
            {open === step.step_index && (
              <StepDetail
                workspaceId={workspace.id}
                step={step}
                liveLog={liveLogs.get(`${workspaceKey(workspace)}#${step.step_index}`)}
              />
            )}
          </li>
        ))}
      </ol>
      {timeline.length > 0 && (
        <details className="timeline">
          <summary>Timeline ({timeline.length})</summary>
          <ol>
            {timeline.map((entry) => (
              <li key={entry.id}>
                <time dateTime={entry.at}>{new Date(entry.at).toLocaleTimeString()}</time>{" "}
                {entry.text}
              </li>
            ))}
          </ol>
        </details>
      )}
      <div className="actions">
        <button type="button" disabled={busy || !finished} onClick={() => act("retry")}>
          Retry<span className="visually-hidden"> {title}</span>
        </button>
        <button type="button" disabled={busy || !finished} onClick={() => act("takeover")}>
          Take over<span className="visually-hidden"> {title}</span>
        </button>
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </li>
  );
}

type RunTab = "workspaces" | "changesets";

/** A run: its stats, each workspace live from the run stream, and its changesets. */
export function BatchRunScreen({ runId }: { runId: string }) {
  const [run, setRun] = useState<BatchRun | null>(null);
  const [workspaces, setWorkspaces] = useState<BatchWorkspace[]>([]);
  const [changesets, setChangesets] = useState<StoredBatchChangeset[]>([]);
  const [dropped, setDropped] = useState<StoredBatchChangeset[]>([]);
  const [timelines, setTimelines] = useState<ReadonlyMap<string, TimelineEntry[]>>(new Map());
  const [liveLogs, setLiveLogs] = useState<ReadonlyMap<string, { stdout: string; stderr: string }>>(
    new Map(),
  );
  const [streamState, setStreamState] = useState<StreamState>("connecting");
  const [tab, setTab] = useState<RunTab>("workspaces");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [now, setNow] = useState(() => Date.now());
  const reloadTimer = useRef<ReturnType<typeof setTimeout> | null>(null);

  // Loads overlap when events come fast: only the latest one's answers are kept.
  const loadGeneration = useRef(0);
  const load = useCallback(async () => {
    const generation = ++loadGeneration.current;
    const [loadedRun, loadedWorkspaces, loadedChangesets] = await Promise.all([
      api<BatchRun>("GET", serverPath(ServerPath.batchRun, { batch_run_id: runId })),
      api<Answer<"listBatchRunWorkspaces">>(
        "GET",
        serverPath(ServerPath.batchRunWorkspaces, { batch_run_id: runId }),
      ),
      api<Answer<"listBatchRunChangesets">>(
        "GET",
        serverPath(ServerPath.batchRunChangesets, { batch_run_id: runId }),
      ),
    ]);
    if (generation !== loadGeneration.current) return;
    setRun(loadedRun);
    setWorkspaces(loadedWorkspaces.workspaces as BatchWorkspace[]);
    setChangesets(loadedChangesets.changesets as StoredBatchChangeset[]);
    setDropped(loadedChangesets.dropped as StoredBatchChangeset[]);
  }, [runId]);

  const reload = useCallback(() => {
    if (reloadTimer.current) return;
    reloadTimer.current = setTimeout(() => {
      reloadTimer.current = null;
      load().catch((failure: unknown) => setError(messageOf(failure)));
    }, 200);
  }, [load]);

  useEffect(() => {
    load().catch((failure: unknown) => setError(messageOf(failure)));
    const stream = new BatchRunStream(runId, {
      onState: setStreamState,
      onError: setError,
      onEvent: (stored: StoredBatchRunEvent) => {
        const event = stored.event;
        if (event.type === "step_output") {
          const key = `${workspaceKey(event.workspace)}#${event.step_index}`;
          setLiveLogs((previous) => {
            const next = new Map(previous);
            const log = next.get(key) ?? { stdout: "", stderr: "" };
            next.set(key, { ...log, [event.stream]: log[event.stream] + event.text });
            return next;
          });
          return;
        }
        if (event.type === "step_started") {
          // A retried workspace runs its steps again: its logs start over.
          const key = `${workspaceKey(event.workspace)}#${event.step_index}`;
          setLiveLogs((previous) => {
            if (!previous.has(key)) return previous;
            const next = new Map(previous);
            next.delete(key);
            return next;
          });
        }
        const text = describe(event);
        if (text !== null && "workspace" in event) {
          const key = workspaceKey(event.workspace);
          setTimelines((previous) => {
            const next = new Map(previous);
            next.set(key, [
              ...(next.get(key) ?? []),
              { id: stored.id, at: stored.created_at, text },
            ]);
            return next;
          });
        }
        reload();
      },
    });
    return () => {
      stream.close();
      if (reloadTimer.current) clearTimeout(reloadTimer.current);
      reloadTimer.current = null;
    };
  }, [runId, load, reload]);

  useReloadOnReconnect(() => {
    load()
      .then(() => setError(null))
      .catch((failure: unknown) => setError(messageOf(failure)));
  });

  // The stream drives the updates; a slow look every few seconds is the safety net while the
  // run is not finished (a reload that raced an event, say).
  const unfinished = run === null || run.status === "queued" || run.status === "running";
  useEffect(() => {
    if (!unfinished) return;
    const timer = setInterval(reload, 3_000);
    return () => clearInterval(timer);
  }, [unfinished, reload]);

  const running = workspaces.some((workspace) =>
    workspace.steps.some((step) => step.outcome === "running"),
  );
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => setNow(Date.now()), 1_000);
    return () => clearInterval(timer);
  }, [running]);

  const act = async (what: "cancel" | "retry" | "apply") => {
    setBusy(true);
    setError(null);
    const path = {
      cancel: ServerPath.batchRunCancel,
      retry: ServerPath.batchRunRetry,
      apply: ServerPath.batchRunApply,
    }[what];
    try {
      setRun(await api<BatchRun>("POST", serverPath(path, { batch_run_id: runId })));
      if (what === "apply") setTab("changesets");
      reload();
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(false);
    }
  };

  if (!run) {
    return (
      <main>
        <LoadState error={error} loading />
      </main>
    );
  }

  const finished = run.status !== "queued" && run.status !== "running";
  const failedWorkspaces = workspaces.filter((workspace) =>
    ["failed", "timed_out", "cancelled"].includes(workspace.state),
  ).length;
  const canApply =
    run.status === "completed" &&
    changesets.length > 0 &&
    changesets.some((changeset) => changeset.apply_operation === null);

  return (
    <main>
      <nav className="breadcrumb" aria-label="Breadcrumb">
        <Link href="/batches">Batch changes</Link> / {run.name}
      </nav>
      <header className="screen-header">
        <h1>{run.name}</h1>
        <span className="badge">{run.action}</span>
        <span className="badge" data-status={run.status} data-testid="run-status">
          {run.status}
        </span>
        <span className="muted" aria-live="polite">
          {streamState === "live" ? "live" : streamState}
        </span>
      </header>
      <StatsBar stats={run.stats} />
      {run.error && (
        <p className="error" role="alert">
          {run.error}
        </p>
      )}
      {run.warnings.map((warning) => (
        <p key={warning} className="warning">
          {warning}
        </p>
      ))}
      <div className="actions">
        {!finished && (
          <button type="button" className="danger" disabled={busy} onClick={() => act("cancel")}>
            Cancel run
          </button>
        )}
        {finished && failedWorkspaces > 0 && (
          <button type="button" disabled={busy} onClick={() => act("retry")}>
            Retry all failed ({failedWorkspaces})
          </button>
        )}
        {canApply && (
          <button type="button" className="primary" disabled={busy} onClick={() => act("apply")}>
            Apply changesets
          </button>
        )}
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div role="tablist" aria-label="Run" className="tabs">
        <button
          type="button"
          role="tab"
          id="run-tab-workspaces"
          aria-selected={tab === "workspaces"}
          aria-controls="run-panel"
          onClick={() => setTab("workspaces")}
        >
          Workspaces ({workspaces.length})
        </button>
        <button
          type="button"
          role="tab"
          id="run-tab-changesets"
          aria-selected={tab === "changesets"}
          aria-controls="run-panel"
          onClick={() => setTab("changesets")}
        >
          Changesets ({changesets.length})
        </button>
      </div>
      <div role="tabpanel" id="run-panel" aria-labelledby={`run-tab-${tab}`}>
        {tab === "workspaces" && (
          <ul className="workspace-list">
            {workspaces.map((workspace) => (
              <WorkspaceCard
                key={workspace.id}
                workspace={workspace}
                timeline={timelines.get(workspaceKey(workspace)) ?? []}
                liveLogs={liveLogs}
                now={now}
                onChanged={reload}
              />
            ))}
          </ul>
        )}
        {tab === "changesets" && (
          <>
            {changesets.some((changeset) => changeset.tracked || changeset.external_id) && (
              <p>
                <Link href={`/batches/changes/${encodeURIComponent(run.name)}`}>
                  Open the batch change {run.name}
                </Link>{" "}
                to follow, comment on or close its pull requests.
              </p>
            )}
            {changesets.length === 0 ? (
              <p className="muted">No changesets yet.</p>
            ) : (
              <ul className="changeset-list">
                {changesets.map((changeset) => (
                  <ChangesetCard key={changeset.id} changeset={changeset} />
                ))}
              </ul>
            )}
            {dropped.length > 0 && (
              <section aria-labelledby="dropped-heading">
                <h2 id="dropped-heading">No longer produced</h2>
                <ul className="changeset-list">
                  {dropped.map((changeset) => (
                    <ChangesetCard key={changeset.id} changeset={changeset} />
                  ))}
                </ul>
              </section>
            )}
          </>
        )}
      </div>
    </main>
  );
}
