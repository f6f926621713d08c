import type {
  BatchWorkspace,
  BatchWorkspaceState,
  BatchWorkspaceStep,
  StoredBatchChangeset,
} from "@deckhand/wire";
import { Fragment, useMemo, useState } from "react";
import { Link, useLocation } from "wouter";
import { messageOf, server } from "../api.ts";
import { formatDuration, StepDetail, stepElapsed } from "./step-detail.tsx";

/** Workspaces are told apart in events by repository, branch and path. */
export function workspaceKey(workspace: {
  repository: string;
  branch: string;
  path: string;
}): string {
  return `${workspace.repository}\u0000${workspace.branch}\u0000${workspace.path}`;
}

export interface TimelineEntry {
  id: number;
  at: string;
  text: string;
}

export type LiveLogs = ReadonlyMap<string, { stdout: string; stderr: string }>;

const FAILED: readonly BatchWorkspaceState[] = ["failed", "timed_out", "cancelled"];
const FINISHED: readonly BatchWorkspaceState[] = [...FAILED, "completed", "skipped"];

/** The order rows take: what needs a person first (failed), then what moves, then the rest. */
const STATE_ORDER: Record<BatchWorkspaceState, number> = {
  failed: 0,
  timed_out: 1,
  cancelled: 2,
  running: 3,
  pending: 4,
  completed: 5,
  skipped: 6,
};

type Filter = "all" | "failed" | "running" | "pending" | "completed";
const FILTERS: { id: Filter; label: string; matches: (state: BatchWorkspaceState) => boolean }[] = [
  { id: "all", label: "All", matches: () => true },
  { id: "failed", label: "Failed", matches: (state) => FAILED.includes(state) },
  { id: "running", label: "Running", matches: (state) => state === "running" },
  { id: "pending", label: "Pending", matches: (state) => state === "pending" },
  {
    id: "completed",
    label: "Completed",
    matches: (state) => state === "completed" || state === "skipped",
  },
];

export function workspaceTitle(workspace: Pick<BatchWorkspace, "repository" | "path">): string {
  return `${workspace.repository}${workspace.path ? `/${workspace.path}` : ""}`;
}

/** "Step 0 · npm test": a step by its number (as the API numbers them) and what it runs. */
export function stepName(step: Pick<BatchWorkspaceStep, "step_index" | "label">): string {
  return step.label ? `Step ${step.step_index} · ${step.label}` : `Step ${step.step_index}`;
}

/** The step a workspace is at: the running one, else the one that failed, else the last. */
function currentStep(workspace: BatchWorkspace): BatchWorkspaceStep | undefined {
  return (
    workspace.steps.find((step) => step.outcome === "running") ??
    workspace.steps.find((step) => step.outcome === "failed") ??
    workspace.steps.at(-1)
  );
}

function workspaceDuration(workspace: BatchWorkspace, now: number): number {
  return workspace.steps.reduce((total, step) => total + stepElapsed(step, now), 0);
}

function ChangesetCell({ changeset }: { changeset: StoredBatchChangeset | undefined }) {
  if (!changeset) return <span className="muted">—</span>;
  return (
    <span>
      <span className="diff-stats-added">+{changeset.stats.insertions}</span>{" "}
      <span className="diff-stats-deleted">−{changeset.stats.deletions}</span>{" "}
      <span className="muted">
        in {changeset.stats.files} {changeset.stats.files === 1 ? "file" : "files"}
      </span>{" "}
      <span className="badge" data-status={changeset.state}>
        {changeset.apply_operation ? changeset.apply_operation : changeset.state}
      </span>
    </span>
  );
}

/** A workspace's steps (each with its detail on demand), its error at the step that failed, its timeline. */
function WorkspaceDetail({
  workspace,
  timeline,
  liveLogs,
  now,
}: {
  workspace: BatchWorkspace;
  timeline: TimelineEntry[];
  liveLogs: LiveLogs;
  now: number;
}) {
  const [open, setOpen] = useState<number | null>(null);
  const title = workspaceTitle(workspace);
  const failedStep = workspace.steps.find((step) => step.outcome === "failed")?.step_index;
  return (
    <div className="workspace-detail">
      <p className="muted">
        {workspace.branch} · <code>{workspace.revision.slice(0, 10)}</code>
        {workspace.attempts > 1 ? ` · attempt ${workspace.attempts}` : ""}
        {workspace.executor ? ` · on ${workspace.executor}` : ""}
      </p>
      {workspace.takeover_session_id && (
        <p>
          Taken over: <Link href={`/sessions/${workspace.takeover_session_id}`}>open session</Link>
        </p>
      )}
      <ol className="steps" aria-label={`Steps of ${title}`}>
        {workspace.steps.map((step) => (
          <li key={step.step_index} data-outcome={step.outcome}>
            <div className="step-row">
              <span className="step-name">{stepName(step)}</span>
              <span className="badge" data-status={step.outcome}>
                {step.outcome}
              </span>
              <span className="muted">
                {step.runtime ?? "—"}
                {step.image ? ` · ${step.image}` : ""}
                {step.shell ? ` · ${step.shell}` : ""}
                {step.sandbox ? ` · sandbox ${step.sandbox}` : ""}
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
            {/* The failure goes with the step that failed, whatever number its text gives. */}
            {step.step_index === failedStep && workspace.error && (
              <pre className="output error-output">{workspace.error}</pre>
            )}
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
      {failedStep === undefined && workspace.error && (
        <pre className="output error-output">{workspace.error}</pre>
      )}
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
    </div>
  );
}

function WorkspaceActions({
  workspace,
  onChanged,
}: {
  workspace: BatchWorkspace;
  onChanged: () => void;
}) {
  const [, navigate] = useLocation();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const title = workspaceTitle(workspace);
  const canRetry = FAILED.includes(workspace.state);
  const canTakeOver = FINISHED.includes(workspace.state);
  const act = async (what: "retry" | "takeover") => {
    setBusy(true);
    setError(null);
    try {
      if (what === "retry") {
        await server.retryBatchWorkspace({ params: { workspace_id: workspace.id } });
        onChanged();
      } else {
        const answer = await server.takeOverBatchWorkspace({
          params: { workspace_id: workspace.id },
        });
        navigate(`/sessions/${answer.session_id}`);
      }
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="row-actions">
      {canRetry && (
        <button type="button" disabled={busy} onClick={() => act("retry")}>
          Retry<span className="visually-hidden"> {title}</span>
        </button>
      )}
      {canTakeOver && (
        <button type="button" disabled={busy} onClick={() => act("takeover")}>
          Take over<span className="visually-hidden"> {title}</span>
        </button>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/**
 * A run's workspaces as a dense table, as Sourcegraph lists them: repository, state, the step
 * it is at (by what it runs), its time and its changeset, failed ones first, filtered by state.
 * A row opens to its steps; Retry and Take over show only where they apply.
 */
export function WorkspaceTable({
  workspaces,
  changesets,
  timelines,
  liveLogs,
  now,
  onChanged,
}: {
  workspaces: BatchWorkspace[];
  changesets: StoredBatchChangeset[];
  timelines: ReadonlyMap<string, TimelineEntry[]>;
  liveLogs: LiveLogs;
  now: number;
  onChanged: () => void;
}) {
  const [filter, setFilter] = useState<Filter>("all");
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set());
  const changesetOf = useMemo(
    () => new Map(changesets.map((changeset) => [changeset.workspace_id, changeset])),
    [changesets],
  );
  const counts = useMemo(
    () =>
      new Map(
        FILTERS.map((entry) => [
          entry.id,
          workspaces.filter((workspace) => entry.matches(workspace.state)).length,
        ]),
      ),
    [workspaces],
  );
  const matcher = FILTERS.find((entry) => entry.id === filter)!;
  const rows = workspaces
    .filter((workspace) => matcher.matches(workspace.state))
    .sort((left, right) => STATE_ORDER[left.state] - STATE_ORDER[right.state]);
  const toggle = (id: string) => {
    const next = new Set(expanded);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setExpanded(next);
  };
  return (
    <div className="workspace-table">
      <fieldset className="segmented state-filter">
        <legend>Show workspaces</legend>
        {FILTERS.map((entry) => (
          <label key={entry.id}>
            <input
              type="radio"
              name="workspace-filter"
              checked={filter === entry.id}
              onChange={() => setFilter(entry.id)}
            />
            {entry.label} ({counts.get(entry.id) ?? 0})
          </label>
        ))}
      </fieldset>
      {rows.length === 0 ? (
        <p className="muted">No workspace is {matcher.label.toLowerCase()}.</p>
      ) : (
        <div className="table-scroll">
          <table className="dense-table" aria-label="Workspaces">
            <thead>
              <tr>
                <th scope="col">Repository</th>
                <th scope="col">State</th>
                <th scope="col">Step</th>
                <th scope="col">Time</th>
                <th scope="col">Changeset</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((workspace) => {
                const title = workspaceTitle(workspace);
                const step = currentStep(workspace);
                const open = expanded.has(workspace.id);
                const detailId = `workspace-detail-${workspace.id}`;
                return (
                  <Fragment key={workspace.id}>
                    <tr aria-label={`Workspace ${title}`} data-state={workspace.state}>
                      <th scope="row">
                        <button
                          type="button"
                          className="row-toggle"
                          aria-expanded={open}
                          aria-controls={detailId}
                          onClick={() => toggle(workspace.id)}
                        >
                          <span aria-hidden="true">{open ? "▾" : "▸"}</span>{" "}
                          <span className="path">{title}</span>
                        </button>
                      </th>
                      <td>
                        <span className="badge" data-status={workspace.state}>
                          {workspace.state.replace("_", " ")}
                        </span>
                      </td>
                      <td className="step-cell">
                        {step ? (
                          <>
                            <code title={step.label}>{stepName(step)}</code>{" "}
                            <span className="muted">({step.outcome})</span>
                          </>
                        ) : (
                          <span className="muted">—</span>
                        )}
                      </td>
                      <td className="timer">
                        {workspace.steps.length > 0
                          ? formatDuration(workspaceDuration(workspace, now))
                          : "—"}
                      </td>
                      <td>
                        <ChangesetCell changeset={changesetOf.get(workspace.id)} />
                      </td>
                      <td>
                        <WorkspaceActions workspace={workspace} onChanged={onChanged} />
                      </td>
                    </tr>
                    {open && (
                      <tr id={detailId} className="detail-row">
                        <td colSpan={6}>
                          <WorkspaceDetail
                            workspace={workspace}
                            timeline={timelines.get(workspaceKey(workspace)) ?? []}
                            liveLogs={liveLogs}
                            now={now}
                          />
                        </td>
                      </tr>
                    )}
                  </Fragment>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
