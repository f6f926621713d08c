import type {
  BatchRun,
  BatchRunEvent,
  BatchWorkspace,
  StoredBatchChangeset,
  StoredBatchRunEvent,
} from "@deckhand/wire";
import { useCallback, useEffect, useRef, useState } from "react";
import { Link } from "wouter";
import { messageOf, server } from "../api.ts";
import { BatchRunStream } from "../batches/batch-run-stream.ts";
import { ChangesetCard } from "../batches/changeset-card.tsx";
import { StatsBar } from "../batches/stats-bar.tsx";
import { formatDuration } from "../batches/step-detail.tsx";
import { type TimelineEntry, WorkspaceTable, workspaceKey } from "../batches/workspace-table.tsx";
import { RunSpend } from "../budgets/run-spend.tsx";
import { useDocumentTitle } from "../components/document-title.ts";
import { LoadState } from "../components/load-state.tsx";
import { onTabListKeyDown } from "../components/tab-keys.ts";
import { useReloadOnReconnect } from "../connection.ts";
import type { StreamState } from "../session/session-stream.ts";

/** One line of a workspace's timeline, or null for events shown elsewhere (output). */
function describe(event: BatchRunEvent): string | null {
  switch (event.type) {
    case "workspace_started":
      return "started";
    case "step_started":
      return `step ${event.step_index} started (${event.runtime}${event.image ? `, ${event.image}` : ""}${event.shell ? `, ${event.shell}` : ""}${event.sandbox ? `, sandbox ${event.sandbox}` : ""})`;
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

type RunTab = "workspaces" | "changesets";

/**
 * A run: its stats and actions, its workspaces as a dense table live from the run stream (failed
 * first, filtered by state, rows opening to their steps), and its changesets.
 */
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
    const params = { batch_run_id: runId };
    const [loadedRun, loadedWorkspaces, loadedChangesets] = await Promise.all([
      server.getBatchRun({ params }),
      server.listBatchRunWorkspaces({ params }),
      server.listBatchRunChangesets({ params }),
    ]);
    if (generation !== loadGeneration.current) return;
    setRun(loadedRun);
    setWorkspaces(loadedWorkspaces.workspaces);
    setChangesets(loadedChangesets.changesets);
    setDropped(loadedChangesets.dropped);
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

  const act = async (what: "cancel" | "retry" | "apply" | "apply-succeeded") => {
    setBusy(true);
    setError(null);
    const params = { batch_run_id: runId };
    const send = {
      cancel: () => server.cancelBatchRun({ params }),
      retry: () => server.retryBatchRun({ params }),
      apply: () => server.applyBatchRun({ params }),
      // Apply what succeeded: the changesets of the workspaces that did, the others left out.
      "apply-succeeded": () => server.applyBatchRun({ params, query: { skip_errors: true } }),
    }[what];
    try {
      setRun(await send());
      if (what === "apply" || what === "apply-succeeded") {
        setTab("changesets");
        // The focus follows to what apply changes: the changesets tab.
        requestAnimationFrame(() => document.getElementById("run-tab-changesets")?.focus());
      }
      reload();
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(false);
    }
  };

  useDocumentTitle(run ? `${run.name} (${run.status})` : "Batch run");

  if (!run) {
    return (
      <main className="wide">
        <LoadState error={error} loading />
      </main>
    );
  }

  const finished = run.status !== "queued" && run.status !== "running";
  const failedWorkspaces = workspaces.filter((workspace) =>
    ["failed", "timed_out", "cancelled"].includes(workspace.state),
  ).length;
  const unapplied = changesets.filter((changeset) => changeset.apply_operation === null).length;
  const canApply = run.status === "completed" && unapplied > 0;
  // A run whose other workspaces failed still has the changesets of those that succeeded.
  const canApplySucceeded =
    (run.status === "failed" || run.status === "cancelled") && unapplied > 0;

  return (
    <main className="wide">
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
      <RunSpend runId={runId} live={!finished} />
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
        {canApplySucceeded && (
          <button
            type="button"
            className="primary"
            disabled={busy}
            onClick={() => act("apply-succeeded")}
          >
            Apply the {unapplied} that succeeded
          </button>
        )}
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div role="tablist" aria-label="Run" className="tabs" onKeyDown={onTabListKeyDown}>
        <button
          type="button"
          role="tab"
          id="run-tab-workspaces"
          aria-selected={tab === "workspaces"}
          tabIndex={tab === "workspaces" ? 0 : -1}
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
          tabIndex={tab === "changesets" ? 0 : -1}
          aria-controls="run-panel"
          onClick={() => setTab("changesets")}
        >
          Changesets ({changesets.length})
        </button>
      </div>
      <div role="tabpanel" id="run-panel" aria-labelledby={`run-tab-${tab}`}>
        {tab === "workspaces" && (
          <WorkspaceTable
            workspaces={workspaces}
            changesets={changesets}
            timelines={timelines}
            liveLogs={liveLogs}
            now={now}
            onChanged={reload}
          />
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
